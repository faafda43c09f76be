"""Parity of real tokenizer files with their own library (a plain script, not an asv suite).

    python benchmarks/quick_file_parity.py                       # every file mistral-common ships
    python benchmarks/quick_file_parity.py PATH [PATH ...]       # tokenizer.json / .model files
    python benchmarks/quick_file_parity.py --lines 2000 PATH     # more corpus lines per file

Each file is loaded by bpebench and by its own library (HF ``tokenizers`` for
``tokenizer.json``, ``sentencepiece`` for ``.model``); both encode the same texts: the
component-pipeline texts of the hard-string set
(``bpebench.corpora.hard_strings.PIPELINE_TEXTS``) and the lines of the natural-text
corpora (UDHR in every language, English prose, Python code, digits, whitespace, combining
marks, emoji ZWJ sequences). Prints per file: the components bpebench uses, texts matched
/ total with the summed encode times (each text once, after a warm-up on the first 40;
the library's time measured in the same loop), and the first mismatches with both id lists. ``tokenizers``:
``encode(add_special_tokens=False)``, added tokens carved (``allowed_special="all"``);
``sentencepiece``: ``encode``. A file bpebench refuses prints its one-line reason.

Exit status 1 when any loaded file has a mismatch.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

from bpebench.errors import BpebenchError

CORPORA = ["udhr-all", "prose-en", "code-python", "digits", "whitespace", "combining-marks", "emoji-zwj"]


def default_files() -> list[Path]:
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        return []
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    return sorted(p for p in data.iterdir() if ".model" in p.name)


def texts(lines_per_corpus: int) -> list[str]:
    import bpebench.corpora as corpora
    from bpebench.corpora.hard_strings import PIPELINE_TEXTS

    out = list(PIPELINE_TEXTS)
    for name in CORPORA:
        text = corpora.get(name)
        out.extend(line for line in text.splitlines()[:lines_per_corpus] if line)
    return out


def library_encoder(path: Path):
    """(library name and version, encode function) for the file's own library."""
    import importlib.metadata

    if path.suffix == ".json" or path.read_bytes()[:1] == b"{":
        from tokenizers import Tokenizer

        hf = Tokenizer.from_file(str(path))
        return f"tokenizers {importlib.metadata.version('tokenizers')}", \
            lambda t: hf.encode(t, add_special_tokens=False).ids
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(path))
    return f"sentencepiece {importlib.metadata.version('sentencepiece')}", sp.encode


def check(path: Path, corpus: list[str], show: int = 3) -> bool | None:
    from bpebench.algorithms.formats import load_path
    from bpebench.algorithms.pipeline.hf_pipeline import describe_pipeline
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    print(f"== {path}")
    try:
        vocab = load_path(path)
        tok = Tokenizer(vocab)
    except BpebenchError as exc:
        print(f"   refused: {exc}")
        return None
    library, encode = library_encoder(path)
    for part, text in describe_pipeline(vocab).items():
        print(f"   {part + ':':<15}{text}")
    matched, shown = 0, 0
    for text in corpus[:40]:  # warm-up (compilation, tables) on texts that are not timed
        tok.encode(text, allowed_special="all"), encode(text)
    ours_time = theirs_time = 0.0
    for text in corpus:
        start = time.perf_counter()
        ours = tok.encode(text, allowed_special="all")
        middle = time.perf_counter()
        theirs = encode(text)
        ours_time += middle - start
        theirs_time += time.perf_counter() - middle
        if ours == theirs:
            matched += 1
        elif shown < show:
            shown += 1
            print(f"   MISMATCH {text[:60]!r}\n     bpebench {ours[:20]}\n     library  {theirs[:20]}")
    print(f"   parity with {library} ({tok.encoder.name}): {matched}/{len(corpus)} texts;"
          f" time {ours_time:.2f} s (library {theirs_time:.2f} s, {ours_time / max(theirs_time, 1e-9):.1f}x)")
    return matched == len(corpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files (default: mistral-common's .model files)")
    parser.add_argument("--lines", type=int, default=400, help="lines taken from each corpus (default 400)")
    args = parser.parse_args(argv)
    corpus = texts(args.lines)
    results = [check(p, corpus) for p in (args.paths or default_files())]
    return 1 if any(r is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
