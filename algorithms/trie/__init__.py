"""The flat token trie in depth-first order (seed ``003``) and what it computes.

* :mod:`.dfs_trie`: the trie of every token's bytes laid out as one array of 8-byte
  nodes in depth-first order (byte, token id, subtree size, parents to pop), built
  from any :class:`~bpebench.algorithms.formats.vocabulary.Vocabulary`;
* :mod:`.recognizers`: byte-level recognizers (DFAs over bytes) from a regex or a
  keyword set, and the built-in ones the benchmarks use;
* :mod:`.masks`: the boolean mask of the tokens a recognizer allows, by the seed's
  non-recursive traversal, with the recursive and brute-force references beside it;
* :mod:`.llguidance_peer`: the same masks computed by ``llguidance`` (toktrie), for
  parity tests and benchmarks.

This is infrastructure, not an encoder: nothing here registers one.
"""
