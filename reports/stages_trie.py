"""Token-mask stage (seed 003): the DFS trie against brute force and llguidance, and its section.

For each vocabulary of the run and each built-in recognizer
(:data:`bpebench.algorithms.trie.recognizers.BUILTIN`: any identifier, JSON string
contents, digits only, a fixed keyword set), rows of ``timings.csv`` with stage
``trie``, the recognizer as ``corpus`` and, as ``size_bytes``, the number of trie
nodes the walk visits (the work of a mask; the same for every subject of a
recognizer), ``tokens`` the number of allowed tokens:

* ``(dfs trie)``: ``mask`` (clear the buffer, walk, copy duplicates), ``walk`` (the
  walk alone) and ``call`` (the same call with a dead start state: the cost of
  calling numba from Python, subtracted from ``walk`` for the time per node);
* ``(brute force)``: ``mask``, every token run through the recognizer (numba);
* ``(llguidance)`` and ``(llguidance, no slices)``: ``first_mask``, the first mask of
  a fresh matcher (llguidance keeps a mask it has computed), with its default
  "slices" and with none (a plain trie walk);
* ``build`` rows: the DFS trie from the token list, llguidance's tokenizer.

The section shows ms per mask and ns and cycles per visited node next to the
seed's 13 cycles (cycles = ns x the clock ``/proc/cpuinfo`` states, from the run's
environment). Subjects are named in parentheses: they are not encoders, and the
report's encoder and peer sections leave them out.
"""

from __future__ import annotations

import math
import time

from .html import esc, missing, number, seconds, table
from .tasks import RunContext, Task, stage
from .timing import Timing, measure

DFS = "(dfs trie)"
BRUTE = "(brute force)"
LLGUIDANCE = {"(llguidance)": None, "(llguidance, no slices)": []}
#: cycles per visited node the seed (003) reports for llguidance's toktrie on an AMD EPYC 7V13
SEED_CYCLES_PER_NODE = 13


def _key(vocab: str, subject: str, recognizer: str, operation: str, size: int) -> dict:
    return {"stage": "trie", "vocab": vocab, "subject": subject, "kind": "mask", "corpus": recognizer,
            "operation": operation, "size_bytes": size}


def _timed(ctx: RunContext, call) -> dict:
    return measure(call, repeats=ctx.plan.repeats, budget_s=ctx.plan.budget_s).row()


def _row(ctx: RunContext, call, allowed: int) -> dict:
    return {**_timed(ctx, call), "tokens": allowed}


@stage("trie", "Token masks over the DFS trie")
def trie_tasks(ctx: RunContext) -> list[Task]:
    from bpebench.algorithms.trie import llguidance_peer
    from bpebench.algorithms.trie.dfs_trie import build_dfs_trie, dfs_trie_from_tokens, surface_tokens
    from bpebench.algorithms.trie.masks import BruteForceMasker, TokenMasker
    from bpebench.algorithms.trie.recognizers import BUILTIN, builtin_regex, get_recognizer

    tasks: list[Task] = []
    if not llguidance_peer.available():
        ctx.note("trie", "llguidance is not installed (pip install llguidance): its columns are empty")
    for vocab_name in ctx.vocab_names:
        vocab = ctx.vocab(vocab_name)
        tokens = surface_tokens(vocab)
        trie = build_dfs_trie(vocab)
        tasks.append(Task("timings.csv", _key(vocab_name, DFS, "", "build", len(trie)), f"{vocab_name} DFS trie build",
                          lambda t=tokens: _timed(ctx, lambda: dfs_trie_from_tokens(t))))
        if llguidance_peer.available():
            tasks.append(Task("timings.csv", _key(vocab_name, "(llguidance)", "", "build", 0),
                              f"{vocab_name} llguidance tokenizer", lambda v=vocab: _llguidance_build(v)))
        for name in BUILTIN:
            recognizer = get_recognizer(name)
            masker = TokenMasker(trie, recognizer)
            allowed = masker.count()
            visited = masker.visited
            label = f"{vocab_name} {name}"
            tasks += [
                Task("timings.csv", _key(vocab_name, DFS, name, "mask", visited), f"{label} DFS mask",
                     lambda m=masker, a=allowed: _row(ctx, m.fill, a)),
                Task("timings.csv", _key(vocab_name, DFS, name, "walk", visited), f"{label} DFS walk",
                     lambda m=masker, a=allowed: _row(ctx, m.walk, a)),
                Task("timings.csv", _key(vocab_name, DFS, name, "call", visited), f"{label} empty call",
                     lambda m=masker, a=allowed: _row(ctx, lambda: m.walk(-1), a)),
                Task("timings.csv", _key(vocab_name, BRUTE, name, "mask", visited), f"{label} brute force",
                     lambda r=recognizer, t=tokens, a=allowed: _row(ctx, BruteForceMasker(t, r).fill, a)),
            ]
            if llguidance_peer.available():
                for subject, slices in LLGUIDANCE.items():
                    tasks.append(Task("timings.csv", _key(vocab_name, subject, name, "first_mask", visited),
                                      f"{label} {subject}",
                                      lambda v=vocab, rx=builtin_regex(name), s=slices, m=masker:
                                      _llguidance_mask(ctx, v, rx, s, m)))
    return tasks


