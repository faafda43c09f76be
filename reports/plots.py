"""The report's charts (matplotlib, Agg backend), each saved as a PNG beside ``index.html``.

Every subject keeps one colour across all charts; our encoders are solid lines,
peers dashed. Runtime charts are log-log with the fitted scaling exponent in the
legend. Each function returns the file name it wrote, or None when there was
nothing to draw. Cost: O(points) per chart plus matplotlib's fixed overhead.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .analysis import fit_exponent, measured  # noqa: E402

DPI = 110
SIZE = (9.0, 4.6)
#: throughput panels (one per corpus) per row of the figure
PANELS_PER_ROW = 4


#: one colour per known subject, the same in every report whatever else is measured: built-in
#: encoders first, then the peers (tab20's pairs split so that no two neighbours look alike)
_FIXED_NAMES = ("backtracking", "table", "heap", "appending", "prepending", "interval", "naive", "greedy",
                "minimal", "token_tree", "tiktoken", "hf-tokenizers", "sentencepiece", "bpe-openai", "quicktok",
                "rs-bpe", "gigatoken", "gigatoken-tiktoken", "fastokens", "toktok", "splintr", "tokie", "kitoken",
                "llguidance")


def _fixed_colours() -> dict[str, tuple]:
    tab20 = list(plt.get_cmap("tab20").colors)
    distinct = tab20[0::2] + tab20[1::2] + list(plt.get_cmap("Dark2").colors)  # 28 colours
    return dict(zip(_FIXED_NAMES, distinct))


class Palette:
    """A colour per subject name that does not depend on which other subjects are shown: known
    encoders and peers have their own, and any other name (a plugin) takes one of tab20b's by a
    hash of its name, so it keeps its colour across runs and adding a plugin recolours nothing."""

    def __init__(self) -> None:
        self._colors = _fixed_colours()
        self._spare = list(plt.get_cmap("tab20b").colors)

    def __call__(self, name: str):
        found = self._colors.get(name)
        if found is None:
            import zlib

            found = self._spare[zlib.crc32(name.encode("utf-8")) % len(self._spare)]
        return found


def _save(fig, out_dir: Path, name: str) -> str:
    # tight_layout leaves no room for a figure-level title: keep the panels below it
    fig.tight_layout(rect=(0, 0, 1, 0.95) if fig.get_suptitle() else (0, 0, 1, 1))
    import io

    from .store import write_atomically

    png = io.BytesIO()
    try:
        fig.savefig(png, dpi=DPI, format="png")
    finally:
        plt.close(fig)
    write_atomically(out_dir / name, png.getvalue())  # a full disk leaves no half-written chart
    return name


def _bytes_label(n: float) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def runtime_chart(rows: pd.DataFrame, palette: Palette, out_dir: Path, name: str, *, title: str,
                  xlabel: str = "input length (bytes)") -> str | None:
    """Log-log runtime vs size, one line per subject (or per ``label`` column, coloured by subject;
    dashed for peers and rows marked ``dashed``), fitted exponent in the legend."""
    ok = measured(rows)
    if ok.empty:
        return None
    if "label" not in ok.columns:  # one line per subject unless the caller labels lines itself
        ok = ok.assign(label=ok["subject"])
    fig, ax = plt.subplots(figsize=SIZE)
    for label, group in ok.groupby("label", sort=False):
        group = group.sort_values("size_bytes")
        subject = group["subject"].iloc[0]
        exponent = fit_exponent(group["size_bytes"], group["median_s"])
        text = label + (f"  (n^{exponent:.2f})" if exponent is not None else "")
        dashed = group["kind"].iloc[0] == "peer" or bool(group.get("dashed", pd.Series([False])).iloc[0])
        ax.plot(group["size_bytes"], group["median_s"], marker="o", markersize=3.5, linewidth=1.6,
                linestyle="--" if dashed else "-", color=palette(subject), label=text)
        ax.fill_between(group["size_bytes"], group["q1_s"], group["q3_s"], color=palette(subject), alpha=0.15,
                        linewidth=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds per call (median)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, out_dir, name)


def throughput_chart(rows: pd.DataFrame, palette: Palette, out_dir: Path, name: str, *, title: str,
                     value: str = "mb_s", xlabel: str = "MB/s (log scale; longer is faster)",
                     fused: frozenset[str] = frozenset()) -> str | None:
    """One panel per corpus: ``value`` (MB/s) per subject (same subject order in every panel; peers
    hatched; the subjects in ``fused``, whose pipeline is the fused compiled one, labelled so)."""
    rows = rows[rows[value].notna() & (rows[value] > 0)]
    if rows.empty:
        return None
    corpora = list(dict.fromkeys(rows["corpus"]))
    subjects = list(dict.fromkeys(rows["subject"]))
    peers = set(rows[rows["kind"] == "peer"]["subject"])
    columns = min(len(corpora), PANELS_PER_ROW)
    rows_of_panels = -(-len(corpora) // columns)
    fig, axes = plt.subplots(rows_of_panels, columns, sharey=True, sharex=True, squeeze=False,
                             figsize=(3.0 * columns + 1.6, rows_of_panels * (0.26 * len(subjects) + 0.9) + 0.6))
    for ax in axes.flat[len(corpora):]:
        ax.set_visible(False)
    for ax, corpus in zip(axes.flat, corpora):
        values = []
        for subject in subjects:
            hit = rows[(rows["corpus"] == corpus) & (rows["subject"] == subject)]
            values.append(float(hit[value].iloc[0]) if len(hit) else 0.0)
        for y, (subject, bar) in enumerate(zip(subjects, values)):
            ax.barh(y, bar, height=0.75, color=palette(subject), hatch="//" if subject in peers else None,
                    edgecolor="black" if subject in peers else "none", linewidth=0.3)
        ax.set_xscale("log")
        ax.set_title(corpus, fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7.5)
    axes[0][0].set_yticks(range(len(subjects)))
    axes[0][0].invert_yaxis()
    for row in axes:
        row[0].set_yticklabels([f"{s} (fused)" if s in fused else s for s in subjects], fontsize=8)
    fig.supxlabel(xlabel, fontsize=9)
    fig.suptitle(title, fontsize=10)
    return _save(fig, out_dir, name)


def count_diff_chart(histograms: dict[str, dict[int, int]], palette: Palette, out_dir: Path, name: str, *,
                     title: str) -> str | None:
    """Per approximate encoder: share of inputs by token-count difference to naive."""
    histograms = {k: v for k, v in histograms.items() if v}
    if not histograms:
        return None
    diffs = sorted({d for h in histograms.values() for d in h})
    low, high = max(min(diffs + [-2]), -6), min(max(diffs + [2]), 6)
    xs = list(range(low, high + 1))
    width = 0.8 / len(histograms)
    fig, ax = plt.subplots(figsize=SIZE)
    for j, (subject, hist) in enumerate(histograms.items()):
        total = sum(hist.values())
        clipped = {x: 0 for x in xs}
        for d, n in hist.items():
            clipped[min(max(d, low), high)] += n
        ax.bar([x + (j - (len(histograms) - 1) / 2) * width for x in xs], [100 * clipped[x] / total for x in xs],
               width=width * 0.95, color=palette(subject), label=subject)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"≤{x}" if x == low and min(diffs) < low else f"≥{x}" if x == high and max(diffs) > high
                        else str(x) for x in xs])
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("tokens(encoder) − tokens(naive), per input")
    ax.set_ylabel("% of inputs")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7.5, frameon=False)
    return _save(fig, out_dir, name)

