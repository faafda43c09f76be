"""Turn asv results (``.asv/results``) into a result directory the report renders.

asv stores, per machine, ``machine.json`` and one JSON file per (commit,
environment) whose ``results`` map each benchmark to columns named by
``result_columns`` (``result``, ``params``, ``stats_q_25``, ``stats_q_75``, ...;
results format version 2). Parameterised benchmarks hold one value per element
of the Cartesian product of their parameter lists, in ``itertools.product``
order; the parameter names come from ``benchmarks.json`` at the results root.

Each timing (``time_*``, and ``track_*`` in seconds) becomes one ``timings.csv``
row. The mapping is by naming convention, not by benchmark: the stage comes from
words in the benchmark's name (``interval``, ``worst``/``unsplittable``/
``adversarial``, ``incremental``/``append``, ``load``, ``pipeline``, ``scaling``),
the subject from an ``implementation``/``approach``/``encoder`` parameter
(``ours/<encoder>``, ``peer/<name>``, ``<approach>/<encoder>``; ``<approach>/default``
is the default encoder taking that approach), and vocabulary, corpus and size from
parameters with the usual names (a size may also be read from the method name,
``..._5kB``). A benchmark without a vocabulary parameter ran on the suites'
vocabulary (``bpebench.benchmarks.common.VOCAB``); one without a corpus parameter is
its own input (its class name), so each gets its own chart. Raw-BPE suites (``Raw``
in the class name) label their corpora "(raw BPE)", apart from pipelines on the same
text; a scaling or worst-case input timed at one size is shown as a throughput. Only
the newest results file per machine is used. O(results).
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

from bpebench.errors import BpebenchError

from .store import ResultStore

SUBJECT_PARAMS = ("implementation", "approach", "encoder", "algorithm", "peer", "subject", "tokenizer", "name")
VOCAB_PARAMS = ("vocabulary", "vocab", "vocab_name", "encoding")
CORPUS_PARAMS = ("corpus", "input", "text", "generator")
SIZE_PARAMS = ("bytes", "size", "n_bytes", "nbytes", "length", "slice_bytes", "slice_length", "n")
#: (word in the benchmark's name, stage), first match wins
STAGE_WORDS = (("interval", "interval"), ("worst", "worst_case"), ("unsplittable", "worst_case"),
               ("incremental", "incremental"), ("append", "incremental"),
               ("load", "load"), ("pipeline", "throughput"), ("throughput", "throughput"), ("scaling", "scaling"))
#: (word in the method name, operation of the load table)
LOAD_OPERATIONS = (("cold", "build"), ("load", "build"), ("short", "short"), ("long", "long"), ("decode", "decode"))
RUNTIME_STAGES = ("scaling", "worst_case", "incremental", "interval")


def _value(text):
    """asv stores parameter values as ``repr`` strings: "'o200k_base'" -> 'o200k_base', "1000" -> 1000."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BpebenchError(f"{path}: cannot read asv results ({exc})") from None


def newest_results(results_dir: Path) -> list[tuple[dict, dict, Path]]:
    """(machine.json, newest results file, its path) for every machine directory."""
    found = []
    for machine_json in sorted(results_dir.glob("*/machine.json")):
        files = [p for p in machine_json.parent.glob("*.json") if p.name != "machine.json"]
        if not files:
            continue
        loaded = [(_read_json(p), p) for p in files]
        data, path = max(loaded, key=lambda item: (item[0].get("date") or 0, item[1].name))
        found.append((_read_json(machine_json), data, path))
    return found


def _pick(params: dict, names: tuple[str, ...]):
    for name in names:
        if name in params:
            return name, params[name]
    return None, None


def _stage(benchmark: str) -> str:
    low = benchmark.lower()
    for word, stage in STAGE_WORDS:
        if word in low:
            return stage
    return "throughput"


