"""Quick measurement of the DFS token trie (a plain script, not an asv suite).

    python benchmarks/quick_trie.py                  # both parts, o200k_base and cl100k_base
    python benchmarks/quick_trie.py --only masks --repeat 41

1. Masks: for each vocabulary and built-in recognizer, the allowed tokens, the trie
   nodes the walk visits, the walk alone less the cost of an empty call (ns and
   cycles per visited node), a whole mask (clearing the buffer, the walk,
   duplicates), the brute-force numba loop over every token, and llguidance's first
   mask on a fresh matcher (its default "slices" and none). *Warm*: the same call
   back to back, median of ``--repeat``; *cold*: every case round-robin with 64 MB
   of other memory read before each call, so no cache holds the trie. Cycles per
   node are ns x the clock ``/proc/cpuinfo`` states (the script says whether
   ``perf stat`` could count cycles here; it does not use it).
2. Longest match: the ``greedy`` walk over 1 MB of text with the double-array trie
   of ``kernels/matching.py`` (the real ``greedy`` kernel), with the DFS trie
   (the same loop around :func:`~bpebench.algorithms.trie.dfs_trie.dfs_longest_match`)
   and ``token_tree``'s kernel, interleaved; outputs checked equal first.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess

import numpy as np

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.jit import njit
from bpebench.algorithms.trie.dfs_trie import build_dfs_trie, dfs_longest_match, dfs_trie_from_tokens, root_children
from bpebench.algorithms.trie.masks import BruteForceMasker, TokenMasker
from bpebench.algorithms.trie.recognizers import BUILTIN, builtin_regex, get_recognizer
from bpebench.benchmarks.quick_exact import interleaved, median_time, random_token_text
from bpebench.reports.environment import cpu_mhz

VOCABS = ["o200k_base", "cl100k_base"]


def perf_cycles_supported() -> bool:
    """True when ``perf stat`` can count cycles here (virtual machines often cannot)."""
    try:
        out = subprocess.run(["perf", "stat", "-x", ",", "-e", "cycles", "true"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "not supported" not in out.stderr and "cycles" in out.stderr


def masks(repeat: int) -> None:
    mhz = cpu_mhz() or float("nan")
    perf = perf_cycles_supported()
    print(f"1. token masks; cycles = ns x {mhz} MHz (/proc/cpuinfo); perf stat cycles "
          f"{'available (not used)' if perf else 'not supported on this machine'}")
    print("   warm: the same call back to back (median of --repeat); cold: round-robin over every case with")
    print(f"   {EVICT_BYTES >> 20} MB of other memory read before each call (caches hold none of the trie)")
    print(f"{'vocabulary':12} {'recognizer':12} {'allowed':>8} {'visited':>8} {'ns/node':>8} {'cyc/node':>8} "
          f"{'cold ns':>8} {'cold cyc':>8} {'mask ms':>8} {'cold ms':>8} {'brute ms':>8} {'llg ms':>8} "
          f"{'llg-0 ms':>8}")
    evict = _evictor()
    cold_runs, rows = {}, []
    for vocab_name in VOCABS:
        vocab = load_vocabulary(vocab_name)
        trie = build_dfs_trie(vocab)
        for name in BUILTIN:
            recognizer = get_recognizer(name)
            masker = TokenMasker(trie, recognizer)
            brute = BruteForceMasker.for_vocabulary(vocab, recognizer)
            allowed = masker.count()
            assert (masker.mask() == brute.mask()).all()
            call = median_time(lambda m=masker: m.walk(-1), repeat)  # a dead start: the call alone
            walk = median_time(masker.walk, repeat) - call
            mask = median_time(masker.fill, repeat)
            brute_s = median_time(brute.fill, max(3, repeat // 4))
            llg = [_llguidance_ms(vocab_name, name, slices, repeat) for slices in (None, [])]
            key = (vocab_name, name)
            cold_runs[key + ("evict-walk",)] = evict
            cold_runs[key + ("walk",)] = masker.walk
            cold_runs[key + ("evict-mask",)] = evict
            cold_runs[key + ("mask",)] = masker.fill
            rows.append((key, allowed, masker.visited, call, walk, mask, brute_s, llg))
    cold = interleaved(cold_runs, max(3, repeat // 2))
    for key, allowed, visited, call, walk, mask, brute_s, llg in rows:
        ns = walk / visited * 1e9
        cold_ns = (cold[key + ("walk",)][0] - call) / visited * 1e9
        print(f"{key[0]:12} {key[1]:12} {allowed:8d} {visited:8d} {ns:8.2f} {ns * mhz / 1e3:8.1f} "
              f"{cold_ns:8.2f} {cold_ns * mhz / 1e3:8.1f} {mask * 1e3:8.3f} {cold[key + ('mask',)][0] * 1e3:8.3f} "
              f"{brute_s * 1e3:8.3f} {llg[0]:8.3f} {llg[1]:8.3f}")
    print("ns/node: the walk less the cost of an empty call; mask: clear + walk + duplicates; brute: every token "
          "through the recognizer; llg: llguidance, first mask of a fresh matcher (median), default slices; "
          "llg-0: slices off")


#: bytes read between cold calls: more than this machine's caches
EVICT_BYTES = 64 << 20


def _evictor():
    other = np.ones(EVICT_BYTES // 8, dtype=np.int64)
    return lambda: int(other.sum())


def _llguidance_ms(vocab_name: str, recognizer: str, slices, repeat: int) -> float:
    from bpebench.algorithms.trie import llguidance_peer

    if not llguidance_peer.available():
        return float("nan")
    masker = llguidance_peer.LlguidanceMasker(load_vocabulary(vocab_name), builtin_regex(recognizer), slices=slices)
    return statistics.median(masker.first_fill_seconds(repeat)) * 1e3


# ----------------------------------------------------------------------------- longest match
@njit(cache=True)
def dfs_greedy(nodes, first, no_token, token_len, data, out):
    """``greedy_pieces`` on one piece with the DFS trie's longest match."""
    n = 0
    i = 0
    end = len(data)
    while i < end:
        token = dfs_longest_match(nodes, first, no_token, data, i, end)
        if token < 0:
            return -1 - i
        out[n] = token
        n += 1
        i += token_len[token]
    return n


