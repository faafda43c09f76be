"""Vocabularies for the properties: a tiny BPE trainer, the paper's seed dictionary, named specs.

Every vocabulary the kit uses is named by a *spec* string, so that a failing
check prints a reproduction command that rebuilds exactly the same vocabulary:

* ``seed``: the dictionary ``a b c ab cb ac bb cbb acbb`` of the paper (seed 001),
  priority = id, only the bytes ``a b c``;
* ``trained:rule=merges,merges=40,alphabet=all,shuffle=3,text=6162.6163``: a
  vocabulary trained by :func:`train_bpe` on the hex-encoded training chunks
  (``.``-separated); ``rule`` is ``ranks`` or ``merges``, ``alphabet`` is ``all``
  (every byte is a token) or ``text`` (only the bytes of the training text),
  ``shuffle`` seeds a permutation of the ids (0 keeps training order), so that
  priorities differ from ids as in HF and SentencePiece vocabularies; ``reorder``
  (optional) seeds a random merge order in which parts still precede wholes
  (so that, e.g., ``bc`` merges before ``ab`` while ``abc`` is listed as
  ``ab + c``: the ranks and merges rules then disagree); ``resplit`` (``merges``
  only) seeds listing each merge as a random split of its token into two earlier
  tokens, as another trainer could have; ``drop``
  (``merges`` rule only, optional) seeds removing about a quarter of the merges
  from the list while keeping their tokens, as pruned HF merge lists do: those
  tokens become unreachable, and pairs that spell a token need not merge;
  ``disorder`` (optional) seeds moving about a quarter of the merges to a random earlier
  place, before the merges of their parts (merges out of priority order: BPE applies such a
  merge as soon as its pair exists; encoders that rely on the order refuse the vocabulary);
  ``pattern`` (a pre-tokenizer name: ``cl100k``, ``o200k``, ``llama3``, ...), ``normalizer``
  (``sentencepiece``, ``nfc``, ...) and ``specials`` (``.``-separated hex of special-token
  literals, ids after the tokens) make it a whole pipeline vocabulary for the Tokenizer;
* anything else is passed to :func:`bpebench.algorithms.formats.load_vocabulary`
  (``cl100k_base``, ``o200k_base``, ``mistral_v1``, a path, ...).

Resolution is memoised per process (real vocabularies load once per session).

>>> v = train_bpe([b"aaaa"], merges=2, rule="ranks", alphabet="text")
>>> v.tokens
[b'a', b'aa', b'aaaa']
"""

from __future__ import annotations

import random
from collections import Counter
from functools import lru_cache
from typing import Iterable, Literal, Sequence

import numpy as np

from bpebench.algorithms.kernels.compiled import NEVER
from bpebench.errors import BpebenchError, VocabularyError
from bpebench.algorithms.formats.vocabulary import Vocabulary