def _subject(value, peer_names: set[str], default: str) -> tuple[str, str, str]:
    """(subject, kind, approach) from a parameter like ``ours/backtracking``, ``peer/tiktoken``,
    ``append/appending``, ``from-scratch/default`` or a plain encoder name. ``<approach>/default``
    is the default encoder (``default``) taking that approach: a parameter is never a subject."""
    text = str(value)
    prefix, _, name = text.partition("/") if "/" in text else ("", "", text)
    if prefix == "peer" or (not prefix and name in peer_names):
        return name, "peer", ""
    if prefix in ("", "ours"):
        return name, "encoder", ""
    return (default if name == "default" else name), "encoder", prefix


def _size_from_name(method: str) -> int | None:
    """``time_encode_long_5kB`` -> 5000; ``time_preprocess_120kB`` -> 120000."""
    match = re.search(r"(\d+)(k|M)?B\b", method)
    if not match:
        return None
    return int(match.group(1)) * {"k": 1_000, "M": 1_000_000, None: 1}[match.group(2)]


def rows_from_results(data: dict, benchmarks: dict, peer_names: set[str], *, default_vocab: str = "",
                      default_encoder: str = "default") -> tuple[list[dict], int]:
    """timings.csv rows from one asv results file; also how many non-timing results were left out.
    A benchmark without a vocabulary parameter ran on ``default_vocab`` (the suites' vocabulary)."""
    columns = data.get("result_columns") or ["result", "params"]
    rows, left_out = [], 0
    for name, values in (data.get("results") or {}).items():
        record = dict(zip(columns, values))
        info = benchmarks.get(name, {})
        parts = name.split(".")
        method, cls = parts[-1], parts[-2] if len(parts) >= 2 else parts[0]
        if info.get("unit", "seconds") != "seconds" or not method.startswith(("time_", "track_")):
            left_out += 1
            continue
        param_lists = record.get("params") or []
        param_names = info.get("param_names") or [f"param{i + 1}" for i in range(len(param_lists))]
        combos = list(itertools.product(*param_lists)) if param_lists else [()]
        results = record.get("result")
        results = results if isinstance(results, list) else [results]
        q25 = record.get("stats_q_25") or []
        q75 = record.get("stats_q_75") or []
        repeat = record.get("stats_repeat") or []
        for i, combo in enumerate(combos):
            value = results[i] if i < len(results) else None
            params = {n: _value(v) for n, v in zip(param_names, combo)}
            subject_param, subject = _pick(params, SUBJECT_PARAMS)
            vocab_param, vocab = _pick(params, VOCAB_PARAMS)
            corpus_param, corpus = _pick(params, CORPUS_PARAMS)
            size_param, size = _pick(params, SIZE_PARAMS)
            subject, kind, approach = _subject(subject if subject is not None else cls, peer_names, default_encoder)
            stage = _stage(name)
            size = size if isinstance(size, (int, float)) else _size_from_name(method)
            operation = method
            if stage == "load":
                operation = next((op for word, op in LOAD_OPERATIONS if word in method), method)
            elif stage in RUNTIME_STAGES and size is None:
                stage = "throughput"  # one size per corpus: a throughput, not a curve
            elif stage == "throughput" and size_param is not None and corpus is None:
                stage = "scaling"  # sizes of one input: a curve (its own chart, named by the class)
            if approach:
                operation = f"{approach} {operation}"
            used = {subject_param, vocab_param, corpus_param, size_param}
            rest = ",".join(f"{k}={v}" for k, v in params.items() if k not in used)
            input_name = str(corpus) if corpus is not None else cls  # else the class names the input
            if "raw" in cls.lower() and corpus is not None:
                input_name += " (raw BPE)"  # no pre-tokenizer: not comparable with a pipeline on that corpus
            row = {
                "stage": stage, "vocab": str(vocab) if vocab is not None else default_vocab, "subject": subject,
                "kind": kind, "corpus": input_name,
                "operation": operation + (f" [{rest}]" if rest else ""),
                "size_bytes": int(size) if size is not None else None,
            }
            if value is None or (isinstance(value, float) and value != value):
                row["note"] = "skipped: asv has no result (over the time cap, not applicable, or failed)"
            else:
                low = q25[i] if i < len(q25) and q25[i] is not None else value
                high = q75[i] if i < len(q75) and q75[i] is not None else value
                row.update({"median_s": float(value), "q1_s": float(low), "q3_s": float(high),
                            "min_s": float(low), "max_s": float(high),
                            "repeats": repeat[i] if i < len(repeat) else None})
            rows.append(row)
    # a scaling or worst-case chart needs sizes to draw a curve: an input timed at one size is a throughput
    curves = ("scaling", "worst_case")
    sizes: dict[tuple, set] = {}
    for row in rows:
        if row["stage"] in curves:
            sizes.setdefault((row["stage"], row["corpus"], row["operation"]), set()).add(row["size_bytes"])
    for row in rows:
        if row["stage"] in curves and len(sizes[(row["stage"], row["corpus"], row["operation"])]) < 2:
            row["stage"] = "throughput"
    return rows, left_out


