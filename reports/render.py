"""Render a result directory into ``index.html`` plus PNG charts beside it.

Reads only the store (``meta.json`` and the CSV tables), so it works on a
finished run, an interrupted one, a resumed one, or results imported from asv.
Sections, in reading order: summary, verdicts (one paragraph per encoder, then
peers), scaling, throughput, worst case, correctness, conformance, incremental
and interval counting, load / short / long / decode, token masks, raw data. A section with no
rows says why instead of disappearing. Cost: O(rows) plus one matplotlib figure
per chart.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from . import analysis, plots
from .html import esc, image, missing, notes, number, page, percent, ratio, seconds, size, table
from .stages_trie import trie_section
from .store import ResultStore, write_atomically

#: (id, title) of every section, in page order (the tests check each one is rendered)
SECTIONS = (
    ("summary", "Summary"),
    ("verdicts", "Verdicts"),
    ("scaling", "Runtime vs input length"),
    ("throughput", "Throughput per corpus"),
    ("worst-case", "Worst case: unsplittable input"),
    ("correctness", "Correctness: agreement with naive"),
    ("conformance", "Conformance kit"),
    ("incremental", "Incremental and interval counting"),
    ("load", "Load, short input, long input, decode"),
    ("trie", "Token masks: the DFS trie"),
    ("raw-data", "Raw data"),
)


class Report:
    """The loaded results of one directory and the charts drawn from them."""

    def __init__(self, directory: str | Path) -> None:
        self.store = ResultStore(directory)
        self.out = self.store.directory
        self.meta = self.store.read_meta()
        self.timings = self.store.frame("timings.csv")
        self.agreement = self.store.frame("agreement.csv")
        self.conformance = analysis.conformance_latest(self.store.frame("conformance.csv"))
        self.throughput = analysis.throughput(self.timings)
        self.palette = plots.Palette()
        self.notes: dict[str, list[str]] = self.meta.get("notes", {}) or {}

    @property
    def vocabs(self) -> list[str]:
        names = list(self.meta.get("vocabularies", []) or [])
        names += list(self.timings["vocab"]) + list(self.agreement["vocab"])
        return [v for v in dict.fromkeys(names) if v]

    def subjects(self) -> dict[str, dict]:
        """name -> {kind, declared_exact, summary, capabilities} from meta, completed from the rows."""
        out = {k: dict(v) for k, v in (self.meta.get("subjects", {}) or {}).items()}
        for frame in (self.timings, self.agreement):
            for _, row in frame.iterrows():
                name = row["subject"]
                if name.startswith("(") or name in out:
                    continue
                out[name] = {"kind": row["kind"], "declared_exact": None, "summary": "", "capabilities": []}
                if row["kind"] == "encoder":
                    out[name].update(_registered(name))
        return out

    def section_notes(self, section: str) -> str:
        return notes(self.notes.get(section, []))


def _registered(name: str) -> dict:
    """What the registry declares about an encoder (for results that did not record it, e.g. asv)."""
    from bpebench.errors import UnknownNameError
    from bpebench.algorithms.core.registry import get_encoder_class

    try:
        cls = get_encoder_class(name)
    except UnknownNameError:
        return {}
    return {"declared_exact": cls.is_exact(), "summary": cls.summary, "capabilities": sorted(cls.capabilities)}


# ----------------------------------------------------------------------------- summary
def _summary(report: Report) -> str:
    meta = report.meta
    env = meta.get("environment", {}) or {}
    plan = meta.get("plan", {}) or {}
    cards = [
        ("machine", f"{esc(env.get('cpu', 'unknown'))}<br>{esc(env.get('cores', '?'))} cores, "
                    f"{esc(env.get('ram_gb', '?'))} GB RAM" + (
                        f", load {env['load_average_1min']:.2f}" if isinstance(env.get("load_average_1min"), float)
                        else "")),
        ("software", f"{esc(env.get('python', '?'))}, {esc(env.get('os', ''))}<br>numba JIT "
                     f"{esc(env.get('numba_jit', '?'))}"),
        ("run", f"{esc(meta.get('source', ''))}, preset {esc(plan.get('preset', '–'))}<br>"
                f"{esc(env.get('date', meta.get('started', '')))}, commit {esc(env.get('commit', '?'))}"
                + (f", {seconds(meta['elapsed_s'])} of measuring" if meta.get("elapsed_s") else "")),
    ]
    out = ['<div class="cards">']
    out += [f'<div class="card"><b>{esc(k)}</b>{v}</div>' for k, v in cards]
    out.append("</div>")
    vocab_details = meta.get("vocabulary_details", {}) or {}
    rows = []
    for name in report.vocabs:
        d = vocab_details.get(name, {})
        rows.append([esc(name), number(d.get("tokens")), esc(d.get("rule", "")), (esc(d.get("pattern", "")), "mono"),
                     esc(d.get("specials", ""))])
    out.append("<h3>Vocabularies</h3>" + table(["vocabulary", "tokens", "merge rule", "pre-tokenizer", "specials"],
                                               rows, text_columns=1))
    libs = env.get("libraries", {}) or {}
    if libs:
        out.append("<h3>Library versions</h3><p class='mono'>" + ", ".join(
            f"{esc(k)}&nbsp;{esc(v)}" for k, v in libs.items()) + "</p>")
    out.append(report.section_notes("summary") + report.section_notes("inputs") + report.section_notes("peers"))
    return "".join(out)


# ----------------------------------------------------------------------------- verdicts
def _exactness(report: Report, name: str, info: dict) -> tuple[str, str]:
    """(sentence, css class) about agreement with naive."""
    if "reference" in (info.get("capabilities") or []):
        return "The reference: BPE by its definition (every other subject is compared with it).", "ref"
    rows = report.agreement[(report.agreement["subject"] == name) & report.agreement["inputs"].notna()]
    declared = info.get("declared_exact")
    if rows.empty:
        kind = {True: "declared exact", False: "declared approximate"}.get(declared, info.get("kind", ""))
        return f"{kind.capitalize()}; agreement with naive not measured in this run.", ""
    by_mode = {m: g for m, g in rows.groupby("mode")}
    inputs, same = int(rows["inputs"].sum()), int(rows["exact_matches"].sum())
    corpora = rows["corpus"].nunique()
    if declared is True or declared == "True":
        if same == inputs:
            return (f"<b>Exact</b>: equal to naive on all {inputs:,} inputs ({', '.join(sorted(by_mode))}; "
                    f"{corpora} corpora).", "good")
        first = rows[rows["exact_matches"] < rows["inputs"]].iloc[0]
        return (f"<b>Declared exact but differs from naive</b> on {inputs - same:,} of {inputs:,} inputs "
                f"(first: {esc(first['corpus'])}, {esc(first['mode'])}: <span class='mono'>"
                f"{esc(first['first_mismatch'][:160])}</span>).", "bad")
    parts = []
    for mode in ("pieces", "raw", "pipeline"):
        g = by_mode.get(mode)
        if g is None:
            continue
        n, k = int(g["inputs"].sum()), int(g["exact_matches"].sum())
        ref, got = g["reference_tokens"].sum(), g["subject_tokens"].sum()
        change = (got - ref) / ref if ref else math.nan
        what = {"pieces": "pre-tokenized pieces", "raw": "raw slices", "pipeline": "whole texts (pipeline)"}[mode]
        parts.append(f"{percent(k / n if n else math.nan)} of {n:,} {what}"
                     + (f" (token count {'+' if change >= 0 else ''}{percent(change, 2)})"
                        if not missing(change) and k < n else ""))
    if declared is None:  # a peer
        exact = same == inputs
        head = "<b>Matches naive</b>" if exact else "<b>Differs from naive</b>"
        return f"{head}: equal on " + "; ".join(parts) + ".", "good" if exact else "warn"
    return "<b>Approximate</b>: equal to naive on " + "; ".join(parts) + ".", "warn"


def _scaling_sentence(report: Report, name: str, stage: str, what: str) -> str:
    """``what`` then the fitted exponent per input of ``stage`` (at most two), where it stopped or failed."""
    exps = analysis.exponents(report.timings, stage)
    parts = []
    for _, row in exps[exps["subject"] == name].head(2).iterrows():
        where = esc(row["corpus"])
        if row["vocab"] and len(report.vocabs) > 1:
            where = f"{esc(row['vocab'])} {where}"
        failure = ""
        if row["error"]:
            at = f" at {size(row['error_at'])}" if not missing(row["error_at"]) else ""
            failure = f"<b>failed{at}</b> ({esc(row['error'][:120])})"
        if missing(row["exponent"]):
            if failure:
                parts.append(f"{failure} on {where}")
            continue
        text = (f"n<sup>{row['exponent']:.2f}</sup> on {where} (up to {size(row['largest'])} in "
                f"{seconds(row['largest_s'])}")
        if not missing(row["skipped_from"]):
            text += f"; stopped before {size(row['skipped_from'])}, over the time cap"
        parts.append(text + ")" + (f", {failure}" if failure else ""))
    return f"{what} " + "; ".join(parts) + "." if parts else ""


def _speed_sentence(report: Report, name: str) -> str:
    rows = report.throughput[report.throughput["subject"] == name]
    if rows.empty:
        return ""
    mean_mb = analysis.geometric_mean(rows["mb_s"])
    vs = analysis.geometric_mean(rows["vs_tiktoken"])
    over = f"geometric mean over {len(rows)} corpus runs"
    text = f"Pipeline throughput {number(mean_mb)} MB/s ({over})" if not missing(mean_mb) else ""
    if not missing(vs) and not analysis.is_baseline(name):
        verdict = " (faster)" if vs > 1.05 else " (slower)" if vs < 0.95 else " (on par)"
        text = (f"{text}, <b>{ratio(vs)}</b> tiktoken's speed{verdict}" if text
                else f"Pipeline speed <b>{ratio(vs)}</b> tiktoken's{verdict} ({over})")
    elif text and not analysis.is_baseline(name):
        text += "; tiktoken not measured on these corpora"
    return text + "." if text else ""


PASSED = ("pass", "passed", "ok")
FAILED = ("fail", "failed", "error")


def _conformance_sentence(report: Report, name: str) -> str:
    rows = report.conformance[report.conformance["subject"] == name]
    if rows.empty:
        return ""
    status = rows["status"].str.lower()
    passed = int(status.isin(PASSED).sum())
    failed = rows[status.isin(FAILED)]
    expected = int(status.str.startswith("expected").sum())
    applicable = passed + len(failed) + expected
    if len(failed):
        checks = ", ".join(dict.fromkeys(esc(c) for c in failed["check"]))
        return f"<b>Conformance: {len(failed)} of {applicable} applicable checks fail</b> ({checks})."
    text = f"Conformance: all {passed} applicable checks pass"
    if expected:
        text += f", {expected} exactness checks fail as expected for an approximate encoder"
    return text + "."


def _verdicts(report: Report) -> str:
    subjects = report.subjects()
    if not subjects:
        return '<p class="note">No results yet.</p>'
    out = []
    # our sweep's scaling stage is pure BPE; imported (asv) inputs are named by their benchmark
    imported = (report.meta.get("plan", {}) or {}).get("preset") == "asv"
    scaling_what = "Runtime grows as" if imported else "Raw BPE runtime grows as"
    for kind, heading in (("encoder", "Encoders"), ("peer", "Peers")):
        names = [n for n, i in subjects.items() if i.get("kind") == kind]
        if not names:
            continue
        out.append(f"<h3>{heading}</h3>")
        for name in names:
            info = subjects[name]
            exact, cls = _exactness(report, name, info)
            sentences = [exact,
                         _scaling_sentence(report, name, "scaling", scaling_what),
                         _scaling_sentence(report, name, "worst_case", "Unsplittable input:"),
                         _speed_sentence(report, name),
                         _conformance_sentence(report, name)]
            summary = f' <span class="note">{esc(info.get("summary", ""))}</span>' if info.get("summary") else ""
            out.append(f'<div class="verdict {cls}"><span class="name">{esc(name)}</span>{summary}<br>'
                       + " ".join(s for s in sentences if s) + "</div>")
    return "".join(out)


# ----------------------------------------------------------------------------- timing sections
def _exponent_table(report: Report, stage: str) -> str:
    exps = analysis.exponents(report.timings, stage)
    if exps.empty:
        return ""
    rows, classes = [], []
    for _, r in exps.iterrows():
        rows.append([esc(r["subject"]), esc(r["vocab"]), esc(r["corpus"]),
                     "–" if missing(r["exponent"]) else f"{r['exponent']:.2f}",
                     size(r["largest"]), seconds(r["largest_s"]),
                     "" if missing(r["skipped_from"]) else f"from {size(r['skipped_from'])}",
                     (esc(r["error"][:100]) + (f" at {size(r['error_at'])}" if not missing(r["error_at"]) else ""),
                      "bad") if r["error"] else ""])
        classes.append("peer" if r["kind"] == "peer" else "")
    return table(["subject", "vocabulary", "input", "exponent", "largest", "time there", "skipped (cap)", "error"],
                 rows, text_columns=3, row_classes=classes, drop_empty_columns=True)


def _runtime_section(report: Report, stage: str, intro: str, note_key: str) -> str:
    rows = report.timings[report.timings["stage"] == stage]
    out = [f"<p>{intro}</p>"]
    if rows.empty:
        out.append('<p class="note">Not measured in this run.</p>')
    for (vocab, corpus), group in rows.groupby(["vocab", "corpus"], sort=False):
        name = plots.runtime_chart(group, report.palette, report.out, _chart_name(stage, vocab, corpus),
                                   title=_title(vocab, corpus, "median seconds per call (band: quartiles)"))
        out.append(image(name, f"{stage} chart for {vocab} / {corpus}"))
    out.append(_exponent_table(report, stage))
    out.append(report.section_notes(note_key))
    return "".join(out)


def _title(*parts: str) -> str:
    """``"o200k_base, prose-en: what"`` from the parts that are not empty (asv results may lack a vocabulary)."""
    *where, what = [str(p) for p in parts if str(p or "").strip()]
    return f"{', '.join(where)}: {what}" if where else what


def _chart_name(*parts: str) -> str:
    return "-".join(_slug(p) for p in parts if str(p or "").strip()) + ".png"


def _slug(text: str) -> str:
    """A file-name-safe form: the last path component of a vocabulary or corpus given by path, plus a
    hash of the whole path (two files of the same name in one report must not share a chart)."""
    text = str(text)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in (Path(text).name if "/" in text else text))
    if "/" in text or os.sep in text:
        import hashlib

        return f"{safe[:48]}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return safe[:60] or "default"


#: corpora per throughput table (three metrics each keep a table within the page width)
CORPORA_PER_TABLE = 3


def _throughput(report: Report) -> str:
    t = report.throughput
    out = ["<p>The whole tokenizer (special-token handling, pre-tokenizer, BPE per piece) on each corpus: "
           "MB/s and tokens/s, and the speed relative to tiktoken on the same input (&gt; 1: faster). Rows are "
           "sorted by the geometric mean of that ratio; hover a cell for the median time and its interquartile "
           "spread. Peers in italics.</p>"]
    if t.empty:
        return out[0] + '<p class="note">Not measured in this run.</p>'
    subjects = report.subjects()
    fused = [name for name, info in subjects.items() if info.get("fused")]
    if fused:
        out.append(f"<p>Only {', '.join(f'<b>{esc(n)}</b>' for n in fused)} (marked ⚡) runs the fused compiled "
                   "pipeline, pre-tokenizer and BPE in one call; every other encoder is measured through the "
                   "reference path (pre-tokenizer in Python, then the encoder on each piece), so its figures here "
                   "say more about that path than about the encoder (the scaling section times encoders alone).</p>")
    for vocab, by_vocab in t.groupby("vocab", sort=False):
        if by_vocab["mb_s"].notna().any():
            name = plots.throughput_chart(by_vocab, report.palette, report.out, _chart_name("throughput", vocab),
                                          title=_title(vocab, "pipeline throughput (peers hatched; only the encoders"
                                                              " marked fused run the compiled pipeline)"),
                                          fused=frozenset(fused))
        else:  # sizes unknown (asv results): calls per second still rank the subjects
            name = plots.throughput_chart(by_vocab.assign(calls_s=1 / by_vocab["median_s"]), report.palette,
                                          report.out, _chart_name("throughput", vocab), value="calls_s",
                                          title=_title(vocab, "calls per second (input sizes not recorded)"),
                                          xlabel="calls per second (log scale; longer is faster)")
        out.append(f"<h3>{esc(vocab)}</h3>" + image(name, f"throughput chart for {vocab}"))
        order = (by_vocab.groupby("subject", sort=False)
                 .apply(lambda g: analysis.geometric_mean(g["vs_tiktoken"]) if g["vs_tiktoken"].notna().any()
                        else analysis.geometric_mean(g["mb_s"]) * 1e-9, include_groups=False)
                 .sort_values(ascending=False).index.tolist())
        corpora = list(dict.fromkeys(by_vocab["corpus"]))
        sized = by_vocab["mb_s"].notna().any()  # asv results may carry no input sizes: calls per second then
        metrics = ["MB/s", "tokens/s", "vs tiktoken"] if sized else ["calls/s", "vs tiktoken"]
        for start in range(0, len(corpora), CORPORA_PER_TABLE):
            chunk = corpora[start : start + CORPORA_PER_TABLE]
            groups = ""
            for c in chunk:
                known = by_vocab[by_vocab["corpus"] == c]["size_bytes"].dropna()
                label = f"{c} ({size(known.iloc[0])})" if len(known) else c
                groups += f'<th class="group" colspan="{len(metrics)}">{esc(label)}</th>'
            rows, classes = [], []
            for subject in order:
                mine = by_vocab[by_vocab["subject"] == subject]
                cells = [esc(subject) + (" ⚡" if subjects.get(subject, {}).get("fused") else "")]
                for corpus in chunk:
                    hit = mine[mine["corpus"] == corpus]
                    if hit.empty:
                        cells += ["–"] * len(metrics)
                        continue
                    r = hit.iloc[0]
                    hover = f"{seconds(r['median_s'])} per call, interquartile spread {percent(r['spread'], 0)}"
                    vs = r["vs_tiktoken"]
                    speed = [number(r["mb_s"]), number(r["tokens_s"])] if sized else [number(1 / r["median_s"])]
                    speed[0] = f'<span title="{esc(hover)}">{speed[0]}</span>'
                    cells += [*speed, (ratio(vs), "" if missing(vs) else "good" if vs >= 1 else "muted")]
                rows.append(cells)
                classes.append("peer" if mine["kind"].iloc[0] == "peer" else "")
            headers = ["subject"] + metrics * len(chunk)
            html_table = table(headers, rows, row_classes=classes)
            out.append(html_table.replace("<thead><tr>", f'<thead><tr><th></th>{groups}</tr><tr>', 1))
    return "".join(out)


def _worst_case(report: Report) -> str:
    intro = ("Inputs the vocabulary's pre-tokenizer leaves as a single piece, so the encoder sees all n bytes "
             "at once (pipeline on both sides). Quadratic encoders stop where the next size would exceed the "
             "time cap.")
    return _runtime_section(report, "worst_case", intro, "worst_case")


def _incremental(report: Report) -> str:
    out = []
    for stage, title, intro in (
        ("incremental", "Appending byte by byte",
         "Keeping an exact token count while a text grows one byte at a time, against encoding the whole text "
         "once with the fastest exact encoder (dashed)."),
        ("interval", "Counting a slice",
         "Counting the tokens of a slice of a preprocessed text, against encoding the slice from scratch "
         "(dashed); the single point is the one-off preprocessing of the whole text."),
    ):
        rows = report.timings[report.timings["stage"] == stage]
        out.append(f"<h3>{title}</h3><p>{intro}</p>")
        if rows.empty:
            out.append('<p class="note">Not measured in this run.</p>')
        for vocab, group in rows.groupby("vocab", sort=False):
            labelled = group.assign(label=group["subject"] + " · " + group["operation"].str.replace("_", " "),
                                    dashed=group["operation"].str.startswith("encode"))
            xlabel = "text length (bytes)" if stage == "incremental" else "slice length (bytes)"
            name = plots.runtime_chart(labelled, report.palette, report.out, _chart_name(stage, vocab),
                                       title=_title(vocab, title.lower()), xlabel=xlabel)
            out.append(image(name, f"{stage} chart for {vocab}"))
        out.append(report.section_notes(stage))
    return "".join(out)


def _load(report: Report) -> str:
    rows_all = report.timings[report.timings["stage"] == "load"]
    if rows_all.empty:
        return '<p class="note">Not measured in this run.</p>'
    out = ["<p>Built once per process: the vocabulary and its compiled tables, then each subject. <i>build</i> "
           "is the construction given the compiled tables (encoders share structures memoised on the "
           "vocabulary, so the first one to need a structure pays for it); <i>first call</i> includes numba "
           "compilation or loading its cache; <i>short</i> is the latency on a short text; <i>long</i> and "
           "<i>decode</i> are throughputs on a long text (pipeline).</p>"]
    for vocab, group in rows_all.groupby("vocab", sort=False):
        base = group[group["subject"] == "(vocabulary)"]
        facts = {r["operation"]: r for _, r in base.iterrows()}
        line = ", ".join(f"{op} {seconds(facts[op]['median_s'])}" for op in ("load", "tables") if op in facts)
        out.append(f"<h3>{esc(vocab)}</h3><p>vocabulary: {line or '–'}</p>")
        rows, classes = [], []
        for subject, g in group[group["subject"] != "(vocabulary)"].groupby("subject", sort=False):
            ops = {r["operation"]: r for _, r in g.iterrows()}

            def t(op):
                r = ops.get(op)
                return seconds(None if r is None else r["median_s"])

            def mb(op):
                r = ops.get(op)
                if r is None or missing(r["median_s"]):
                    return "–"
                return number(r["size_bytes"] / r["median_s"] / 1e6)

            short = ops.get("short")
            rows.append([esc(subject), t("build"), t("first_call"),
                         t("short") + (f" ({size(short['size_bytes'])})" if short is not None else ""),
                         mb("long"), mb("decode")])
            classes.append("peer" if g["kind"].iloc[0] == "peer" else "")
        out.append(table(["subject", "build", "first call", "short", "long MB/s", "decode MB/s"], rows,
                         row_classes=classes))
    out.append(report.section_notes("load"))
    return "".join(out)


# ----------------------------------------------------------------------------- correctness
def _correctness(report: Report) -> str:
    a = report.agreement
    out = ["<p>Each cell: the share of inputs on which the subject's output equals <code>naive</code> "
           "(the definition), 100% when every mode agrees on every input, else per mode. <i>raw</i>: slices of "
           "the corpus without pre-tokenizer (the strict test); <i>pieces</i>: the pre-tokenized pieces of the "
           "same slices (what a tokenizer feeds an encoder); <i>pipeline</i>: a peer's whole tokenizer against a "
           "tokenizer running naive. Token-count differences in brackets (subject − naive, summed over the "
           "inputs).</p>"]
    if a.empty:
        return out[0] + '<p class="note">Not measured in this run.</p>'
    corpora = list(dict.fromkeys(a["corpus"]))
    for vocab, by_vocab in a.groupby("vocab", sort=False):
        rows, classes = [], []
        for subject, g in by_vocab.groupby("subject", sort=False):
            declared = g["declared_exact"].iloc[0]
            kind = "peer" if g["kind"].iloc[0] == "peer" else "exact" if declared == "True" else "approximate"
            cells = []
            for corpus in corpora:
                hit = g[g["corpus"] == corpus]
                cells.append(_agreement_cell(hit, kind) if len(hit) else ("", "muted"))
            rows.append([esc(subject), esc(kind), esc(" + ".join(dict.fromkeys(g["mode"]))), *cells])
            classes.append("peer" if kind == "peer" else "")
        out.append(f"<h3>{esc(vocab)}</h3>" + table(["subject", "declared", "modes", *corpora], rows,
                                                   text_columns=3, row_classes=classes))
    mismatches = a[(a["exact_matches"] < a["inputs"]) & (a["first_mismatch"] != "")]
    if len(mismatches):
        items = "".join(f"<li><b>{esc(r['subject'])}</b> on {esc(r['vocab'])}/{esc(r['corpus'])} ({esc(r['mode'])}): "
                        f"<span class='mono'>{esc(r['first_mismatch'])}</span></li>"
                        for _, r in mismatches.head(24).iterrows())
        out.append(f"<details><summary>First differing input per cell ({len(mismatches)})</summary><ul>{items}</ul>"
                   "</details>")
    histograms = {}
    approx = a[(a["declared_exact"] == "False") & (a["mode"] == "pieces")]
    for subject, g in approx.groupby("subject", sort=False):
        total: dict[int, int] = {}
        for cell in g["count_diffs"]:
            for d, n in analysis.histogram(cell).items():
                total[d] = total.get(d, 0) + n
        histograms[subject] = total
    if histograms:
        name = plots.count_diff_chart(histograms, report.palette, report.out, "count-diff.png",
                                      title="Approximate encoders on pre-tokenized pieces: token-count difference")
        out.append("<h3>Token-count difference of approximate encoders</h3>"
                   + image(name, "token count difference distribution"))
    out.append(report.section_notes("agreement"))
    return "".join(out)


def _agreement_cell(rows, kind: str) -> tuple[str, str]:
    """One matrix cell: "100%" when every mode agrees fully, else the rate per mode (+ token difference)."""
    parts, all_same, failed = [], True, False
    for _, r in rows.iterrows():
        if missing(r["inputs"]):
            failed = True
            parts.append(f"{esc(r['mode'])}: {esc(r['note'][:50]) or 'error'}")
            continue
        rate = r["exact_matches"] / r["inputs"] if r["inputs"] else math.nan
        diff = int(r["subject_tokens"] - r["reference_tokens"])
        all_same &= rate == 1
        parts.append(f"{esc(r['mode'])} {percent(rate)}" + (f" ({'+' if diff > 0 else ''}{diff})" if diff else ""))
    if all_same and not failed:
        return "100%", "good"
    return " · ".join(parts), "bad" if kind == "exact" or failed else ""


def _conformance(report: Report) -> str:
    c = report.conformance
    body = report.section_notes("conformance")
    if c.empty:
        return body or '<p class="note">Not run in this run.</p>'
    checks = list(dict.fromkeys(c["check"]))
    rows = []
    for (subject, vocab), g in c.groupby(["subject", "vocab"], sort=False):
        cells = []
        for check in checks:
            hit = g[g["check"] == check]
            status = hit["status"].iloc[0] if len(hit) else ""
            low = status.lower()
            cls = "good" if low in PASSED else "bad" if low in FAILED else "muted"
            symbol = ("✓" if low in PASSED else "✗" if low in FAILED else "≈" if low.startswith("expected")
                      else "·" if low == "n/a" else esc(status or "–"))
            cells.append((f'<span title="{esc(status)}">{symbol}</span>', cls + " sym"))
        rows.append([esc(subject), esc(vocab), *cells])
    headers = ["encoder", "vocabulary", *(esc(c).replace("-", "-<wbr>") for c in checks)]
    out = ["<p>Every check of <code>bpebench.properties.check_encoder</code> per encoder and vocabulary (<i>random</i>: "
           "small vocabularies trained per example). ✓ pass · ✗ <b>fail</b> · ≈ an exactness check failing, "
           "as expected, on an encoder that declares itself approximate · <span class='muted'>·</span> not "
           "applicable (the encoder does not declare the capability the check needs).</p>",
           table(headers, rows, text_columns=2, css="compact", header_html=True)]
    failures = c[c["status"].str.lower().isin(FAILED)]
    if len(failures):
        out.append("<h3>Failures (minimal counterexamples)</h3>")
        out.append(table(["encoder", "check", "detail", "counterexample"],
                         [[esc(r["subject"]), esc(r["check"]), esc(r["detail"]), (esc(r["counterexample"]), "mono")]
                          for _, r in failures.iterrows()], text_columns=4))
    skipped = c[~c["status"].str.lower().isin(PASSED + FAILED)]
    if len(skipped):
        out.append("<details><summary>Checks not applicable or expected to fail</summary>"
                   + table(["encoder", "check", "status", "detail"],
                           [[esc(r["subject"]), esc(r["check"]), esc(r["status"]), esc(r["detail"])]
                            for _, r in skipped.iterrows()], text_columns=4) + "</details>")
    return "".join(out) + body


def _raw_data(report: Report) -> str:
    files = [p.name for p in sorted(report.out.iterdir()) if p.suffix in (".csv", ".json", ".log")]
    plan = report.meta.get("plan", {}) or {}
    items = "".join(f'<li><a href="{esc(f)}">{esc(f)}</a></li>' for f in files)
    settings = ", ".join(f"{esc(k)}={esc(v)}" for k, v in plan.items())
    return (f"<ul>{items}</ul><p class='note'>Plan: <span class='mono'>{settings or '–'}</span></p>"
            "<p class='note'>Re-render: <code>bpebench report --render-only --out DIR</code>; continue an "
            "interrupted run: <code>bpebench report --resume --out DIR</code>; compare two runs: "
            "<code>bpebench report --compare OLD_DIR NEW_DIR</code>.</p>")


# ----------------------------------------------------------------------------- page
def render(directory: str | Path) -> Path:
    """Write ``index.html`` (and its PNGs) into ``directory`` from the results stored there."""
    report = Report(directory)
    builders = {
        "summary": _summary,
        "verdicts": _verdicts,
        "scaling": lambda r: _runtime_section(
            r, "scaling", "Pure BPE on growing slices of one text, no pre-tokenizer: the encoders' own complexity "
                          "(log-log; the legend gives the fitted exponent: 1 is linear, 2 quadratic).", "scaling"),
        "throughput": _throughput,
        "worst-case": _worst_case,
        "correctness": _correctness,
        "conformance": _conformance,
        "incremental": _incremental,
        "load": _load,
        "trie": trie_section,
        "raw-data": _raw_data,
    }
    nav = "<nav>" + "".join(f'<a href="#{sid}">{esc(title)}</a>' for sid, title in SECTIONS) + "</nav>"
    sections = []
    for sid, title in SECTIONS:
        sections.append(f'<section id="{sid}"><h2>{esc(title)}</h2>{builders[sid](report)}</section>')
    preset = (report.meta.get("plan", {}) or {}).get("preset", "")
    vocabs = ", ".join(report.vocabs) or "no vocabulary"
    lede = f"BPE encoders and peer tokenizers on {esc(vocabs)}" + (f" ({esc(preset)} sweep)" if preset else "")
    body = f"<h1>bpebench report</h1><p class='lede'>{lede}</p>{nav}" + "".join(sections)
    path = report.out / "index.html"
    write_atomically(path, page("bpebench report", body).encode("utf-8"))
    return path