SEED_TOKENS = [b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"]

#: the real vocabularies the kit samples by default (those that load here)
REAL_VOCABULARIES = ("cl100k_base", "o200k_base", "mistral_v1")


def seed_vocabulary() -> Vocabulary:
    """The paper's example dictionary: ``abacb`` -> ``ab a cb``, ``abacbb`` -> ``ab acbb``."""
    return Vocabulary.from_ranks(SEED_TOKENS, name="seed", source="seed 001 (the paper's example)")


def train_bpe(
    texts: Sequence[bytes],
    *,
    merges: int,
    rule: Literal["ranks", "merges"] = "ranks",
    alphabet: Literal["all", "text"] = "all",
    shuffle: int = 0,
    drop: int = 0,
    reorder: int = 0,
    resplit: int = 0,
    disorder: int = 0,
    extra: int = 0,
    name: str = "trained",
) -> Vocabulary:
    """Learn up to ``merges`` merges on ``texts`` by the textbook BPE trainer.

    Count adjacent pairs (never across two texts), merge the most frequent pair
    everywhere (first occurrence wins ties), repeat. With ``rule="merges"`` the merge
    list is kept (a pair whose concatenation is already a token adds a second
    merge to the same id, as HF merge lists can); with ``rule="ranks"`` such a pair
    adds nothing (the ranks rule already merges it). ``reorder`` (a seed) then
    shuffles the merge order, keeping every merge after the merges of its parts;
    ``resplit`` (a seed, merges rule) lists each merge as a random split of its
    token into earlier tokens; ``drop`` (a seed, merges rule) removes about a
    quarter of the merges but keeps their tokens; ``disorder`` (a seed) moves about a
    quarter of the merges to a random earlier place, ignoring their parts; ``extra`` (a seed,
    merges rule) gives about a third of the tokens a second listed merge (another split into
    two earlier tokens, later in the list), so that more than one merge forms them.
    O(merges * total length).
    """
    base = list(range(256)) if alphabet == "all" else sorted({b for t in texts for b in t})
    tokens: list[bytes] = [bytes([b]) for b in base]
    index = {t: i for i, t in enumerate(tokens)}
    seqs = [[index[bytes([b])] for b in t] for t in texts]
    merge_list: list[tuple[int, int, int]] = []  # (left, right, merged) in priority order
    for _ in range(merges):
        counts: Counter[tuple[int, int]] = Counter()
        first_seen: dict[tuple[int, int], int] = {}
        position = 0
        for seq in seqs:
            for pair in zip(seq, seq[1:]):
                counts[pair] += 1
                first_seen.setdefault(pair, position)
                position += 1
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -first_seen[p]))
        joined = tokens[pair[0]] + tokens[pair[1]]
        merged = index.get(joined)
        if merged is None:
            merged = index[joined] = len(tokens)
            tokens.append(joined)
            merge_list.append((pair[0], pair[1], merged))
        elif rule == "merges":
            merge_list.append((pair[0], pair[1], merged))
        seqs = [_replace_pair(seq, pair, merged) for seq in seqs]

    if reorder:
        merge_list = _topological_shuffle(merge_list, len(base), random.Random(reorder))
    if disorder:
        merge_list = _move_earlier(merge_list, random.Random(disorder))
    permutation = list(range(len(tokens)))
    if shuffle:
        random.Random(shuffle).shuffle(permutation)
    ids_tokens: list[bytes] = [b""] * len(tokens)
    for old, token in enumerate(tokens):
        ids_tokens[permutation[old]] = token
    if rule == "ranks":
        # singles first (their rank never matters), then tokens in merge-list order
        priority = np.empty(len(tokens), dtype=np.int64)
        for old in range(len(base)):
            priority[permutation[old]] = old
        for rank, (_, _, merged) in enumerate(merge_list):
            priority[permutation[merged]] = len(base) + rank
        return Vocabulary(name=name, tokens=ids_tokens, priority=priority, rule="ranks",
                          source="bpebench.properties.vocabularies.train_bpe")
    priority = np.full(len(tokens), NEVER, dtype=np.int64)
    for old in range(len(base)):
        priority[permutation[old]] = -1
    if resplit:
        merge_list = _resplit(merge_list, tokens, len(base), random.Random(resplit))
    if extra:
        merge_list = _second_merges(merge_list, tokens, random.Random(extra))
    kept_merges: list = list(merge_list)
    if drop:
        rng = random.Random(drop)
        kept_merges = [m if rng.random() >= 0.25 else None for m in merge_list]
    merge_table: dict[tuple[int, int], tuple[int, int]] = {}
    for rank, kept in enumerate(kept_merges):
        if kept is None:
            continue
        left, right, merged = kept
        key = (permutation[left], permutation[right])
        if key in merge_table:
            continue
        merge_table[key] = (rank, permutation[merged])
        if priority[permutation[merged]] == NEVER:
            priority[permutation[merged]] = rank
    return Vocabulary(name=name, tokens=ids_tokens, priority=priority, rule="merges", merges=merge_table,
                      source="bpebench.properties.vocabularies.train_bpe")


