"""``bpebench parity``: bpebench's ids against the tokenizer file's own library, text by text.

    bpebench parity o200k_base                                # the hard-string set, against tiktoken
    bpebench parity tokenizer.json --corpus prose-en ./docs/ data.jsonl
    bpebench parity tokenizer.model --against sentencepiece --text "hello  world"
    bpebench parity ggml-vocab-llama-bpe.gguf                 # against .gguf.inp/.gguf.out beside it
    bpebench parity model.gguf --against ggml-vocab-llama-bpe.gguf   # llama.cpp golden files elsewhere
    bpebench parity o200k_base --corpus code-python --size 10000000 --workers 2
    bpebench parity o200k_base --corpus big/ --scheduler tcp://10.0.0.5:8786 --resume

Prints matched/total and the first mismatches (both id lists, each side's pieces side by
side, the text around the first difference). Exit 0 when every document matched, 1 on any
mismatch or failure, 2 for a user mistake (unknown name, unreadable file, library missing).
Results stream to ``--out`` (default under ``$BPEBENCH_CACHE/parity/``) as partitions finish;
``--resume`` continues an interrupted run. See :mod:`bpebench.properties.parity_run`.
"""

from __future__ import annotations

import sys

from bpebench.errors import BpebenchError


def _human_bytes(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def cmd_parity(args) -> int:
    from .parity import format_mismatch
    from .parity_run import run_parity

    report = run_parity(
        args.vocab, against=args.against, sources=args.corpus or (), texts=args.text or (),
        algorithm=args.algorithm, special=args.special, out=args.out, resume=args.resume, workers=args.workers,
        scheduler=args.scheduler, size=args.size, errors=args.errors, doc_bytes=args.doc_bytes,
        partition_bytes=args.partition_bytes, show=args.show, quiet=args.quiet, pattern=args.pattern,
        kind=args.format,
    )
    s = report.summary
    ours = f"bpebench ({report.spec.algorithm})"
    theirs = report.library_label.split()[0] if report.spec.library != "golden" else "golden"
    print(f"parity: {report.vocabulary_name}: {ours} against {report.library_label},"
          f" special-token literals {'as text' if report.spec.special == 'text' else 'parsed'}")
    print(f"inputs: {report.inputs}: {_count(s.docs, 'document')}, {_human_bytes(s.bytes)},"
          f" {_count(s.partitions, 'partition')}")
    parts = [f"{report.seconds:.1f} s"]
    if report.startup_seconds:
        parts.append(f"{report.startup_seconds:.1f} s to start it")
    parts.append(f"{s.cpu_seconds:.1f} s CPU comparing")
    if report.stored_before:
        parts.append(f"{report.stored_before} stored before")
    print(f"ran:    {_count(report.computed, 'partition')} in {report.mode} in {', '.join(parts)}"
          f" (results: {report.directory})")
    share = (10_000 * s.matched // s.docs) / 100  # rounded down: one mismatch in a million is not 100.00%
    print(f"matched {s.matched}/{s.docs} documents ({share:.2f}%); tokens: bpebench {s.ours_tokens},"
          f" {theirs} {s.theirs_tokens}")
    if report.ok:
        return 0
    failed = f" ({s.failed} failed on one side)" if s.failed else ""
    first = f"; the first {len(s.mismatches)}:" if s.mismatches else f" (rows in {report.directory})"
    print(f"MISMATCH: {s.differing} of {s.docs} documents differ{failed}{first}")
    for number, record in enumerate(s.mismatches, 1):
        for line in format_mismatch(number, record, "bpebench", theirs):
            print(line)
    sys.stdout.flush()
    return 1


def _whole_number(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise BpebenchError(f"not a whole number: {text!r}") from None


def register(subparsers) -> None:
    from .parity_inputs import DEFAULT_DOC_BYTES, DEFAULT_PARTITION_BYTES, HARD_STRINGS_NAME, IN_PROCESS_BYTES

    p = subparsers.add_parser(
        "parity", help="compare bpebench's ids with the tokenizer file's own library (exit 1 on any mismatch)",
        description="Run texts through bpebench's Tokenizer and through the file's own library; print"
                    " matched/total and the first mismatches. Small inputs run in this process, large ones on"
                    " a local Dask cluster (or --scheduler).",
    )
    p.add_argument("vocab", metavar="PATH_OR_NAME", help="built-in vocabulary name or tokenizer file")
    p.add_argument("--against", default="auto", metavar="LIB",
                   help="auto (the file's own library: tiktoken for rank files, hf for tokenizer.json,"
                        " sentencepiece for .model, llama.cpp golden files NAME.gguf.inp/.out beside a GGUF),"
                        " tiktoken, hf, sentencepiece, or a path to llama.cpp golden files (NAME, NAME.inp or"
                        " NAME.out)")
    p.add_argument("--corpus", nargs="+", metavar="NAME_OR_PATH",
                   help=f"corpus names ({HARD_STRINGS_NAME}, `bpebench corpora` lists the rest), files (.jsonl:"
                        f" a JSON string or {{\"text\": ...}} per line) or directories (default: {HARD_STRINGS_NAME})")
    p.add_argument("--text", action="append", metavar="TEXT", help="a text to compare (repeatable)")
    p.add_argument("--algorithm", "-a", default=None, help="bpebench encoder (default: the fastest exact one)")
    p.add_argument("--pattern", default=None, metavar="NAME_OR_REGEX",
                   help="pre-tokenizer of a rank file that carries none (gpt2, cl100k, o200k, llama3, qwen2 or a"
                        " regex), for both sides")
    p.add_argument("--format", default=None, metavar="FORMAT",
                   help="the file's format instead of recognising it: tiktoken, hf, spm, gguf or tekken")
    p.add_argument("--special", choices=("text", "parse"), default="text",
                   help="special-token literals: ordinary text on both sides (default, as llama.cpp's test and"
                        " tiktoken's encode_ordinary), or parsed by each side")
    p.add_argument("--show", type=_whole_number, default=3, metavar="N", help="mismatches to show (default 3)")
    p.add_argument("--size", type=_whole_number, default=None, metavar="BYTES",
                   help="size of named corpora that take one; read at most about this much of each file")
    p.add_argument("--errors", choices=("strict", "replace"), default="strict",
                   help="text files that are not UTF-8: an error (default) or U+FFFD replacements")
    p.add_argument("--workers", type=_whole_number, default=None, metavar="N",
                   help=f"local Dask worker processes (default: one per core, and only for inputs over"
                        f" {IN_PROCESS_BYTES // 1_000_000} MB; 0 runs in this process)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on this Dask scheduler (tcp://host:port) and its workers")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="results directory (default: $BPEBENCH_CACHE/parity/<vocabulary>-<library>-<hash>)")
    p.add_argument("--resume", action="store_true", help="keep the partitions an interrupted run stored")
    p.add_argument("--doc-bytes", type=_whole_number, default=DEFAULT_DOC_BYTES, metavar="N",
                   help=f"text files and corpora are cut into documents of whole lines of about N bytes"
                        f" (default {DEFAULT_DOC_BYTES})")
    p.add_argument("--partition-bytes", type=_whole_number, default=DEFAULT_PARTITION_BYTES, metavar="N",
                   help=f"bytes of documents per task (default {DEFAULT_PARTITION_BYTES})")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_parity)
