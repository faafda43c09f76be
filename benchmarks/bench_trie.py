"""Allowed-token masks over the DFS trie (seed 003): ours, brute force and llguidance.

Parameters: the vocabulary (o200k_base, cl100k_base) and a built-in recognizer
(``identifier``, ``json-string``, ``digits``, ``keywords``; see
``bpebench.algorithms.trie.recognizers``).

* ``Mask.time_mask``: one whole mask (clear, walk, duplicates) of ``dfs_trie``, or
  of ``brute_force`` (every token run through the recognizer, numba);
* ``NodeCost``: the walk alone, per visited node, less the cost of an empty call:
  ``track_ns_per_node`` and ``track_cycles_per_node`` (ns x the clock
  ``/proc/cpuinfo`` states; the seed reports 13 for llguidance's toktrie on an AMD
  EPYC 7V13), and ``track_visited_nodes``;
* ``Llguidance.track_first_mask_seconds``: llguidance's first mask of a fresh matcher
  (a matcher keeps the masks it has computed, so asv's repeated calls of a ``time_``
  method would time a copy), median of seven, with its default slices and with none;
* ``TrieBuild.time_build``: the DFS trie from a token list.
"""

from __future__ import annotations

import statistics

from bpebench.algorithms.trie.dfs_trie import build_dfs_trie, dfs_trie_from_tokens, surface_tokens
from bpebench.algorithms.trie.masks import BruteForceMasker, TokenMasker
from bpebench.algorithms.trie.recognizers import BUILTIN, builtin_regex, get_recognizer

from . import common
from .quick_exact import median_time

VOCABS = ["o200k_base", "cl100k_base"]
RECOGNIZERS = list(BUILTIN)
#: walks timed per NodeCost figure (median)
WALKS = 31


def _masker(vocab: str, recognizer: str) -> TokenMasker:
    masker = TokenMasker(build_dfs_trie(common.vocabulary(vocab)), get_recognizer(recognizer))
    masker.fill()
    return masker


class TrieBuild:
    params = [VOCABS]
    param_names = ["vocabulary"]
    timeout = 120

    def setup(self, vocab):
        self.tokens = surface_tokens(common.vocabulary(vocab))
        dfs_trie_from_tokens(self.tokens[:300])  # compiled once, not timed

    def time_build(self, vocab):
        dfs_trie_from_tokens(self.tokens)

    def track_nodes(self, vocab):
        return len(build_dfs_trie(common.vocabulary(vocab)))

    track_nodes.unit = "nodes"


class Mask:
    params = [VOCABS, RECOGNIZERS, ["dfs_trie", "brute_force"]]
    param_names = ["vocabulary", "recognizer", "implementation"]
    timeout = 120

    def setup(self, vocab, recognizer, implementation):
        if implementation == "dfs_trie":
            self.fill = _masker(vocab, recognizer).fill
        else:
            brute = BruteForceMasker.for_vocabulary(common.vocabulary(vocab), get_recognizer(recognizer))
            brute.fill()
            self.fill = brute.fill

    def time_mask(self, vocab, recognizer, implementation):
        self.fill()


class NodeCost:
    params = [VOCABS, RECOGNIZERS]
    param_names = ["vocabulary", "recognizer"]
    timeout = 120

    def setup(self, vocab, recognizer):
        masker = _masker(vocab, recognizer)
        walk = median_time(masker.walk, WALKS)
        call = median_time(lambda: masker.walk(-1), WALKS)
        self.visited = masker.visited
        self.ns = max(walk - call, 0.0) / max(self.visited, 1) * 1e9

    def track_ns_per_node(self, vocab, recognizer):
        return self.ns

    track_ns_per_node.unit = "ns"

    def track_cycles_per_node(self, vocab, recognizer):
        from bpebench.reports.environment import cpu_mhz

        mhz = cpu_mhz()
        if mhz is None:
            raise NotImplementedError("no clock in /proc/cpuinfo")
        return self.ns * mhz / 1e3

    track_cycles_per_node.unit = "cycles"

    def track_visited_nodes(self, vocab, recognizer):
        return self.visited

    track_visited_nodes.unit = "nodes"


class Llguidance:
    params = [VOCABS, RECOGNIZERS, ["default", "none"]]
    param_names = ["vocabulary", "recognizer", "slices"]
    timeout = 300

    def setup(self, vocab, recognizer, slices):
        from bpebench.algorithms.trie import llguidance_peer

        if not llguidance_peer.available():
            raise NotImplementedError("llguidance is not installed")
        self.masker = llguidance_peer.LlguidanceMasker(common.vocabulary(vocab), builtin_regex(recognizer),
                                                       slices=None if slices == "default" else [])

    def track_first_mask_seconds(self, vocab, recognizer, slices):
        return statistics.median(self.masker.first_fill_seconds(7))

    track_first_mask_seconds.unit = "seconds"


if common.preloading():
    for _vocab in VOCABS:
        try:
            build_dfs_trie(common.vocabulary(_vocab))
        except NotImplementedError:
            pass
