"""Read SentencePiece ``.model`` files of BPE type and model them on bytes.

SentencePiece's BPE (``bpe_model.cc``) differs from tiktoken's in four ways, and each is
mapped onto the byte-level :class:`~bpebench.algorithms.formats.vocabulary.Vocabulary`:

1. **It starts from characters, not bytes.** Every single-character piece is a base
   unit, assembled from its bytes by helper merges that run before every real merge
   (``char_units``); the helpers are ``hidden`` ids after the real vocabulary.
2. **Priorities come from scores**, higher first, and a pair merges when its
   concatenation is a piece (the ``"ranks"`` rule). Pieces with equal scores get equal
   priorities, so BPE takes the leftmost of them, which is SentencePiece's tie rule
   (Llama/Mistral give all whitespace runs one score: a run grows from the left).
3. **Unknown characters** (no piece) never merge: runs of them become one ``<unk>``,
   or with byte fallback their ``<0xXX>`` pieces; byte pieces are never BPE's output.
   A model whose pieces contain a character that is not a piece itself is refused
   (SentencePiece would merge such unknown characters; that is not reproduced).
4. **Text is normalized first** by the model's own normalizer: the precompiled
   charsmap (``nmt_nfkc`` and friends, longest match), ``remove_extra_whitespaces``,
   the dummy prefix and ``▁`` for spaces; user-defined pieces are matched in the
   normalized text, left verbatim by the normalizer, and never merged; control pieces
   (``<s>``, ``</s>``) are never parsed out of text.

Points 3 and 4 are the vocabulary's ``pipeline`` (a ``SentencePiece`` normalizer and
decoder, the user-defined pieces as added tokens, the model's ``unk_token`` and
``byte_fallback``), run by ``bpebench.algorithms.pipeline.hf_pipeline``.

The protobuf is parsed here (a small reader for the few ModelProto fields needed), so
no ``protobuf`` dependency. Loading is linear in the model size; the encoding is exact
(ids equal ``SentencePieceProcessor.encode``). UNUSED pieces and
``treat_whitespace_as_suffix`` are refused with one line.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from bpebench.errors import VocabularyError
from .byte_alphabet import byte_piece_value
from .vocabulary import Vocabulary

SPM_SPACE = "\u2581"

# SentencePiece piece types (ModelProto.SentencePiece.Type), the same numbers GGUF uses.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclass(frozen=True)
class Piece:
    text: str
    score: float
    kind: int = NORMAL


@dataclass(frozen=True)
class SentencePieceModel:
    """The parts of a ModelProto that define the encoding."""

    pieces: list[Piece]
    model_type: int = 1
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    normalizer_name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


# ----------------------------------------------------------------------------- protobuf
class _ProtoError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _ProtoError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _ProtoError("varint longer than 10 bytes")


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of a protobuf message; value is an int or raw bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _ProtoError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise _ProtoError("truncated fixed-size field")
            value, pos = data[pos : pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise _ProtoError("truncated length-delimited field")
            value, pos = data[pos : pos + size], pos + size
        else:
            raise _ProtoError(f"unsupported wire type {wire}")
        yield number, wire, value


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise _ProtoError("expected a string field")
    return value.decode("utf-8")


def parse_model_proto(data: bytes) -> SentencePieceModel:
    """Decode the ModelProto fields bpebench needs (pieces, trainer and normalizer specs)."""
    pieces: list[Piece] = []
    trainer: dict[int, int | bytes] = {}
    normalizer: dict[int, int | bytes] = {}
    for number, wire, value in _fields(data):
        if number == 1 and wire == 2:
            text, score, kind = None, 0.0, NORMAL
            for n, w, v in _fields(value):  # type: ignore[arg-type]
                if n == 1 and w == 2:
                    text = _text(v)
                elif n == 2 and w == 5:
                    score = struct.unpack("<f", v)[0]  # type: ignore[arg-type]
                elif n == 3 and w == 0:
                    kind = int(v)  # type: ignore[arg-type]
            if text is None:
                raise _ProtoError(f"piece {len(pieces)} has no text")
            pieces.append(Piece(text, score, kind))
        elif number == 2 and wire == 2:
            trainer = {n: v for n, _, v in _fields(value)}  # type: ignore[arg-type]
        elif number == 3 and wire == 2:
            normalizer = {n: v for n, _, v in _fields(value)}  # type: ignore[arg-type]
    return SentencePieceModel(
        pieces=pieces,
        model_type=int(trainer.get(3, 1)),
        byte_fallback=bool(trainer.get(35, 0)),
        treat_whitespace_as_suffix=bool(trainer.get(24, 0)),
        normalizer_name=_text(normalizer.get(1, b"")),
        precompiled_charsmap=bytes(normalizer.get(2, b"")),  # type: ignore[arg-type]
        add_dummy_prefix=bool(normalizer.get(3, 1)),
        remove_extra_whitespaces=bool(normalizer.get(4, 1)),
        escape_whitespaces=bool(normalizer.get(5, 1)),
    )


def read_sentencepiece_model(path: str | Path) -> SentencePieceModel:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        model = parse_model_proto(data)
    except (_ProtoError, UnicodeDecodeError, struct.error) as exc:
        raise VocabularyError(f"{path}: not a SentencePiece model (bad protobuf: {exc})") from None
    if not model.pieces:
        raise VocabularyError(f"{path}: not a SentencePiece model (no pieces)")
    return model


# ----------------------------------------------------------------------------- vocabulary
def normalizer_name(*, add_dummy_prefix: bool, remove_extra_whitespaces: bool) -> str:
    """The legacy ``NORMALIZERS`` key of this SentencePiece normalizer setting (GGUF callers)."""
    name = "sentencepiece"
    if remove_extra_whitespaces:
        name += "-collapse"
    if not add_dummy_prefix:
        name += "-no-prefix"
    return name


def sentencepiece_pipeline(
    *,
    charsmap: bytes = b"",
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = True,
    escape_whitespaces: bool = True,
    user_defined: dict[str, int] | None = None,
    unk_token: str | None = None,
    byte_fallback: bool = False,
    control_tokens: Sequence[str] = (),
) -> dict:
    """The ``Vocabulary.pipeline`` spec of a SentencePiece BPE model (``hf_pipeline`` runs it)."""
    user_defined = user_defined or {}
    decoder = {"type": "SentencePiece", "unk_token": unk_token, "control_tokens": sorted(control_tokens),
               "add_dummy_prefix": add_dummy_prefix, "remove_extra_whitespaces": remove_extra_whitespaces}
    model = {"type": "BPE", "token_text": "utf-8", "fuse_unk": True}
    if unk_token is not None:
        model["unk_token"] = unk_token
    if byte_fallback:
        model["byte_fallback"] = True
    return {
        "normalizer": {
            "type": "SentencePiece",
            "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii"),
            "add_dummy_prefix": add_dummy_prefix,
            "remove_extra_whitespaces": remove_extra_whitespaces,
            "escape_whitespaces": escape_whitespaces,
            "user_defined": sorted(user_defined),
        },
        "pre_tokenizer": None,
        "decoder": decoder,
        "added_tokens": [{"content": text, "id": token_id, "special": False, "normalized": True, "lstrip": False,
                          "rstrip": False, "single_word": False} for text, token_id in user_defined.items()],
        "model": model,
    }


def sentencepiece_vocabulary(
    pieces: Sequence[Piece],
    *,
    name: str,
    normalizer: str = "sentencepiece-collapse",
    source: str = "",
    charsmap: bytes = b"",
    escape_whitespaces: bool = True,
    byte_fallback: bool | None = None,
) -> Vocabulary:
    """A byte-level ``"ranks"`` Vocabulary, with its pipeline, equivalent to SentencePiece BPE on these pieces.

    Shared by the ``.model`` and the GGUF ``llama`` loaders. ``normalizer`` is the legacy
    name (``sentencepiece``, ``-collapse`` for remove_extra_whitespaces, ``-no-prefix``
    without the dummy prefix); ``charsmap`` the precompiled normalization map, if any;
    ``byte_fallback`` whether unknown characters become byte pieces (default: when the
    model has byte pieces). See the module docstring for how pieces map onto bytes.
    """
    from .char_units import base_priorities, unit_merges

    where = source or name  # errors name the file when there is one
    n = len(pieces)
    tokens: list[bytes] = [b""] * n
    excluded: set[int] = set()
    byte_pieces: dict[int, int] = {}
    user_defined: dict[str, int] = {}
    control: list[int] = []
    unk_token = None
    owner: dict[bytes, int] = {}  # bytes -> id of the normal piece with those bytes
    for token_id, piece in enumerate(pieces):
        if "\0" in piece.text:  # sentencepiece refuses such a piece, or loads a lone NUL and never matches it
            raise VocabularyError(f"{where}: piece {token_id} {piece.text!r} contains a NUL character; refused")
        if piece.kind in (UNKNOWN, CONTROL):
            tokens[token_id] = piece.text.encode("utf-8")
            excluded.add(token_id)
            if piece.kind == UNKNOWN:
                if unk_token is None:
                    unk_token = piece.text
            else:
                control.append(token_id)
        elif piece.kind == BYTE:
            value = byte_piece_value(piece.text)
            if value is None:
                raise VocabularyError(f"{where}: byte piece {token_id} {piece.text!r} is not of the form <0xXX>")
            if value in byte_pieces:
                raise VocabularyError(
                    f"{where}: duplicate byte piece {piece.text!r} (ids {byte_pieces[value]} and {token_id})"
                )
            byte_pieces[value] = token_id
            tokens[token_id] = bytes([value])
            excluded.add(token_id)
        elif piece.kind in (NORMAL, USER_DEFINED):
            if not piece.text:
                raise VocabularyError(f"{where}: piece {token_id} is empty")
            data = piece.text.encode("utf-8")
            if data in owner or piece.text in user_defined:
                first = owner.get(data, user_defined.get(piece.text))
                raise VocabularyError(f"{where}: duplicate token {piece.text!r} (ids {first} and {token_id})")
            tokens[token_id] = data
            if piece.kind == USER_DEFINED:
                user_defined[piece.text] = token_id  # matched in the text before BPE, never merged
                excluded.add(token_id)
            else:
                owner[data] = token_id
        elif piece.kind == UNUSED:
            raise VocabularyError(f"{where}: unused piece {piece.text!r} (id {token_id}) is not supported"
                                  " (SentencePiece merges into it and splits it again)")
        else:
            raise VocabularyError(f"{where}: piece {token_id} {piece.text!r} has unknown type {piece.kind}")
    # a character that is not a piece must not occur inside one: SentencePiece would still merge it
    known_chars = {pieces[i].text for i in owner.values() if len(pieces[i].text) == 1}
    for data, token_id in owner.items():
        text = pieces[token_id].text
        if len(text) > 1 and not set(text) <= known_chars:
            missing = next(c for c in text if c not in known_chars)
            raise VocabularyError(f"{where}: piece {token_id} {text!r} contains {missing!r}, which is not a piece"
                                  " itself; SentencePiece's merging of unknown characters is not reproduced")

    chars = [i for d, i in owner.items() if len(pieces[i].text) == 1 and len(d) > 1]
    extra, units = unit_merges(tokens, chars, excluded)
    tokens.extend(extra)
    hidden = set(range(n, len(tokens)))
    priority = base_priorities(tokens, excluded)
    for rank, (_, _, merged) in enumerate(units):
        priority[merged] = rank
    # real merges: higher score first; equal scores share a priority, so that BPE takes
    # the leftmost of them, as SentencePiece does
    merged = [i for d, i in owner.items() if len(pieces[i].text) > 1]
    scores = np.array([pieces[i].score for i in merged], dtype=np.float64)
    if np.isnan(scores).any():  # no order: SentencePiece's result then depends on its heap's layout
        token_id = merged[int(np.flatnonzero(np.isnan(scores))[0])]
        raise VocabularyError(f"{where}: piece {token_id} {pieces[token_id].text!r} has score NaN, which orders"
                              " no merge; refused")
    distinct = np.unique(-scores)  # sorted: best (highest) score first
    priority[merged] = len(units) + np.searchsorted(distinct, -scores)

    if byte_fallback is None:
        byte_fallback = bool(byte_pieces)
    spec = sentencepiece_pipeline(
        charsmap=charsmap,
        add_dummy_prefix="no-prefix" not in normalizer,
        remove_extra_whitespaces="collapse" in normalizer,
        escape_whitespaces=escape_whitespaces,
        user_defined=user_defined,
        unk_token=unk_token,
        byte_fallback=byte_fallback and len(byte_pieces) == 256,
        control_tokens=[pieces[i].text for i in control],
    )
    return Vocabulary(
        name=name,
        tokens=tokens,
        priority=priority,
        rule="ranks",
        special_tokens={},
        pattern=None,
        normalizer="pipeline",
        excluded=frozenset(excluded),
        hidden=frozenset(hidden),
        byte_fallback=dict(byte_pieces) or None,
        whole_piece_lookup=False,
        source=source,
        pipeline=spec,
    )


def load_sentencepiece(path: str | Path, *, name: str | None = None) -> Vocabulary:
    """A Vocabulary from a SentencePiece ``.model`` file of BPE type."""
    path = Path(path)
    model = read_sentencepiece_model(path)
    label = name or path.name.split(".")[0]
    if model.model_type != 2:
        kind = MODEL_TYPES.get(model.model_type, f"type {model.model_type}")
        raise VocabularyError(f"{path}: a SentencePiece {kind} model; only BPE models can be loaded")
    if model.treat_whitespace_as_suffix:
        raise VocabularyError(f"{path}: treat_whitespace_as_suffix is not supported")
    if model.precompiled_charsmap:
        from ..pipeline.charsmap import CharsMap

        CharsMap(model.precompiled_charsmap, where=str(path))  # a damaged map is refused at load
    normalizer = normalizer_name(add_dummy_prefix=model.add_dummy_prefix,
                                 remove_extra_whitespaces=model.remove_extra_whitespaces)
    return sentencepiece_vocabulary(model.pieces, name=label, normalizer=normalizer, source=str(path),
                                    charsmap=model.precompiled_charsmap,
                                    escape_whitespaces=model.escape_whitespaces,
                                    byte_fallback=model.byte_fallback)
