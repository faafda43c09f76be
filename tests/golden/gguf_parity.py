"""Measure bpebench's parity with llama.cpp on real GGUF vocabulary files (not part of the test run).

    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp/sdist
    python tests/golden/gguf_parity.py /tmp/sdist/llama_cpp_python-0.3.36.tar.gz [--fuzz 2000] [--swap-pre]

The argument is a directory of ``.gguf`` files, single files, or a ``llama-cpp-python``
sdist (which vendors llama.cpp's ``models/ggml-vocab-*.gguf`` with their ``.inp``/``.out``
test pairs; they are extracted to a temporary directory). For each file it reports:

* whether bpebench loads it, or its one-line refusal;
* llama.cpp's own test pair (``.inp`` texts separated by ``__ggml_vocab_test__`` lines,
  ``.out`` ids per text; ``parse_special=False``, no BOS), matched / total;
* with ``llama-cpp-python`` installed, llama.cpp's ids on ``make_llama_cpp_golden.py``'s
  hard strings plus ``--fuzz`` random texts: ordinary (``encode_ordinary`` vs
  ``parse_special=False``), special (``encode(allowed_special="all")`` vs
  ``parse_special=True``) and with BOS/EOS (``llama_tokenize(add_special=True)``);
* ``--swap-pre``: every byte-level file is also rewritten under each pre-tokenizer type
  llama.cpp knows (same tokens and merges, another ``tokenizer.ggml.pre``) and compared again.

Prints Markdown tables (``docs/gguf-tiktoken.md`` holds the last run).
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_llama_cpp_golden import golden_texts, random_texts  # noqa: E402

from bpebench.errors import BpebenchError  # noqa: E402
from bpebench.algorithms.formats import load_path  # noqa: E402
from bpebench.algorithms.pipeline.llama_cpp_specials import llama_tokenize  # noqa: E402
from bpebench.algorithms.pipeline.tokenizer import Tokenizer  # noqa: E402

SEPARATOR = "\n__ggml_vocab_test__\n"


def gguf_files(arguments: list[str], scratch: Path) -> list[Path]:
    files: list[Path] = []
    for argument in map(Path, arguments):
        if argument.is_dir():
            files += sorted(argument.glob("*.gguf"))
        elif argument.name.endswith(".tar.gz"):
            with tarfile.open(argument) as archive:
                members = [m for m in archive.getmembers()
                           if "/vendor/llama.cpp/models/ggml-vocab-" in m.name and m.isfile()]
                for member in members:
                    member.name = Path(member.name).name
                    archive.extract(member, scratch, filter="data")
            files += sorted(scratch.glob("*.gguf"))
        else:
            files.append(argument)
    return files


def llama_cpp_test_pair(path: Path) -> list[tuple[str, list[int]]] | None:
    """llama.cpp's ``.inp`` / ``.out`` pair next to ``path``, read as ``tests/test-tokenizer-0.cpp`` does."""
    inp, out = Path(f"{path}.inp"), Path(f"{path}.out")
    if not inp.exists() or not out.exists():
        return None
    raw = inp.read_text(encoding="utf-8")
    texts, position = [], 0
    while position < len(raw):
        found = raw.find(SEPARATOR, position)
        if found == -1:
            texts.append(raw[position:])
            break
        texts.append(raw[position:found])
        position = found + len(SEPARATOR)
    ids = [[int(x) for x in line.split()] for line in out.read_text(encoding="utf-8").splitlines()]
    return list(zip(texts, ids)) if len(texts) == len(ids) else None


def compare_with_llama_cpp(path: Path, tok: Tokenizer, texts: list[str]) -> dict[str, tuple[int, int, list]]:
    import llama_cpp

    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    result = {}
    for mode in ("ordinary", "special", "add_special"):
        matched, firsts = 0, []
        for text in texts:
            data = text.encode("utf-8")
            if mode == "ordinary":
                got, want = tok.encode_ordinary(text), llm.tokenize(data, add_bos=False, special=False)
            elif mode == "special":
                got, want = tok.encode(text, allowed_special="all"), llm.tokenize(data, add_bos=False, special=True)
            else:
                got, want = llama_tokenize(tok, text, add_special=True), llm.tokenize(data, add_bos=True, special=False)
            if got == want:
                matched += 1
            elif len(firsts) < 2:
                firsts.append((text, got[:12], want[:12]))
        result[mode] = (matched, len(texts), firsts)
    return result


