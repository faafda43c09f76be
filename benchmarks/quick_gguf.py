"""Quick speed check of GGUF vocabularies: bpebench's llama.cpp pipeline next to llama.cpp itself.

    python benchmarks/quick_gguf.py FILE.gguf [FILE.gguf ...] [--size 1000000] [--repeat 3]

For each file and each corpus (``prose-en``, ``code-python``, ``udhr-all``), times on text
neither side has seen (both warm up on the corpus' other half first; then runs interleaved
round-robin, median of ``--repeat``):

* bpebench ``Tokenizer(vocab).encode_ordinary`` (llama.cpp's pre-tokenizer emulation,
  special-token rules, the fastest exact encoder for the vocabulary);
* the pre-tokenizer alone (``LlamaCppPretokenizer.split``);
* llama.cpp through ``llama-cpp-python`` (``tokenize(add_bos=False, special=False)``),
  when installed, and the ratio llama.cpp time / bpebench time (above 1: bpebench faster).

Both must give the same ids (checked). A plain script, not an asv suite.
"""

from __future__ import annotations

import argparse

from bpebench.benchmarks.quick_exact import interleaved
from bpebench.corpora.registry import get
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

CORPORA = ("prose-en", "code-python", "udhr-all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--size", type=int, default=1_000_000, help="bytes of each corpus timed (default 1 MB)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    try:
        import llama_cpp
    except ImportError:
        llama_cpp = None
    print("| file | corpus | MB | bpebench MB/s | its split alone MB/s | llama.cpp MB/s | llama.cpp time / bpebench |")
    print("|---|---|---|---|---|---|---|")
    for path in args.files:
        vocab = load_vocabulary(path)
        tok = Tokenizer(vocab)
        llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False) if llama_cpp else None
        for name in CORPORA:
            text = get(name, size=2 * args.size)
            warm, timed = text[: len(text) // 2], text[len(text) // 2:]
            tok.encode_ordinary(warm)
            data = timed.encode("utf-8")
            mb = len(data) / 1e6
            runs = {"ours": lambda: tok.encode_ordinary(timed), "split": lambda: tok.pretokenizer.split(timed)}
            if llm is not None:
                llm.tokenize(warm.encode("utf-8"), add_bos=False, special=False)
                runs["llama.cpp"] = lambda: llm.tokenize(data, add_bos=False, special=False)
            times = {label: median for label, (median, _) in interleaved(runs, args.repeat).items()}
            whole = type(tok.pretokenizer).__name__ == "WholeText"  # SentencePiece models: nothing to split
            cells = [f"{mb / times['ours']:.2f}", "-" if whole else f"{mb / times['split']:.2f}"]
            if llm is not None:
                same = tok.encode_ordinary(timed) == llm.tokenize(data, add_bos=False, special=False)
                cells += [f"{mb / times['llama.cpp']:.2f}",
                          f"{times['llama.cpp'] / times['ours']:.2f}" + ("" if same else " (ids DIFFER)")]
            else:
                cells += ["-", "-"]
            print(f"| {path.rsplit('/', 1)[-1]} | {name} | {mb:.2f} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