def _second_merges(merge_list, tokens: list[bytes], rng: random.Random):
    """About a third of the tokens get a second listed merge: another split into two tokens,
    placed at a random later place of the list (after both parts exist)."""
    index = {t: i for i, t in enumerate(tokens)}
    out = list(merge_list)
    for left, right, merged in merge_list:
        token = tokens[merged]
        splits = [(index[token[:k]], index[token[k:]]) for k in range(1, len(token))
                  if token[:k] in index and token[k:] in index]
        splits = [split for split in splits if split != (left, right)]
        if not splits or rng.random() >= 0.34:
            continue
        a, b = rng.choice(splits)
        position = max((i + 1 for i, (_, _, m) in enumerate(out) if m in (a, b, merged)), default=0)
        out.insert(rng.randint(position, len(out)), (a, b, merged))
    return out


def _resplit(merge_list, tokens: list[bytes], n_base: int, rng: random.Random):
    """List each merge as a random split of its token into two tokens that exist by then,
    other than the trained one when there is a choice (another trainer's merge list for
    the same tokens; such tokens are often unreachable)."""
    index = {t: i for i, t in enumerate(tokens)}
    formed = set(range(n_base))
    out = []
    for left, right, merged in merge_list:
        token = tokens[merged]
        splits = [(index[token[:k]], index[token[k:]]) for k in range(1, len(token))
                  if index.get(token[:k]) in formed and index.get(token[k:]) in formed]
        others = [s for s in splits if s != (left, right)]  # prefer a split the trainer did not use
        left, right = rng.choice(others) if others else (left, right)
        out.append((left, right, merged))
        formed.add(merged)
    return out


def _move_earlier(merge_list, rng: random.Random):
    """About a quarter of the merges, each moved to a random earlier place (possibly before
    the merges that form its parts)."""
    out = list(merge_list)
    for i in range(1, len(out)):
        if rng.random() < 0.25:
            out.insert(rng.randrange(i), out.pop(i))
    return out


def _topological_shuffle(merge_list, n_base: int, rng: random.Random):
    """A random order of the merges in which both parts of a merge exist before it."""
    formed = set(range(n_base))
    pending = list(merge_list)
    out = []
    while pending:
        ready = [i for i, (l, r, _) in enumerate(pending) if l in formed and r in formed]
        pick = pending.pop(rng.choice(ready))
        out.append(pick)
        formed.add(pick[2])
    return out


