"""From stored rows to the numbers a reader wants: exponents, throughput, ratios, verdicts.

Pure functions over the DataFrames of :class:`~bpebench.reports.store.ResultStore`
(nothing is measured here). Scaling exponents are least-squares slopes of
log(time) against log(size) over the larger measured sizes, where
fixed per-call overhead no longer dominates. Ratios to tiktoken use the peer
whose name starts with ``tiktoken`` on the same vocabulary and corpus.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

BASELINE = "tiktoken"


def is_baseline(name: str) -> bool:
    return name.lower().startswith(BASELINE)


def measured(timings: pd.DataFrame) -> pd.DataFrame:
    """Rows with a timing (skipped and failed rows removed)."""
    return timings[timings["median_s"].notna() & (timings["median_s"] > 0)]


def fit_exponent(sizes, seconds) -> float | None:
    """Slope of log(seconds) vs log(size) over the larger sizes (the largest two of up to 3 points,
    else all but the smallest third).

    >>> round(fit_exponent([10, 100, 1000, 10000], [1e-6, 1e-5, 1e-4, 1e-3]), 3)
    1.0
    >>> round(fit_exponent([100, 1000, 10000], [1e-5, 1e-3, 1e-1]), 3)
    2.0
    """
    points = sorted((float(s), float(t)) for s, t in zip(sizes, seconds) if s > 0 and t > 0)
    if len(points) < 2:
        return None
    upper = points[len(points) // 3 :] if len(points) > 3 else points[-2:]  # drop the overhead-bound smallest
    x = np.log([p[0] for p in upper])
    y = np.log([p[1] for p in upper])
    if np.ptp(x) == 0:
        return None
    slope = np.polyfit(x, y, 1)[0]
    return float(slope)


def exponents(timings: pd.DataFrame, stage: str) -> pd.DataFrame:
    """vocab, corpus, subject, kind, exponent, sizes, largest measured size, skipped sizes."""
    rows = []
    stage_rows = timings[timings["stage"] == stage]
    for (vocab, corpus, subject), group in stage_rows.groupby(["vocab", "corpus", "subject"], sort=False):
        ok = measured(group)
        skipped = group[group["median_s"].isna() & group["note"].str.startswith("skipped")]
        failed = group[group["note"].str.startswith("error")]
        if ok.empty and failed.empty:
            continue  # nothing measured at any size: not applicable (e.g. a peer that cannot run raw BPE)
        rows.append({
            "vocab": vocab, "corpus": corpus, "subject": subject, "kind": group["kind"].iloc[0],
            "exponent": fit_exponent(ok["size_bytes"], ok["median_s"]),
            "points": len(ok),
            "largest": int(ok["size_bytes"].max()) if len(ok) else None,
            "largest_s": float(ok.loc[ok["size_bytes"].idxmax(), "median_s"]) if len(ok) else None,
            "skipped_from": int(skipped["size_bytes"].min()) if len(skipped) else None,
            "error": failed["note"].iloc[0] if len(failed) else "",
            "error_at": int(failed["size_bytes"].min()) if len(failed) and failed["size_bytes"].notna().any() else None,
        })
    return pd.DataFrame(rows, columns=["vocab", "corpus", "subject", "kind", "exponent", "points", "largest",
                                       "largest_s", "skipped_from", "error", "error_at"])


def throughput(timings: pd.DataFrame) -> pd.DataFrame:
    """Pipeline throughput per vocab x corpus x subject: MB/s, tokens/s, ratio to tiktoken (>1 = faster)."""
    rows = measured(timings[timings["stage"] == "throughput"]).copy()
    if rows.empty:
        return pd.DataFrame(columns=["vocab", "corpus", "subject", "kind", "size_bytes", "tokens", "median_s",
                                     "spread", "mb_s", "tokens_s", "vs_tiktoken"])
    rows["mb_s"] = rows["size_bytes"] / rows["median_s"] / 1e6
    rows["tokens_s"] = rows["tokens"] / rows["median_s"]
    rows["spread"] = (rows["q3_s"] - rows["q1_s"]) / rows["median_s"]
    ratios = []
    for _, row in rows.iterrows():
        same = rows[(rows["vocab"] == row["vocab"]) & (rows["corpus"] == row["corpus"])]
        base = same[same["subject"].map(is_baseline)]
        ratios.append(float(base["median_s"].iloc[0] / row["median_s"]) if len(base) else math.nan)
    rows["vs_tiktoken"] = ratios
    return rows[["vocab", "corpus", "subject", "kind", "size_bytes", "tokens", "median_s", "spread", "mb_s",
                 "tokens_s", "vs_tiktoken"]].reset_index(drop=True)


def histogram(cell: str) -> dict[int, int]:
    """The count-difference histogram stored in ``agreement.csv`` ({"-1": 3, "0": 97} -> {-1: 3, 0: 97})."""
    if not cell:
        return {}
    try:
        return {int(k): int(v) for k, v in json.loads(cell).items()}
    except (ValueError, AttributeError):
        return {}


def agreement_summary(agreement: pd.DataFrame) -> pd.DataFrame:
    """Per vocab x subject x mode: inputs, exact matches, match rate, token-count change, invalid inputs."""
    ok = agreement[agreement["inputs"].notna()]
    rows = []
    for (vocab, subject, mode), group in ok.groupby(["vocab", "subject", "mode"], sort=False):
        inputs, same = int(group["inputs"].sum()), int(group["exact_matches"].sum())
        ref, got = group["reference_tokens"].sum(), group["subject_tokens"].sum()
        rows.append({"vocab": vocab, "subject": subject, "kind": group["kind"].iloc[0], "mode": mode,
                     "declared_exact": group["declared_exact"].iloc[0], "inputs": inputs, "exact_matches": same,
                     "match_rate": same / inputs if inputs else math.nan,
                     "token_change": (got - ref) / ref if ref else math.nan,
                     "invalid_inputs": int(group["invalid_inputs"].fillna(0).sum()),
                     "corpora": group["corpus"].nunique()})
    return pd.DataFrame(rows, columns=["vocab", "subject", "kind", "mode", "declared_exact", "inputs",
                                       "exact_matches", "match_rate", "token_change", "invalid_inputs", "corpora"])


def conformance_latest(conformance: pd.DataFrame) -> pd.DataFrame:
    """One row per subject x check (the last one written wins; the "(all)" markers dropped)."""
    rows = conformance[conformance["check"] != "(all)"]
    return rows.drop_duplicates(subset=["vocab", "subject", "check"], keep="last").reset_index(drop=True)


def geometric_mean(values) -> float:
    values = [v for v in values if v and v > 0 and not math.isnan(v)]
    return float(math.exp(sum(map(math.log, values)) / len(values))) if values else math.nan
