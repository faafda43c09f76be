"""``bpebench mask``: the tokens of a vocabulary that a regex or built-in recognizer allows.

    bpebench mask --vocab o200k_base --recognizer digits
    bpebench mask --vocab cl100k_base --regex '[a-z_][a-z0-9_]*' --show 20
    bpebench mask --vocab o200k_base --recognizer json-string --after '\\u00'   # inside an escape
    bpebench mask --vocab o200k_base --recognizer identifier --compare       # + brute force, llguidance

Prints the allowed count, the trie nodes the walk visited and the time of one mask
(median of ``--repeat`` after a first call that loads the compiled walk); with
``--compare`` also brute force (every token through the recognizer) and llguidance
when installed, with whether their masks equal ours.
"""

from __future__ import annotations

import statistics
import time

from bpebench.errors import BpebenchError


def _median_seconds(call, repeat: int) -> float:
    from bpebench.reports.timing import measure

    return measure(call, warmup=0, repeats=repeat, min_repeats=repeat, budget_s=float("inf")).median


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def cmd_mask(args) -> int:
    import numpy as np

    from bpebench.algorithms.formats import load_vocabulary

    from .dfs_trie import build_dfs_trie, surface_tokens
    from .masks import BruteForceMasker, TokenMasker
    from .recognizers import BUILTIN, builtin_regex, from_regex, get_recognizer

    if args.repeat < 1:
        raise BpebenchError(f"--repeat must be at least 1, got {args.repeat}")
    vocab = load_vocabulary(args.vocab)
    started = time.perf_counter()
    trie = build_dfs_trie(vocab)
    built = time.perf_counter() - started
    started = time.perf_counter()
    recognizer = get_recognizer(args.recognizer) if args.recognizer else from_regex(args.regex)
    made = time.perf_counter() - started
    state = None
    if args.after is not None:
        state = recognizer.run(args.after.encode("utf-8", "surrogateescape"))
        if state < 0:
            raise BpebenchError(f"the recognizer allows nothing after {args.after!r} (no accepted text starts so)")
    masker = TokenMasker(trie, recognizer)
    started = time.perf_counter()
    mask = masker.mask(state)
    first = time.perf_counter() - started
    took = _median_seconds(lambda: masker.fill(state), args.repeat)
    allowed = np.flatnonzero(mask)
    source = BUILTIN[args.recognizer][0] if args.recognizer else args.regex
    print(f"vocabulary: {vocab.name}: {len(vocab.tokens)} tokens, DFS trie of {len(trie)} nodes "
          f"(built in {built:.2f} s)")
    print(f"recognizer: {recognizer.name}: {source} ({recognizer.n_states} states, built in {made * 1e3:.1f} ms)"
          + (f", after {args.after!r}" if args.after is not None else ""))
    print(f"allowed:    {len(allowed)} of {len(vocab.tokens)} tokens")
    print(f"visited:    {masker.visited} trie nodes")
    print(f"mask:       {_ms(took)} (median of {args.repeat}; first call {_ms(first)})")
    if args.compare:
        brute = BruteForceMasker(surface_tokens(vocab), recognizer)
        same = (brute.mask(state) == mask).all()
        print(f"brute force: {_ms(_median_seconds(lambda: brute.fill(state), args.repeat))}, "
              f"{'same mask' if same else 'DIFFERENT MASK'}")
        _compare_llguidance(args, vocab, mask, builtin_regex(args.recognizer) if args.recognizer else args.regex)
    if args.show:
        spelled = surface_tokens(vocab)
        shown = " ".join(repr(spelled[i].decode("utf-8", "backslashreplace")) for i in allowed[: args.show])
        print(f"tokens:     {shown}" + (" ..." if len(allowed) > args.show else ""))
    return 0


def _compare_llguidance(args, vocab, mask, regex: str) -> None:
    from . import llguidance_peer

    if args.after is not None:
        print("llguidance: not compared after --after (its matcher would need the text as tokens)")
        return
    if not llguidance_peer.available():
        print("llguidance: not installed (pip install llguidance)")
        return
    masker = llguidance_peer.LlguidanceMasker(vocab, regex)
    theirs = masker.mask()
    if masker.forced_bytes():
        print(f"llguidance: the regex forces {masker.forced_bytes()!r}; llguidance then allows only its own "
              "tokenization of those bytes, so the masks are not comparable")
        return
    seconds = statistics.median(masker.first_fill_seconds(args.repeat))
    print(f"llguidance: {_ms(seconds)} (first mask of a fresh matcher, median of {args.repeat}), "
          f"{'same mask' if (theirs == mask).all() else f'DIFFERENT MASK on {int((theirs != mask).sum())} ids'}")


def register(subparsers) -> None:
    p = subparsers.add_parser("mask", help="the tokens a regex or recognizer allows (DFS trie walk)",
                              description="Compute the allowed-token mask of a byte-level recognizer over a "
                                          "vocabulary: the tokens whose bytes can continue towards a match.")
    p.add_argument("--vocab", required=True, help="vocabulary name or tokenizer file")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--regex", help="a regex the whole text must match (Python syntax, no anchors)")
    which.add_argument("--recognizer", help="a built-in recognizer: identifier, json-string, digits, keywords")
    p.add_argument("--after", metavar="TEXT", help="the mask after TEXT has been read (default: at the start)")
    p.add_argument("--repeat", type=int, default=20, help="masks to time (median; default 20)")
    p.add_argument("--show", type=int, default=10, metavar="N", help="print the first N allowed tokens (default 10)")
    p.add_argument("--compare", action="store_true", help="also brute force and llguidance, and check they agree")
    p.set_defaults(func=cmd_mask)
