"""Compare two result directories: ratio new/old per measurement, regressions flagged.

Timings are matched on their key (stage, vocabulary, subject, corpus, operation,
size). A measurement is flagged ``slower`` when ``new / old`` exceeds the
threshold factor *and* the interquartile ranges do not overlap (so noise alone
is not flagged), ``faster`` in the mirror case. Agreement with naive is matched
per (vocabulary, subject, mode, corpus): any drop in exact matches is a
regression. Conformance checks that passed before and fail now are regressions.
O(rows) with pandas merges.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bpebench.errors import BpebenchError

from .analysis import measured
from .html import esc, page, ratio, seconds, table
from .store import KEY_COLUMNS, ResultStore, write_atomically

TIMING_KEY = list(KEY_COLUMNS["timings.csv"])


@dataclass
class Comparison:
    old: Path
    new: Path
    threshold: float
    timings: pd.DataFrame  # key columns, old_s, new_s, ratio, flag
    correctness: pd.DataFrame  # vocab, subject, mode/check, corpus, old, new, flag

    @property
    def regressions(self) -> int:
        return int((self.timings["flag"] == "slower").sum() + (self.correctness["flag"] == "regression").sum())

    def to_text(self) -> str:
        lines = [f"comparing {self.new} (new) with {self.old} (old); flagged beyond x{self.threshold:g} "
                 "when the quartile ranges do not overlap"]
        t = self.timings
        if t.empty:
            lines.append("no timing measured in both runs")
        else:
            flagged = t[t["flag"] != ""]
            lines.append(f"{len(t)} timings in both runs: {int((t['flag'] == 'slower').sum())} slower, "
                         f"{int((t['flag'] == 'faster').sum())} faster, geometric-mean ratio "
                         f"{_geomean(t['ratio']):.3f}")
            shown = pd.concat([flagged, t[t["flag"] == ""]]).head(40 if len(flagged) <= 40 else len(flagged))
            width = max([len(_label(r)) for _, r in shown.iterrows()] + [10])
            lines.append(f"  {'measurement':<{width}}  {'old':>10}  {'new':>10}  {'new/old':>8}  flag")
            for _, r in shown.iterrows():
                lines.append(f"  {_label(r):<{width}}  {seconds(r['old_s']):>10}  {seconds(r['new_s']):>10}  "
                             f"{r['ratio']:>8.3f}  {r['flag']}")
            if len(t) > len(shown):
                lines.append(f"  ... {len(t) - len(shown)} more unflagged rows in compare.html")
        for _, r in self.correctness[self.correctness["flag"] != ""].iterrows():
            lines.append(f"  {r['what']}: {r['old']} -> {r['new']}  {r['flag']}")
        lines.append(f"{self.regressions} regression(s)")
        return "\n".join(lines)


def _label(row) -> str:
    size = f" {int(row['size_bytes'])}B" if row["size_bytes"] else ""
    corpus = f" {row['corpus']}" if row["corpus"] else ""
    return f"{row['stage']}/{row['vocab']}/{row['subject']}{corpus} {row['operation']}{size}"


def _geomean(values: pd.Series) -> float:
    import numpy as np

    values = values[values > 0]
    return float(np.exp(np.log(values).mean())) if len(values) else float("nan")


def _load(directory: Path) -> ResultStore:
    store = ResultStore(directory)
    if not store.has_results():
        raise BpebenchError(f"{directory}: no results (expected timings.csv / agreement.csv from bpebench report)")
    return store


def compare_dirs(old: Path, new: Path, *, threshold: float = 1.25) -> Comparison:
    old_store, new_store = _load(Path(old)), _load(Path(new))
    a = measured(old_store.frame("timings.csv"))
    b = measured(new_store.frame("timings.csv"))
    both = a.merge(b, on=TIMING_KEY, suffixes=("_old", "_new"))
    timings = pd.DataFrame({
        **{k: both[k] for k in TIMING_KEY},
        "old_s": both["median_s_old"], "new_s": both["median_s_new"],
        "ratio": both["median_s_new"] / both["median_s_old"],
    })
    flags = []
    for _, r in both.iterrows():
        ratio_value = r["median_s_new"] / r["median_s_old"]
        if ratio_value > threshold and r["q1_s_new"] > r["q3_s_old"]:
            flags.append("slower")
        elif ratio_value < 1 / threshold and r["q3_s_new"] < r["q1_s_old"]:
            flags.append("faster")
        else:
            flags.append("")
    timings["flag"] = flags
    timings = timings.sort_values("ratio", ascending=False).reset_index(drop=True)
    return Comparison(Path(old), Path(new), threshold, timings, _correctness(old_store, new_store))


def _correctness(old_store: ResultStore, new_store: ResultStore) -> pd.DataFrame:
    rows = []
    a, b = old_store.frame("agreement.csv"), new_store.frame("agreement.csv")
    key = list(KEY_COLUMNS["agreement.csv"])
    for _, r in a.merge(b, on=key, suffixes=("_old", "_new")).iterrows():
        old_rate = r["exact_matches_old"] / r["inputs_old"] if r["inputs_old"] else None
        new_rate = r["exact_matches_new"] / r["inputs_new"] if r["inputs_new"] else None
        if old_rate is None or new_rate is None or pd.isna(old_rate) or pd.isna(new_rate):
            continue
        flag = "regression" if new_rate < old_rate else "improved" if new_rate > old_rate else ""
        rows.append({"what": f"agreement {r['vocab']}/{r['subject']}/{r['corpus']} ({r['mode']})",
                     "old": f"{100 * old_rate:.1f}%", "new": f"{100 * new_rate:.1f}%", "flag": flag})
    a, b = old_store.frame("conformance.csv"), new_store.frame("conformance.csv")
    key = list(KEY_COLUMNS["conformance.csv"])
    a = a.drop_duplicates(subset=key, keep="last")
    b = b.drop_duplicates(subset=key, keep="last")
    for _, r in a.merge(b, on=key, suffixes=("_old", "_new")).iterrows():
        if r["check"] == "(all)":
            continue
        old_ok = r["status_old"].lower() == "pass"
        new_bad = r["status_new"].lower() in ("fail", "error")
        flag = "regression" if old_ok and new_bad else ""
        if r["status_old"] != r["status_new"]:
            rows.append({"what": f"conformance {r['subject']}/{r['check']} ({r['vocab']})",
                         "old": r["status_old"], "new": r["status_new"], "flag": flag or "changed"})
    return pd.DataFrame(rows, columns=["what", "old", "new", "flag"])


def render_comparison(comparison: Comparison, path: Path) -> Path:
    """Write the comparison as a small HTML page."""
    t = comparison.timings
    rows, classes = [], []
    for _, r in t.iterrows():
        cls = "bad" if r["flag"] == "slower" else "good" if r["flag"] == "faster" else ""
        rows.append([esc(r["stage"]), esc(r["vocab"]), esc(r["subject"]), esc(r["corpus"]), esc(r["operation"]),
                     esc(int(r["size_bytes"]) if r["size_bytes"] else ""), seconds(r["old_s"]), seconds(r["new_s"]),
                     (ratio(r["ratio"]), cls), (esc(r["flag"]), cls)])
    body = [f"<h1>bpebench comparison</h1><p class='lede'>new: {esc(comparison.new)} · old: {esc(comparison.old)} "
            f"· flagged beyond ×{comparison.threshold:g} when the quartile ranges do not overlap · "
            f"{comparison.regressions} regression(s)</p>"]
    body.append("<section id='timings'><h2>Timings (sorted by new/old)</h2>"
                + table(["stage", "vocabulary", "subject", "corpus", "operation", "bytes", "old", "new", "new/old",
                         "flag"], rows, text_columns=5) + "</section>")
    c = comparison.correctness
    crow = [[esc(r["what"]), esc(r["old"]), esc(r["new"]),
             (esc(r["flag"]), "bad" if r["flag"] == "regression" else "")] for _, r in c.iterrows()]
    body.append("<section id='correctness'><h2>Correctness changes</h2>"
                + (table(["what", "old", "new", "flag"], crow) if crow else "<p class='note'>none</p>") + "</section>")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, page("bpebench comparison", "".join(body)).encode("utf-8"))
    return path