def import_asv(results_dir: str | Path, out: str | Path) -> int:
    """Write ``out`` (timings.csv + meta.json) from the asv results in ``results_dir``; returns the row count."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise BpebenchError(f"{results_dir}: no asv results directory (run `asv run` first, or pass its path)")
    found = newest_results(results_dir)
    if not found:
        raise BpebenchError(f"{results_dir}: no asv results files "
                            "(expected <machine>/machine.json and <commit>-*.json)")
    benchmarks = _read_json(results_dir / "benchmarks.json") if (results_dir / "benchmarks.json").exists() else {}
    from bpebench.algorithms.core.registry import default_encoder_name
    from bpebench.algorithms.peers import peer_names
    from bpebench.benchmarks.common import VOCAB

    peers = set(peer_names())
    store = ResultStore(out)
    store.create(resume=False)
    total, left_out, sources = 0, 0, []
    machine, data = found[0][0], found[0][1]
    for machine_info, results, path in found:
        rows, skipped = rows_from_results(results, benchmarks, peers, default_vocab=VOCAB,
                                          default_encoder=default_encoder_name())
        total += store.write_rows("timings.csv", rows)
        left_out += skipped
        sources.append(f"{machine_info.get('machine', '?')}: {path.name}")
    notes = {"summary": [f"imported from asv: {'; '.join(sources)}"]}
    if left_out:
        notes["summary"].append(f"{left_out} asv benchmarks that are not timings (peakmem_, track_) are not shown")
    notes["conformance"] = ["asv results carry no conformance runs; run `bpebench report` for them"]
    vocabs = sorted({r["vocab"] for r in store.rows("timings.csv") if r["vocab"]})
    store.write_meta({
        "source": f"asv results in {results_dir}",
        "environment": {
            "cpu": machine.get("cpu", "unknown"), "cores": machine.get("num_cpu", "?"),
            "ram_gb": _gigabytes(machine.get("ram")),
            "os": machine.get("os", ""), "python": data.get("python", ""),
            "libraries": {k.replace("pip+", ""): v for k, v in (data.get("requirements") or {}).items()},
            "commit": (data.get("commit_hash") or "")[:10], "date": _date(data.get("date")),
            "numba_jit": "as configured for asv",
        },
        "vocabularies": vocabs,
        "vocabulary_details": _vocabulary_details(vocabs),
        "plan": {"preset": "asv"},
        "notes": notes,
    })
    return total


def _gigabytes(value) -> float | None:
    """asv's ``ram``: bytes on recent versions, kB on older ones (a value below 1e9 cannot be bytes)."""
    if not str(value or "").isdigit():
        return None
    ram = int(value)
    return round(ram / 2**30 if ram >= 10**9 else ram / 2**20, 1)


def _date(value) -> str:
    if not value:
        return ""
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(value) / 1000, tz=dt.timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError):
        return str(value)


def _vocabulary_details(names: list[str]) -> dict:
    """What the page's vocabulary table shows, for the vocabularies that load here (asv results
    carry only their names)."""
    from bpebench.algorithms.formats import load_vocabulary

    from .environment import describe_vocabulary

    out = {}
    for name in names:
        try:
            out[name] = describe_vocabulary(load_vocabulary(name))
        except BpebenchError:
            continue
    return out