def _replace_pair(seq: list[int], pair: tuple[int, int], merged: int) -> list[int]:
    out: list[int] = []
    i, n = 0, len(seq)
    while i < n:
        if i + 1 < n and seq[i] == pair[0] and seq[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


def as_merge_list(vocab: Vocabulary, name: str | None = None) -> Vocabulary:
    """A ranks vocabulary as an HF-style merge list: one merge per token, its derived split, at the
    token's priority (how tiktoken vocabularies become ``tokenizer.json`` files, Llama-3's
    among them); whole-piece lookup kept (HF ``ignore_merges``). The same ids on every input
    while the merges run in priority order (then a token's split is unique)."""
    import dataclasses

    from bpebench.algorithms.kernels.compiled import compile_vocabulary

    tables = compile_vocabulary(vocab)
    merges = {(int(tables.split_left[t]), int(tables.split_right[t])): (int(vocab.priority[t]), t)
              for t in np.flatnonzero(tables.split_left >= 0).tolist()}
    priority = np.where(tables.split_left >= 0, vocab.priority, NEVER)
    priority[tables.token_len == 1] = -1
    return dataclasses.replace(vocab, name=name or f"{vocab.name}-merges", rule="merges", merges=merges,
                               priority=priority)


def break_merge_order(vocab: Vocabulary, fraction: float, seed: int, name: str | None = None) -> Vocabulary:
    """``vocab`` with about ``fraction`` of its merges moved to just before the later of their two
    parts' merges (Llama-3-shaped: BPE then forms those tokens out of priority order, after the
    part appears). Ids, bytes, pattern and special tokens stay; only priorities move.

    Ranks rule: a token's priority goes below its later part's (parts = the derived split).
    Merges rule: a listed merge goes before the merge list's first merge of its later part.
    O(vocabulary) plus a sort.
    """
    import dataclasses

    from bpebench.algorithms.kernels.compiled import compile_vocabulary

    rng = random.Random(seed)
    if vocab.rule == "ranks":
        tables = compile_vocabulary(vocab)
        key = vocab.priority.astype(np.float64)
        for t in range(len(vocab.tokens)):
            x, y = int(tables.split_left[t]), int(tables.split_right[t])
            if x >= 0 and rng.random() < fraction:
                later = max(vocab.priority[x], vocab.priority[y])
                if len(vocab.tokens[x]) > 1 or len(vocab.tokens[y]) > 1:
                    key[t] = later - 0.5
        order = np.argsort(key, kind="stable")
        priority = np.empty(len(key), dtype=np.int64)
        priority[order] = np.sort(vocab.priority)  # the same values, in the new order
        return dataclasses.replace(vocab, name=name or f"{vocab.name}-out-of-order", priority=priority)
    assert vocab.merges is not None
    first = {}  # token -> the priority of its first listed merge
    for (_, _), (p, t) in vocab.merges.items():
        first[t] = min(first.get(t, p), p)
    keyed = []
    for (x, y), (p, t) in vocab.merges.items():
        later = max(first.get(x, -1), first.get(y, -1))
        keyed.append((later - 0.5 if later >= 0 and rng.random() < fraction else p, x, y, t))
    keyed.sort()
    merges = {(x, y): (rank, t) for rank, (_, x, y, t) in enumerate(keyed)}
    priority = np.array([-1 if len(tok) == 1 else NEVER for tok in vocab.tokens], dtype=np.int64)
    for (x, y), (rank, t) in merges.items():
        priority[t] = min(priority[t], rank)
    return dataclasses.replace(vocab, name=name or f"{vocab.name}-out-of-order", priority=priority, merges=merges)


# ----------------------------------------------------------------------------- specs
_SEEDS = ("reorder", "resplit", "drop", "disorder", "extra")
_PIPELINE = ("pattern", "normalizer", "specials")


def trained_spec(texts: Iterable[bytes], *, merges: int, rule: str, alphabet: str, shuffle: int,
                 drop: int = 0, reorder: int = 0, resplit: int = 0, disorder: int = 0, extra: int = 0,
                 pattern: str = "", normalizer: str = "", specials: Sequence[str] = ()) -> str:
    """The spec string of a trained vocabulary (see the module docstring)."""
    chunks = ".".join(t.hex() for t in texts)
    values = dict(reorder=reorder, resplit=resplit, drop=drop, disorder=disorder, extra=extra, pattern=pattern,
                  normalizer=normalizer, specials=".".join(s.encode().hex() for s in specials))
    options = "".join(f"{key}={values[key]}," for key in _SEEDS + _PIPELINE if values[key])
    return f"trained:rule={rule},merges={merges},alphabet={alphabet},shuffle={shuffle},{options}text={chunks}"


def parse_trained_spec(spec: str) -> dict:
    fields = {}
    for item in spec[len("trained:"):].split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise BpebenchError(f"bad vocabulary spec {spec!r}: expected key=value items after 'trained:'")
        fields[key] = value
    try:
        texts = [bytes.fromhex(chunk) for chunk in fields.get("text", "").split(".")] if fields.get("text") else []
        params = dict(merges=int(fields.get("merges", 0)), rule=fields.get("rule", "ranks"),
                      alphabet=fields.get("alphabet", "all"), shuffle=int(fields.get("shuffle", 0)),
                      **{key: int(fields.get(key, 0)) for key in _SEEDS})
        pipeline = dict(pattern=fields.get("pattern", ""), normalizer=fields.get("normalizer", ""),
                        specials=[bytes.fromhex(h).decode() for h in fields.get("specials", "").split(".") if h])
    except (ValueError, UnicodeDecodeError) as exc:
        raise BpebenchError(f"bad vocabulary spec {spec!r}: {exc}") from None
    if params["rule"] not in ("ranks", "merges") or params["alphabet"] not in ("all", "text"):
        raise BpebenchError(f"bad vocabulary spec {spec!r}: rule must be ranks|merges, alphabet all|text")
    return dict(texts=texts, **params, **pipeline)


@lru_cache(maxsize=512)
def resolve(spec: str) -> Vocabulary:
    """The Vocabulary a spec names (memoised: real vocabularies load once per process)."""
    if spec == "seed":
        return seed_vocabulary()
    if spec.startswith("trained:"):
        params = parse_trained_spec(spec)
        texts = params.pop("texts")
        pipeline = {key: params.pop(key) for key in _PIPELINE}
        vocab = train_bpe(texts, name="trained", **params)
        vocab.source = spec
        _add_pipeline(vocab, spec, **pipeline)
        return vocab
    from bpebench.algorithms.formats import load_vocabulary

    return load_vocabulary(spec)


def _add_pipeline(vocab: Vocabulary, spec: str, *, pattern: str, normalizer: str, specials: list[str]) -> None:
    from bpebench.algorithms.formats.patterns import resolve_pattern
    from bpebench.algorithms.pipeline.pretokenize import NORMALIZERS

    if pattern:
        resolve_pattern(pattern)  # an unknown name fails here, in one line
        vocab.pattern = pattern
    if normalizer:
        if normalizer not in NORMALIZERS:
            raise BpebenchError(f"bad vocabulary spec {spec!r}: unknown normalizer {normalizer!r}")
        vocab.normalizer = normalizer
    vocab.special_tokens = {s: len(vocab.tokens) + i for i, s in enumerate(dict.fromkeys(specials))}


def available(spec: str) -> str | None:
    """None if ``spec`` resolves here, else one line saying why not (e.g. a loader not written yet)."""
    try:
        resolve(spec)
    except (BpebenchError, ImportError, OSError) as exc:
        return f"{spec} is not available: {exc}"
    return None


def short_name(spec: str) -> str:
    """A label for tables: ``trained(ranks,40)`` instead of the full spec."""
    if spec.startswith("trained:"):
        try:
            p = parse_trained_spec(spec)
        except BpebenchError:
            return "trained(?)"
        named = (("shuffle", "shuffled"), ("reorder", "reordered"), ("resplit", "resplit"), ("drop", "pruned"),
                 ("disorder", "disordered"), ("extra", "second merges"), ("pattern", p["pattern"]),
                 ("normalizer", p["normalizer"]), ("specials", "specials"))
        words = [p["rule"], str(p["merges"])] + [word for key, word in named if p[key]]
        return f"trained({','.join(words)})"
    return spec


def alphabet_of(vocab: Vocabulary) -> bytes:
    """The bytes that are tokens of ``vocab`` (inputs must stay inside them)."""
    return bytes(int(b) for b in np.flatnonzero(vocab.byte_token >= 0))


def producible_ids(vocab: Vocabulary) -> np.ndarray:
    """Ids BPE can produce: not excluded, not unreachable, not empty."""
    ok = np.ones(len(vocab.tokens), dtype=bool)
    ok[list(vocab.excluded)] = False
    ok[vocab.unreachable] = False
    for i, t in enumerate(vocab.tokens):
        if not t:
            ok[i] = False
    return np.flatnonzero(ok)


def check_spec(spec: str) -> None:
    """Raise a one-line error if ``spec`` cannot be used (for the CLI)."""
    reason = available(spec)
    if reason is not None:
        raise VocabularyError(reason)
