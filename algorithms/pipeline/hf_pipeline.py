"""A vocabulary's whole pipeline, composed from its ``pipeline`` spec as HF composes it.

``Vocabulary.pipeline`` is plain JSON-able data shaped like a ``tokenizer.json``::

    {"normalizer": {...} | None, "pre_tokenizer": {...} | None, "decoder": {...} | None,
     "added_tokens": [{"content", "id", "special", "normalized", "lstrip", "rstrip", "single_word"}, ...],
     "model": {"type": "BPE", "unk_token", "fuse_unk", "byte_fallback", "ignore_merges",
               "continuing_subword_prefix", "end_of_word_suffix", "token_text": "byte_level" | "utf-8"}}

Anything that can write ``tokenizer.json``-shaped dicts can describe its pipeline this
way; the one bpebench key is ``model.token_text``, which says how the file's token
strings map onto the vocabulary's bytes (byte-level alphabet or UTF-8), and the one
bpebench component is the ``SentencePiece`` normalizer (see ``normalizers``).

:class:`HFPipeline` runs it, as ``tokenizers.Tokenizer.encode(text, add_special_tokens=False)``
does: added tokens carved (the ones with ``normalized: false`` from the raw text) ->
normalizer on each stretch between them (then the ``normalized: true`` tokens carved)
-> pre-tokenizer -> the BPE model on each piece. :func:`plain_form` says when the
pipeline is exactly what the Tokenizer's fast path does (a tiktoken-style pattern, NFC
or nothing, special tokens as plain literals), so such files keep the fused pipeline.
Otherwise each normalized stretch goes to a fused stage that splits as the pre-tokenizer
(:func:`split_list`, :func:`character_split`), or, when none does, the pre-tokenizer's pieces of
a text go to the compiled BPE stage in one call (``piece_stage``; a byte-level model's end-of-word
suffix as a byte, ``formats.word_suffix``); a model that merges symbols with a continuing-subword
prefix, or a character-level one with a suffix, merges in Python (``bpe_model``).

Complexity: linear in the text plus the encoder's cost. Exact.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from bpebench.errors import VocabularyError
from ..formats.patterns import PATTERNS
from ..formats.vocabulary import Vocabulary
from .added_tokens import AddedToken, AddedVocabulary
from .bpe_model import BPEModel
from .decoders import build_decoder
from .normalizers import build_normalizer, describe_spec
from .pretokenizers import build_pre_tokenizer
from .split_lists import leaves as _leaves, split_list


def plain_form(spec: dict | None, *, all_bytes: bool = True) -> tuple[str | None, str] | None:
    """``(pattern, normalizer name)`` when the pipeline is exactly the Tokenizer's plain path (a
    split + byte-level BPE, NFC or no normalizer, only special tokens matched as literals, no model
    options that change ids), else None. The pattern is a name for a known covering pattern, else
    the split's regex as :func:`.pattern_program.with_gaps` writes it (the text between matches kept
    as pieces, as ``Isolated`` does), when the program compiler takes that regex."""
    if spec is None:
        return None
    model = spec.get("model") or {}
    if model.get("token_text", "byte_level") != "byte_level" or model.get("continuing_subword_prefix") \
            or model.get("end_of_word_suffix") or not all_bytes:
        return None
    normalizers = [n.get("type") for n in _leaves(spec.get("normalizer"), "normalizers")]
    if normalizers not in ([], ["NFC"]):
        return None
    parts = _leaves(spec.get("pre_tokenizer"), "pretokenizers")
    pattern = None
    if len(parts) == 1 and parts[0].get("type") == "ByteLevel":
        if parts[0].get("add_prefix_space", True) or not parts[0].get("use_regex", True):
            return None
        pattern = "gpt2"
    elif len(parts) == 2 and [p.get("type") for p in parts] == ["Split", "ByteLevel"]:
        split, byte_level = parts
        regex_text = (split.get("pattern") or {}).get("Regex")
        if (split.get("behavior", "Isolated") != "Isolated" or split.get("invert", False)
                or byte_level.get("add_prefix_space", True) or byte_level.get("use_regex", True)):
            return None
        pattern = next((name for name, known in PATTERNS.items() if known == regex_text), None)
        if pattern is None and isinstance(regex_text, str):  # any other regex the compiled split can take
            from .pattern_program import with_gaps
            from .text_pieces import onig_regex

            try:
                pattern = with_gaps(onig_regex(regex_text))
            except ValueError:  # a class Oniguruma reads that ``regex`` cannot: the Split refuses it
                return None
    if pattern is None:
        return None
    for entry in spec.get("added_tokens") or []:
        if not entry.get("special") or entry.get("lstrip") or entry.get("rstrip") or entry.get("single_word"):
            return None
        if entry.get("normalized") and normalizers:
            return None
    return pattern, "nfc" if normalizers else "none"


def prefix_space(spec: dict | None) -> bool:
    """Whether the pre-tokenizer is one ``ByteLevel`` with ``add_prefix_space``: a space before each
    stretch between added tokens that does not start with one (the pieces it sees are the stretches)."""
    parts = _leaves((spec or {}).get("pre_tokenizer"), "pretokenizers")
    return len(parts) == 1 and parts[0].get("type") == "ByteLevel" and bool(parts[0].get("add_prefix_space", True))


def character_split(vocabulary) -> tuple | None:
    """The fused stage's split (``fast_pipeline.unsupported_reason``) for a character-level BPE
    model with no pre-tokenizer (SentencePiece ``.model`` files and the HF files made from them:
    Llama-2's, Mistral's): each stretch cut before each run of ``▁`` where the vocabulary lets BPE
    run piece by piece (:func:`.marker_split.cuts_before_marker_runs`), else whole. None for any other
    pipeline. The component pipeline carves and normalizes as before."""
    from .marker_split import SPACE_MARKER, cuts_before_marker_runs

    spec = vocabulary.pipeline
    if spec is None:
        return None
    model = spec.get("model") or {}
    if model.get("token_text", "byte_level") != "utf-8" or model.get("continuing_subword_prefix") \
            or model.get("end_of_word_suffix") or model.get("ignore_merges"):
        return None
    marker = SPACE_MARKER
    pre_tokenizer = spec.get("pre_tokenizer")
    if pre_tokenizer is not None:
        metaspace = _metaspace(pre_tokenizer, spec.get("normalizer"))
        if metaspace is None:
            return None
        if metaspace.split:  # HF cuts before every marker
            return ("marker", metaspace.replacement, True)
        marker = metaspace.replacement
    return ("marker", marker, False) if cuts_before_marker_runs(vocabulary, marker) else ("whole",)


def _metaspace(spec: dict, normalizer: dict | None):
    """The ``Metaspace`` pre-tokenizer of ``spec`` when the fused stage can apply it to each stretch
    (:meth:`HFPipeline.segments`); its ``first`` scheme only without a normalizer, whose offsets
    would decide which stretch is first."""
    from .pretokenizers import Metaspace

    if spec.get("type") != "Metaspace":
        return None
    metaspace = Metaspace(spec, "pre_tokenizer")
    return None if metaspace.scheme == "first" and normalizer is not None else metaspace


def validate_spec(spec: dict, where: str) -> None:
    """Build every component once, so that an unsupported one is refused when the file loads."""
    normalizer = build_normalizer(spec.get("normalizer"), where)
    build_pre_tokenizer(spec.get("pre_tokenizer"), where)
    build_decoder(spec.get("decoder"), where)
    for entry in spec.get("added_tokens") or []:
        token = AddedToken.from_spec(entry, where)
        if normalizer is not None and token.normalized:
            normalizer.normalize_added_token(token.content)


def control_token_ids(vocabulary: Vocabulary) -> dict[str, int]:
    """Tokens no text spells, by name: the special tokens, and for a SentencePiece pipeline its
    control pieces (``<s>``, ``</s>``) and unknown piece, which sit among the ordinary ids."""
    found = dict(vocabulary.special_tokens)
    decoder = (vocabulary.pipeline or {}).get("decoder") or {}
    names = [leaf.get("unk_token") for leaf in _leaves(decoder, "decoders") if leaf.get("type") == "SentencePiece"]
    names += [c for leaf in _leaves(decoder, "decoders") if leaf.get("type") == "SentencePiece"
              for c in leaf.get("control_tokens") or ()]
    wanted = {name.encode("utf-8"): name for name in names if name and name not in found}
    if wanted:
        for i, token in enumerate(vocabulary.tokens):
            name = wanted.pop(token, None)
            if name is not None:
                found[name] = i
                if not wanted:
                    break
    return found


def space_symbol(vocabulary: Vocabulary) -> bytes | None:
    """The bytes that stand for a space inside tokens (SentencePiece's and Metaspace's ``▁``), or
    None when tokens hold real spaces."""
    if vocabulary.normalizer == "sentencepiece":
        return "\u2581".encode()
    decoder = (vocabulary.pipeline or {}).get("decoder") or {}
    for leaf in _leaves(decoder, "decoders"):
        if leaf.get("type") == "SentencePiece":
            return "\u2581".encode()
        if leaf.get("type") == "Metaspace":
            return str(leaf.get("replacement", "\u2581")).encode()
    return None


def describe_pipeline(vocabulary: Vocabulary) -> dict[str, str]:
    """The components a vocabulary uses, one line each (``bpebench vocab`` and the report)."""
    spec = vocabulary.pipeline
    if spec is None:
        return {
            "normalizer": vocabulary.normalizer,
            "pre_tokenizer": f"regex {vocabulary.pattern!r} (tiktoken semantics: unmatched text dropped)"
            if vocabulary.pattern else "none (the whole text is one piece)",
            "model": f"BPE over bytes, rule={vocabulary.rule}",
            "added_tokens": f"{len(vocabulary.special_tokens)} special (carved when allowed)",
            "decoder": "token bytes concatenated",
        }
    model = spec.get("model") or {}
    options = [f"{k}={model[k]!r}" for k in ("unk_token", "fuse_unk", "byte_fallback", "ignore_merges",
                                              "continuing_subword_prefix", "end_of_word_suffix") if model.get(k)]
    added = spec.get("added_tokens") or []
    flags: dict[str, int] = {}
    for entry in added:
        key = AddedToken.from_spec(entry, "added").flags()
        flags[key] = flags.get(key, 0) + 1
    plain = vocabulary.normalizer != "pipeline"
    path = f"plain (pattern {vocabulary.pattern}, fused when the encoder allows)" if plain else "component pipeline"
    if not plain and split_list(spec, all_bytes=bool((vocabulary.byte_token >= 0).all())) is not None:
        path += " (each stretch between added tokens split by its compiled Split steps and encoded fused"
        path += ", a space put before each that does not start with one)" if prefix_space(spec) else ")"
    elif not plain and (cut := character_split(vocabulary)) is not None:
        where = ("cut before each run of " + repr(cut[1]) if not cut[2] else "cut before each " + repr(cut[1])) \
            if cut[0] == "marker" else "whole"
        path += f" (each stretch between added tokens {where} and encoded fused)"
    elif not plain and vocabulary.llama_cpp is None:
        from ..formats.word_suffix import word_end_vocabulary
        from .class_split import class_split
        from .fast_pipeline import unsupported_reason

        byte_level = model.get("token_text", "byte_level") == "byte_level"
        staged = None if model.get("continuing_subword_prefix") else \
            word_end_vocabulary(vocabulary) if model.get("end_of_word_suffix") else vocabulary
        at_once = ", split over each stretch at once," if class_split(
            build_pre_tokenizer(spec.get("pre_tokenizer"), "pre_tokenizer"), byte_level_model=byte_level) else ""
        if staged is not None and unsupported_reason(staged, split=("whole",)) is None:
            path += f" (its pre-tokenizer's pieces of a text{at_once} encoded by the compiled BPE stage in one call"
            path += ", the end-of-word suffix as the byte 0xFF)" if staged is not vocabulary else ")"
        elif not byte_level and (model.get("continuing_subword_prefix") or model.get("end_of_word_suffix")):
            path += " (the model merges its symbols in Python piece by piece, keeping the last 10,000 pieces' ids"
            path += "; its pre-tokenizer split over each stretch at once)" if at_once else ")"
    return {
        "normalizer": describe_spec(spec.get("normalizer")),
        "pre_tokenizer": describe_spec(spec.get("pre_tokenizer")),
        "model": f"BPE ({model.get('token_text', 'byte_level')} tokens" + (", " + ", ".join(options) if options else "")
        + ")",
        "added_tokens": f"{len(added)}" + (" (" + "; ".join(f"{n} {k}" for k, n in flags.items()) + ")" if added else ""),
        "decoder": describe_spec(spec.get("decoder")),
        "path": path,
    }


class HFPipeline:
    """Encode and decode with a vocabulary's ``pipeline`` spec and an encoder for the BPE step."""

    def __init__(self, vocabulary: Vocabulary, encoder, fused=None, piece_stage=None, numpy_split: bool = False) -> None:
        """``fused``: a ``FusedPipeline`` that splits as the pre-tokenizer and encodes as the model
        (:func:`split_list`): each stretch between added tokens, once normalized, goes to it whole.
        ``piece_stage``: without one, a ``FusedPipeline`` that encodes given pieces as the model
        (``("whole",)``): the pre-tokenizer's pieces of a text go to it in one call, instead of
        one encoder call each. ``numpy_split``: a pre-tokenizer of class steps may be split in numpy
        (``class_split``) for the piece stage or, for a character-level model that merges symbols in
        Python, for its pieces."""
        spec = vocabulary.pipeline
        if spec is None:
            raise ValueError("vocabulary has no pipeline")
        where = vocabulary.source or vocabulary.name
        self.vocabulary = vocabulary
        self.normalizer = build_normalizer(spec.get("normalizer"), where)
        self.pre_tokenizer = build_pre_tokenizer(spec.get("pre_tokenizer"), where)
        self.decoder = build_decoder(spec.get("decoder"), where)
        self.added = AddedVocabulary([AddedToken.from_spec(e, where) for e in spec.get("added_tokens") or []],
                                     self.normalizer)
        self.model = BPEModel(vocabulary, spec.get("model") or {}, encoder)
        self.track_offsets = bool(self.pre_tokenizer is not None and self.pre_tokenizer.reads_offsets)
        self.fused = fused
        self.piece_stage = piece_stage if fused is None else None
        #: after each piece's bytes for the piece stage: the end-of-word suffix as its byte
        #: (``formats.word_suffix``), when the model has one
        self._piece_end = b"\xff" if (spec.get("model") or {}).get("end_of_word_suffix") else b""
        #: the pre-tokenizer's steps when the last is ``ByteLevel`` (and none before it) over a
        #: byte-level model: the piece stage takes the UTF-8 of that step's pieces, which is what the
        #: byte-level characters would spell (no mapping there and back)
        self._text_steps = None
        if self.piece_stage is not None and self.model.token_text == "byte_level":
            from .pretokenizers import ByteLevel, SequencePreTokenizer

            steps = self.pre_tokenizer.parts if isinstance(self.pre_tokenizer, SequencePreTokenizer) \
                else [self.pre_tokenizer]
            if steps and isinstance(steps[-1], ByteLevel) and not any(isinstance(p, ByteLevel) for p in steps[:-1]):
                self._text_steps = steps
        #: the pre-tokenizer split in numpy when every step is a class step (``class_split``), made at
        #: the first encode (None: not yet asked; False: it has some other step)
        self._class_split = None if numpy_split and fused is None and (
            self.piece_stage is not None or (self.model.symbol_level and self.model.token_text != "byte_level")) \
            else False
        #: a lone ``ByteLevel`` with ``add_prefix_space``: its space written before each stretch for the
        #: fused stage
        self._prefix_space = fused is not None and prefix_space(spec)
        #: a ``Metaspace`` pre-tokenizer's spaces and prefix, written into each stretch for the fused
        #: stage (which then cuts before the markers)
        self._metaspace = None if fused is None or spec.get("pre_tokenizer") is None \
            else _metaspace(spec["pre_tokenizer"], spec.get("normalizer"))

    @property
    def added_tokens(self) -> list[AddedToken]:
        return self.added.tokens

    def pieces(self, text: str, carve_special: Callable[[AddedToken], bool]):
        """The pre-tokenized pieces (carved added tokens have ``token`` set)."""
        pieces = self.added.extract_and_normalize(text, carve_special=carve_special, track_offsets=self.track_offsets)
        if self.pre_tokenizer is not None:
            pieces = self.pre_tokenizer.pre_tokenize(pieces)
        return pieces

    def encode(self, text: str, carve_special: Callable[[AddedToken], bool]) -> list[int]:
        out: list[int] = []
        if self.fused is not None:
            encode = self.fused.encode_list
            segments = self.segments(text, carve_special)
            if len(segments) == 1 and not isinstance(segments[0], int):
                return encode(segments[0].encode("utf-8"))  # the common case: no copy of its ids
            for segment in segments:
                if isinstance(segment, int):
                    out.append(segment)
                else:
                    out.extend(encode(segment.encode("utf-8")))
            return out
        if self._class_split is not False:
            ids = self._encode_class_split(text, carve_special)
            if ids is not None:
                return ids
        if self._text_steps is not None:
            pieces = self.added.extract_and_normalize(text, carve_special=carve_special,
                                                      track_offsets=self.track_offsets)
            for step in self._text_steps[:-1]:
                pieces = step.pre_tokenize(pieces)
            return self._encode_pieces(self._text_steps[-1].pre_tokenize_text(pieces), utf8=True)
        if self.piece_stage is not None:
            return self._encode_pieces(self.pieces(text, carve_special))
        tokenize = self.model.tokenize  # (a model that merges symbols in Python, one piece at a time)
        for piece in self.pieces(text, carve_special):
            if piece.token is not None:
                out.append(piece.token)
            else:
                out.extend(tokenize(piece.text))
        return out

    def _encode_class_split(self, text: str, carve_special: Callable[[AddedToken], bool]) -> list[int] | None:
        """The ids of ``text`` with the pre-tokenizer's class steps split in numpy (``class_split``): each
        run of stretches between carved tokens one call of the piece stage (or, with none, each piece
        through the model). None when the pre-tokenizer has another step, or the text a lone surrogate
        (the Python pre-tokenizers then split it)."""
        import numpy as np

        split = self._class_split
        if split is None:
            from .class_split import class_split

            split = self._class_split = class_split(
                self.pre_tokenizer, byte_level_model=self.model.token_text == "byte_level",
                piece_end=self._piece_end if self.piece_stage is not None else b"") or False
            if split is False:
                return None
        out: list[int] = []
        datas: list[np.ndarray] = []
        ends: list[np.ndarray] = []
        size = 0
        stretches = self.added.extract_and_normalize(text, carve_special=carve_special, track_offsets=self.track_offsets)
        for piece in (*stretches, None):
            if piece is not None and piece.token is None:
                made = split.pieces(piece.text, piece.align, piece.start)
                if made is None:
                    return None
                if len(made[1]):
                    datas.append(made[0])
                    ends.append(made[1] + size)
                    size += len(made[0])
                continue
            if datas:
                encode_run = self._encode_run if self.piece_stage is not None else self._tokenize_run
                out.extend(encode_run(datas[0] if len(datas) == 1 else np.concatenate(datas),
                                      ends[0] if len(ends) == 1 else np.concatenate(ends)))
                datas, ends, size = [], [], 0
            if piece is not None:
                out.append(piece.token)
        return out

    def _encode_run(self, data, ends) -> list[int]:
        """The ids of pieces whose bytes are ``data`` (uint8) and which end at ``ends`` (int64), by the
        piece stage in one call; a model that fuses runs of unknown characters (``fuse_unk``) gets them
        as texts of a batch, so that no run is fused across two pieces, as HF's model never does."""
        import numpy as np

        stage = self.piece_stage
        if stage.unknown is not None and stage.unknown.fuse:
            bounds = np.zeros(len(ends) + 1, dtype=np.int64)
            bounds[1:] = ends
            return stage.encode_joined_batch(data.tobytes(), bounds)[0].tolist()
        return stage.encode_part_list((data, ends))

    def _tokenize_run(self, data, ends) -> list[int]:
        """:meth:`_encode_run` for a model that merges symbols in Python: each piece through it."""
        tokenize = self.model.tokenize
        raw = data.tobytes()
        out: list[int] = []
        start = 0
        for end in ends.tolist():
            out.extend(tokenize(raw[start:end].decode("utf-8")))
            start = end
        return out

    def _encode_pieces(self, pieces, utf8: bool = False) -> list[int]:
        """The ids of pre-tokenized ``pieces``: each run of them between carved tokens encoded by the
        piece stage in one call (BPE runs piece by piece, so the run's bytes and where its pieces end
        are all it needs; :meth:`_encode_run`). ``utf8``: the pieces are in the text's own characters
        (``_text_steps``), not in the model's."""
        import numpy as np

        out: list[int] = []
        to_bytes = (lambda text: text.encode("utf-8", "surrogatepass")) if utf8 else self.model._to_bytes  # noqa: E731
        if self._piece_end:
            end, raw = self._piece_end, to_bytes
            to_bytes = lambda text: raw(text) + end  # noqa: E731
        run: list[bytes] = []
        for piece in (*pieces, None):
            if piece is not None and piece.token is None:
                run.append(to_bytes(piece.text))
                continue
            if run:
                ends = np.cumsum(np.fromiter(map(len, run), dtype=np.int64, count=len(run)))
                out.extend(self._encode_run(np.frombuffer(b"".join(run), dtype=np.uint8), ends))
                run = []
            if piece is not None:
                out.append(piece.token)
        return out

    def encode_array(self, text: str, carve_special: Callable[[AddedToken], bool]):
        """:meth:`encode` as one ``uint32`` array, through the fused stage (which it needs)."""
        import numpy as np

        parts = [np.array([segment], dtype=np.uint32) if isinstance(segment, int)
                 else self.fused.encode_array(segment.encode("utf-8")) for segment in self.segments(text, carve_special)]
        if not parts:
            return np.zeros(0, dtype=np.uint32)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def segments(self, text: str, carve_special: Callable[[AddedToken], bool]) -> list[str | int]:
        """``text`` as the ids of the added tokens carved from it and the normalized stretches between
        them, in order (what the fused stage encodes: each stretch whole)."""
        if not self.added.may_carve(text):
            segments = [text] if text else []
        else:
            segments = [piece.token if piece.token is not None else piece.text
                        for piece in self.added.extract_and_normalize(text, carve_special=carve_special)
                        if piece.token is not None or piece.text]
        if self._prefix_space:
            segments = [s if isinstance(s, int) or s.startswith(" ") else " " + s for s in segments]
        metaspace = self._metaspace
        if metaspace is not None:
            # HF's "first" scheme prefixes the stretch at offset 0: the first, when nothing is carved before it
            marker = metaspace.replacement
            for k, segment in enumerate(segments):
                if not isinstance(segment, int):
                    segment = segment.replace(" ", marker)
                    segments[k] = marker + segment if metaspace.prefixes(segment, k == 0) else segment
        return segments

    def piece_bytes(self, text: str) -> list[bytes]:
        """What the encoder sees: the pieces' bytes (added tokens left out)."""
        return [self.model._to_bytes(p.text) for p in self.pieces(text, lambda t: True) if p.token is None]

    def token_strings(self, ids: Iterable[int], *, skip_special: bool = False) -> list[str]:
        texts = self.model.texts
        added = {t.id: t for t in self.added.tokens}
        out = []
        for i in ids:
            token = added.get(i)
            if token is not None:
                if not (skip_special and token.special):
                    out.append(token.content)
                continue
            if not 0 <= i < len(texts) or texts[i] is None:
                specials = self.vocabulary.special_ids
                if i in specials:
                    out.append(specials[i])
                    continue
                raise VocabularyError(f"token id {i} is out of range for {self.vocabulary.name}")
            out.append(texts[i])
        return out

    def decode(self, ids: Sequence[int], *, skip_special: bool = False) -> str:
        """HF ``Tokenizer.decode``: token strings through the decoder (joined by spaces without one)."""
        tokens = self.token_strings(ids, skip_special=skip_special)
        if self.decoder is None:
            return " ".join(tokens)
        return self.decoder.decode(tokens)