def rewrite_with_pre(source: Path, pre: str, target: Path) -> Path:
    import gguf

    from bpebench.algorithms.formats.gguf_metadata import read_gguf_metadata

    meta = read_gguf_metadata(source)
    writer = gguf.GGUFWriter(str(target), "llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(meta["tokenizer.ggml.tokens"])
    writer.add_token_types([int(k) for k in meta["tokenizer.ggml.token_type"]])
    writer.add_token_merges(meta["tokenizer.ggml.merges"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="GGUF files, directories of them, or a llama-cpp-python sdist")
    parser.add_argument("--fuzz", type=int, default=300, help="random texts beyond the hard strings (default 300)")
    parser.add_argument("--swap-pre", action="store_true", help="also try every pre-tokenizer on each BPE file")
    args = parser.parse_args()
    try:
        import llama_cpp  # noqa: F401
        live = True
    except ImportError:
        live = False
    texts = golden_texts() + random_texts(args.fuzz, seed=7)
    print(f"{len(texts)} texts; llama.cpp {'live (llama-cpp-python)' if live else 'not installed: test pairs only'}\n")
    print("| file | model / pre | bpebench | llama.cpp test pair | ordinary | special | BOS/EOS | load s |")
    print("|---|---|---|---|---|---|---|---|")
    swappable = []
    with tempfile.TemporaryDirectory() as scratch:
        for path in gguf_files(args.paths, Path(scratch)):
            start = time.perf_counter()
            try:
                vocab = load_path(path)
            except BpebenchError as exc:
                reason = str(exc).split(": ", 1)[-1]
                print(f"| {path.name} | | refused: {reason} | | | | | |")
                continue
            seconds = time.perf_counter() - start
            info = vocab.llama_cpp or {}
            kind = f"gpt2 / {info.get('pre_name')}" if info.get("pre_name") else "llama (SPM)"
            tok = Tokenizer(vocab)
            pair = llama_cpp_test_pair(path)
            pair_score = "-" if pair is None else (
                f"{sum(tok.encode_ordinary(t) == ids for t, ids in pair)}/{len(pair)}")
            cells = ["-", "-", "-"]
            if live:
                result = compare_with_llama_cpp(path, tok, texts)
                cells = [f"{m}/{n}" for m, n, _ in result.values()]
                for mode, (_, _, firsts) in result.items():
                    for text, got, want in firsts:
                        print(f"<!-- {path.name} {mode}: {text!r}: bpebench {got} llama.cpp {want} -->")
            print(f"| {path.name} | {kind} | loads | {pair_score} | {' | '.join(cells)} | {seconds:.1f} |", flush=True)
            if info.get("pre_name"):
                swappable.append(path)
        if args.swap_pre and live:
            from bpebench.algorithms.formats.llama_cpp_pre import PRE_NAMES, PRE_TYPES

            names = {}
            for name, pre in PRE_NAMES.items():
                if PRE_TYPES[pre.type].byte_encode:
                    names.setdefault(pre.type, name)
            print("\n| file | pre-tokenizers tried | texts x modes matched | mismatching pre-tokenizers |")
            print("|---|---|---|---|")
            for path in swappable:
                matched = total = 0
                failing = []
                for name in names.values():
                    target = rewrite_with_pre(path, name, Path(scratch) / "swapped.gguf")
                    result = compare_with_llama_cpp(target, Tokenizer(load_path(target)), texts)
                    m = sum(r[0] for r in result.values())
                    n = sum(r[1] for r in result.values())
                    matched, total = matched + m, total + n
                    if m != n:
                        failing.append(name)
                print(f"| {path.name} | {len(names)} | {matched}/{total} | {', '.join(failing) or 'none'} |", flush=True)


if __name__ == "__main__":
    main()