def _llguidance_build(vocab) -> dict:
    from bpebench.algorithms.trie.llguidance_peer import llguidance_tokenizer

    start = time.perf_counter()
    llguidance_tokenizer(vocab)
    return Timing((time.perf_counter() - start,)).row()


def _llguidance_mask(ctx: RunContext, vocab, regex: str, slices, ours) -> dict:
    from bpebench.algorithms.trie.llguidance_peer import LlguidanceMasker

    masker = LlguidanceMasker(vocab, regex, slices=slices)
    theirs = masker.mask()
    note = "" if (theirs == ours.mask()).all() else f"differs from ours on {int((theirs != ours.mask()).sum())} ids"
    samples = masker.first_fill_seconds(ctx.plan.repeats)
    return {**Timing(tuple(samples)).row(), "tokens": int(theirs.sum()), "note": note}


# ----------------------------------------------------------------------------- section
def trie_section(report) -> str:
    """The page's section: one table per vocabulary (see the module docstring)."""
    rows_all = report.timings[report.timings["stage"] == "trie"] if len(report.timings) else report.timings
    intro = ("<p>The allowed-token mask of a byte-level recognizer (a DFA over bytes): the tokens whose bytes "
             "can continue towards an accepted string. <i>visited</i>: trie nodes the seed's non-recursive walk "
             "reads (a dead byte skips its whole subtree); <i>ns/node</i>: the walk alone, less the cost of an "
             f"empty call, per visited node; the seed reports {SEED_CYCLES_PER_NODE} cycles per node for "
             "llguidance's toktrie on an AMD EPYC 7V13. llguidance: the first mask of a fresh matcher (it keeps "
             "the masks it has computed), with its precomputed token classes (<i>slices</i>) and without.</p>")
    if rows_all.empty:
        return intro + '<p class="note">Not measured in this run (stage <code>trie</code>).</p>'
    mhz = (report.meta.get("environment", {}) or {}).get("cpu_mhz")
    out = [intro]
    headers = ["recognizer", "allowed", "visited", "DFS mask", "ns/node", "cycles/node", "brute force",
               "llguidance", "llguidance, no slices"]
    for vocab, rows in rows_all.groupby("vocab", sort=False):
        cell = {(r["subject"], r["corpus"], r["operation"]): r for _, r in rows.iterrows()}
        body = []
        for recognizer in dict.fromkeys(r for r in rows["corpus"] if r):
            def median(subject, operation, rec=recognizer):
                r = cell.get((subject, rec, operation))
                return None if r is None or missing(r["median_s"]) else float(r["median_s"])

            mask = cell.get((DFS, recognizer, "mask"))
            visited = float(mask["size_bytes"]) if mask is not None else math.nan
            walk, call = median(DFS, "walk"), median(DFS, "call")
            net = walk - (call or 0.0) if walk is not None else 0.0
            ns = net / visited * 1e9 if net > 0 and visited > 0 else None  # else too small to tell from the call
            body.append([esc(recognizer), number(mask["tokens"] if mask is not None else None),
                         number(visited), seconds(median(DFS, "mask")), number(ns),
                         number(ns * mhz / 1e3 if ns is not None and mhz else None),
                         seconds(median(BRUTE, "mask")), *(seconds(median(s, "first_mask")) for s in LLGUIDANCE)])
        build = cell.get((DFS, "", "build"))
        caption = f"<h3>{esc(vocab)}</h3>"
        if build is not None:
            caption += (f"<p>DFS trie: {number(build['size_bytes'])} nodes of 8 bytes, built in "
                        f"{seconds(build['median_s'])}; llguidance's tokenizer built in "
                        f"{seconds(cell[('(llguidance)', '', 'build')]['median_s']) if ('(llguidance)', '', 'build') in cell else '–'}.</p>")
        out.append(caption + table(headers, body))
    clock = (f"cycles = ns × {mhz:.0f} MHz, the clock /proc/cpuinfo states (not a cycle counter)" if mhz
             else "no clock known for this machine: cycles not shown")
    notes = [n for n in rows_all["note"] if isinstance(n, str) and n]
    out.append(f'<p class="note">{esc(clock)}.</p>' + "".join(f'<p class="note">{esc(n)}</p>' for n in notes))
    out.append(report.section_notes("trie"))
    return "".join(out)