def longest_match(repeat: int) -> None:
    from bpebench.algorithms.core.registry import make_encoder
    from bpebench.algorithms.kernels.compiled import NEVER, compile_vocabulary
    from bpebench.benchmarks import common

    print("\n2. greedy longest match over 1 MB, double-array trie (matching.py) vs DFS trie (interleaved)")
    print(f"{'vocabulary':12} {'text':14} {'double-array ms':>15} {'DFS trie ms':>12} {'token_tree ms':>13} "
          f"{'DFS / double-array':>18}")
    for vocab_name in VOCABS:
        vocab = load_vocabulary(vocab_name)
        tables = compile_vocabulary(vocab)
        # the tokens greedy matches: the ones BPE can produce
        trie = dfs_trie_from_tokens([t if p < NEVER else None for t, p in zip(vocab.tokens, tables.priority)])
        first = root_children(trie)
        greedy = make_encoder("greedy", vocab)
        token_tree = make_encoder("token_tree", vocab)
        texts = {"prose-en": common.text("prose-en", 1_000_000).encode(),
                 "random tokens": random_token_text(vocab, 1_000_000, seed=5)}
        for label, data in texts.items():
            arr = np.frombuffer(data, dtype=np.uint8)
            offsets = np.array([0, len(arr)], dtype=np.int64)
            out = np.empty(len(arr), dtype=np.int32)
            n = dfs_greedy(trie.nodes, first, trie.n_tokens, tables.token_len, arr, out)
            assert out[:n].tolist() == greedy.encode(data)
            result = interleaved({
                "double": lambda: greedy._kernel(arr, offsets, out),
                "dfs": lambda: dfs_greedy(trie.nodes, first, trie.n_tokens, tables.token_len, arr, out),
                "tree": lambda: token_tree._kernel(arr, offsets, out),
            }, repeat)
            double, dfs, tree = (result[k][0] for k in ("double", "dfs", "tree"))
            print(f"{vocab_name:12} {label:14} {double * 1e3:15.2f} {dfs * 1e3:12.2f} {tree * 1e3:13.2f} "
                  f"{dfs / double:18.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--only", choices=["masks", "longest-match"])
    args = parser.parse_args(argv)
    if args.only in (None, "masks"):
        masks(args.repeat)
    if args.only in (None, "longest-match"):
        longest_match(max(3, args.repeat // 3))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
