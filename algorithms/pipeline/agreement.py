"""How far an approximate encoder is from BPE on a corpus: the numbers reports and benchmarks show.

:func:`disagreement` encodes every piece with the encoder under test and with an
exact reference, and measures:

* ``exact_match_rate``: fraction of pieces whose ids equal the reference's;
* ``count_diff`` / ``count_diff_histogram``: ``len(approx) - len(reference)`` per
  piece (negative = fewer tokens than BPE), and how often each difference occurs;
* ``invalid_rate``: fraction of pieces whose output is not a valid BPE encoding,
  i.e. re-encoding its decoded bytes with the reference does not give the same ids
  (seed ``001``'s definition of validity). When the output decodes to the piece,
  that is the same as differing from the reference (BPE has one valid encoding
  per text), so it only exceeds ``1 - exact_match_rate`` for an encoder that
  loses or alters bytes (``roundtrip_failures`` counts those);
* ``incompatible_pair_rate``: fraction of adjacent token pairs that cannot stand
  next to each other in any BPE encoding (``compiled.is_compatible``). A sequence
  is valid iff all its pairs are compatible (seed ``001``, corollary IIIa), so this
  says how *locally* wrong an invalid output is. None for a vocabulary whose merges
  run out of priority order (``compiled.rank_order_break``): pairwise compatibility
  is then not what the tables describe.

Rates are per piece occurrence (a piece that occurs 10 times counts 10 times);
identical pieces are encoded once. Every statistic is exact; the cost is one
reference encoding per distinct piece, so keep the corpus to what the reference
can handle (the fast exact default encoder does megabytes; ``naive`` a few kB).

>>> from bpebench.algorithms.formats.vocabulary import Vocabulary
>>> from bpebench.algorithms.core.registry import make_encoder
>>> v = Vocabulary.from_ranks([b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"], name="seed")
>>> d = disagreement(make_encoder("greedy", v), make_encoder("naive", v), [b"abacb", b"abacbb"])
>>> d["exact_match_rate"], d["count_diff"], d["examples"][0]["tokens"]
(0.5, [0, 0], [b'ab', b'ac', b'b'])
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..kernels.compiled import NEVER, compile_vocabulary, is_compatible, rank_order_break
from ..core.encoder import Encoder
from ..core.registry import default_encoder_name, make_encoder
from ..formats.vocabulary import Vocabulary


def reference_encoder_for(vocabulary: Vocabulary) -> Encoder:
    """The fastest registered exact encoder for ``vocabulary`` (``naive`` if it is the only one)."""
    return make_encoder(default_encoder_name(vocabulary), vocabulary)


def split_text(vocabulary: Vocabulary, text: str) -> list[bytes]:
    """``text`` pre-tokenized the way the vocabulary's Tokenizer does it (its pattern and
    normalizer), as UTF-8 pieces: the inputs an encoder sees inside the pipeline."""
    from .pretokenize import NORMALIZERS, pretokenizer_for

    if vocabulary.normalizer not in NORMALIZERS:  # a component pipeline (tokenizer.json, SentencePiece)
        from .hf_pipeline import HFPipeline

        return HFPipeline(vocabulary, None).piece_bytes(text)
    normalize, _ = NORMALIZERS[vocabulary.normalizer]
    splitter = pretokenizer_for(vocabulary)
    return [p.encode("utf-8", "surrogatepass") for p in splitter.split(normalize(text))]


def disagreement(
    encoder: Encoder,
    reference_encoder: Encoder | None,
    pieces: Iterable[bytes],
    *,
    max_examples: int = 5,
) -> dict:
    """Compare ``encoder`` with ``reference_encoder`` (None: :func:`reference_encoder_for`) piece by piece.

    Returns a dict with ``encoder``, ``reference``, ``pieces``, ``bytes``, ``tokens``,
    ``reference_tokens``, ``exact_match_rate``, ``differing_byte_rate`` (bytes inside
    differing pieces / all bytes), ``count_diff`` (list, one per piece, in order),
    ``count_diff_histogram`` ({difference: occurrences}), ``count_mismatch_rate``,
    ``invalid_rate``, ``incompatible_pair_rate``, ``roundtrip_failures`` and
    ``examples`` (up to ``max_examples`` differing pieces with both token lists).
    On an empty corpus ``exact_match_rate`` is 1.0 and the other rates 0.0.
    """
    vocabulary = encoder.vocabulary
    if reference_encoder is None:
        reference_encoder = reference_encoder_for(vocabulary)
    tables = compile_vocabulary(vocabulary)
    pairs_checkable = rank_order_break(vocabulary) is None  # else compatibility is not defined by the tables
    tokens = vocabulary.tokens

    # one verdict per distinct piece: (approx count, reference count, same, valid, pairs, bad pairs, round trip)
    verdicts: dict[bytes, tuple[int, int, bool, bool, int, int, bool]] = {}
    occurrences: list[bytes] = []
    examples: list[dict] = []
    for piece in pieces:
        piece = bytes(piece)
        occurrences.append(piece)
        if piece in verdicts:
            continue
        approx = encoder.encode(piece)
        reference = reference_encoder.encode(piece)
        same = approx == reference
        decoded = vocabulary.decode_bytes(approx)
        roundtrip = decoded == piece
        if same or roundtrip:
            valid = same  # BPE has exactly one valid encoding of ``piece``: the reference's
        else:
            valid = reference_encoder.encode(decoded) == approx
        pairs = max(len(approx) - 1, 0)
        bad_pairs = 0
        if not same and pairs_checkable:
            bad_pairs = sum(
                1
                for a, b in zip(approx, approx[1:])
                if tables.priority[a] >= NEVER or tables.priority[b] >= NEVER or not is_compatible(tables, a, b)
            )
            if len(examples) < max_examples:
                examples.append({
                    "piece": piece,
                    "tokens": [tokens[i] for i in approx],
                    "reference_tokens": [tokens[i] for i in reference],
                })
        verdicts[piece] = (len(approx), len(reference), same, valid, pairs, bad_pairs, roundtrip)

    n = len(occurrences)
    total_bytes = sum(map(len, occurrences))
    count_diff = []
    n_same = n_valid = n_pairs = n_bad_pairs = n_roundtrip_failures = differing_bytes = 0
    approx_tokens = reference_tokens = 0
    for piece in occurrences:
        a_len, r_len, same, valid, pairs, bad_pairs, roundtrip = verdicts[piece]
        count_diff.append(a_len - r_len)
        approx_tokens += a_len
        reference_tokens += r_len
        n_same += same
        n_valid += valid
        n_pairs += pairs
        n_bad_pairs += bad_pairs
        n_roundtrip_failures += not roundtrip
        differing_bytes += 0 if same else len(piece)

    def rate(part: int, whole: int) -> float:
        return part / whole if whole else 0.0

    return {
        "encoder": encoder.name,
        "reference": reference_encoder.name,
        "pieces": n,
        "bytes": total_bytes,
        "tokens": approx_tokens,
        "reference_tokens": reference_tokens,
        "exact_match_rate": n_same / n if n else 1.0,
        "differing_byte_rate": rate(differing_bytes, total_bytes),
        "count_diff": count_diff,
        "count_diff_histogram": dict(sorted(Counter(count_diff).items())),
        "count_mismatch_rate": rate(sum(1 for d in count_diff if d), n),
        "invalid_rate": rate(n - n_valid, n),
        "incompatible_pair_rate": rate(n_bad_pairs, n_pairs) if pairs_checkable else None,
        "roundtrip_failures": n_roundtrip_failures,
        "examples": examples,
    }
