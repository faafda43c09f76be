"""Read SentencePiece ``.model`` files of BPE type and model them on bytes.

SentencePiece's BPE (``bpe_model.cc``) differs from tiktoken's in three ways, and
each is mapped onto the byte-level :class:`~bpebench.algorithms.formats.vocabulary.Vocabulary`:

1. **It starts from characters, not bytes.** Every single-character piece is a
   base unit. A multi-byte character piece becomes a merge of its bytes whose
   priority is better than every real merge, so all characters are assembled
   before any real merge happens. A 3- or 4-byte character needs partial tokens
   (its first 2 and 3 bytes) to be a merge of two tokens: those are *hidden* ids
   after the real vocabulary; the Tokenizer replaces any that survive (a
   character that is not a piece) by byte-fallback ids, which is what
   SentencePiece emits for an unknown character.
2. **Priorities come from scores**, higher first, and a pair merges when its
   concatenation is a piece (the ``"ranks"`` rule). Pieces with equal scores get
   equal priorities, so BPE takes the leftmost of them, which is SentencePiece's
   tie rule. (Llama/Mistral models give all whitespace runs ``▁▁``, ``▁▁▁``... one
   shared score: a run grows from the left, ``▁▁▁`` from ``▁▁ ▁``, although both
   have the same priority. The reference encoder follows this literally; the
   split derivation in ``bpebench.algorithms.kernels.compiled`` expects a token's parts to have
   strictly better priorities and reports those runs as unreachable.)
3. **Byte fallback**: ``<0xXX>`` pieces are the base tokens of bytes that no
   normal piece covers (they go to ``byte_fallback``); where a normal piece has the
   same single byte (``a`` and ``<0x61>``) the byte piece is ``excluded``.

``<unk>``, ``<s>``, ``</s>`` (unknown / control pieces) become special tokens.
The normalizer is read from the model: only the ``identity`` rule set is
supported (no NFKC tables), with its ``add_dummy_prefix`` and
``remove_extra_whitespaces`` flags. SentencePiece runs BPE on the whole
normalized text (no whitespace pre-split), so the vocabulary has no pattern.

The protobuf is parsed here (a small reader for the few ModelProto fields
needed), so no ``protobuf`` dependency. Loading is linear in the model size;
the encoding is exact (ids equal ``SentencePieceProcessor.encode``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..kernels.compiled import NEVER
from bpebench.errors import VocabularyError
from .vocabulary import Vocabulary

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
    """The ``bpebench.algorithms.pipeline.pretokenize.NORMALIZERS`` key of this SentencePiece normalizer setting."""
    name = "sentencepiece"
    if remove_extra_whitespaces:
        name += "-collapse"
    if not add_dummy_prefix:
        name += "-no-prefix"
    return name


def _byte_piece_value(text: str) -> int | None:
    """0xXX for a ``<0xXX>`` byte piece, else None."""
    if len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
        try:
            return int(text[3:5], 16)
        except ValueError:
            return None
    return None


def sentencepiece_vocabulary(
    pieces: Sequence[Piece],
    *,
    name: str,
    normalizer: str,
    source: str = "",
) -> Vocabulary:
    """A byte-level ``"ranks"`` Vocabulary equivalent to SentencePiece BPE on these pieces.

    Shared by the ``.model`` and the GGUF ``llama`` loaders. See the module docstring
    for how characters, scores and byte pieces are mapped.
    """
    where = source or name  # errors name the file when there is one
    n = len(pieces)
    tokens: list[bytes] = [b""] * n
    special_tokens: dict[str, int] = {}
    excluded: set[int] = set()
    byte_pieces: dict[int, int] = {}
    owner: dict[bytes, int] = {}  # bytes -> id of the normal piece with those bytes
    for token_id, piece in enumerate(pieces):
        if piece.kind in (UNKNOWN, CONTROL):
            tokens[token_id] = piece.text.encode("utf-8")
            special_tokens[piece.text] = token_id
            excluded.add(token_id)
        elif piece.kind == BYTE:
            value = _byte_piece_value(piece.text)
            if value is None:
                raise VocabularyError(f"{where}: byte piece {token_id} {piece.text!r} is not of the form <0xXX>")
            if value in byte_pieces:
                raise VocabularyError(
                    f"{where}: duplicate byte piece {piece.text!r} (ids {byte_pieces[value]} and {token_id})"
                )
            byte_pieces[value] = token_id
            tokens[token_id] = bytes([value])
        elif piece.kind == NORMAL:
            if not piece.text:
                raise VocabularyError(f"{where}: piece {token_id} is empty")
            data = piece.text.encode("utf-8")
            if data in owner:
                raise VocabularyError(f"{where}: duplicate token {piece.text!r} (ids {owner[data]} and {token_id})")
            owner[data] = token_id
            tokens[token_id] = data
        elif piece.kind == USER_DEFINED:
            raise VocabularyError(
                f"{where}: user-defined piece {piece.text!r} (id {token_id}) is not supported: SentencePiece matches"
                " these before BPE"
            )
        elif piece.kind == UNUSED:
            raise VocabularyError(f"{where}: unused piece {piece.text!r} (id {token_id}) is not supported")
        else:
            raise VocabularyError(f"{where}: piece {token_id} {piece.text!r} has unknown type {piece.kind}")
    for value, token_id in byte_pieces.items():
        if bytes([value]) in owner:
            excluded.add(token_id)  # the normal piece is what BPE uses for this byte

    priority = np.full(n, NEVER, dtype=np.int64)
    # 1. characters of 2-4 bytes are base units: assembled from bytes before any real merge
    hidden_ids: dict[bytes, int] = {}
    units: list[tuple[int, int]] = []  # (byte length, id)
    for data, token_id in owner.items():
        if len(data) == 1:
            priority[token_id] = -1
        elif len(pieces[token_id].text) == 1:
            units.append((len(data), token_id))
            for k in range(2, len(data)):
                prefix = data[:k]
                if prefix not in hidden_ids:
                    hidden_ids[prefix] = n + len(hidden_ids)
                    units.append((k, hidden_ids[prefix]))
    for value, token_id in byte_pieces.items():
        if token_id not in excluded:
            priority[token_id] = -1
    hidden_tokens = sorted(hidden_ids, key=hidden_ids.__getitem__)
    tokens.extend(hidden_tokens)
    priority = np.concatenate([priority, np.zeros(len(hidden_tokens), dtype=np.int64)])
    units.sort()  # shorter prefixes first, so each unit's parts are formed before it
    for rank, (_, token_id) in enumerate(units):
        priority[token_id] = rank
    # 2. real merges: higher score first; equal scores share a priority, so that BPE takes
    #    the leftmost of them, as SentencePiece does
    merged = [i for d, i in owner.items() if len(d) > 1 and len(pieces[i].text) > 1]
    scores = np.array([pieces[i].score for i in merged], dtype=np.float64)
    distinct = np.unique(-scores)  # sorted: best (highest) score first
    priority[merged] = len(units) + np.searchsorted(distinct, -scores)

    return Vocabulary(
        name=name,
        tokens=tokens,
        priority=priority,
        rule="ranks",
        special_tokens=special_tokens,
        pattern=None,
        normalizer=normalizer,
        excluded=frozenset(excluded),
        hidden=frozenset(hidden_ids.values()),
        byte_fallback={value: token_id for value, token_id in byte_pieces.items()} or None,
        whole_piece_lookup=False,
        source=source,
    )


def load_sentencepiece(path: str | Path, *, name: str | None = None) -> Vocabulary:
    """A Vocabulary from a SentencePiece ``.model`` file of BPE type."""
    path = Path(path)
    model = read_sentencepiece_model(path)
    label = name or path.name.split(".")[0]
    if model.model_type != 2:
        kind = MODEL_TYPES.get(model.model_type, f"type {model.model_type}")
        raise VocabularyError(f"{path}: a SentencePiece {kind} model; only BPE models can be loaded")
    if model.precompiled_charsmap or model.normalizer_name not in ("identity", ""):
        raise VocabularyError(
            f"{path}: SentencePiece normalizer {model.normalizer_name or 'custom'!r} is not supported"
            " (only 'identity'; NFKC rule tables are not reproduced)"
        )
    if not model.escape_whitespaces or model.treat_whitespace_as_suffix:
        raise VocabularyError(f"{path}: escape_whitespaces=false / treat_whitespace_as_suffix are not supported")
    normalizer = normalizer_name(add_dummy_prefix=model.add_dummy_prefix,
                                 remove_extra_whitespaces=model.remove_extra_whitespaces)
    return sentencepiece_vocabulary(model.pieces, name=label, normalizer=normalizer, source=str(path))
