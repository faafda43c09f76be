"""Quick speed check of GGUF vocabularies: bpebench's llama.cpp pipeline next to llama.cpp itself.

    python benchmarks/quick_gguf.py FILE.gguf [FILE.gguf ...] [--size 1000000] [--repeat 3]
    python benchmarks/quick_gguf.py --from cl100k_base:llama-bpe --from qwen:qwen2
    python benchmarks/quick_gguf.py --batches --from o200k_base:gpt-4o --from qwen:qwen35

``--from VOCAB:PRE`` writes a built-in ranks vocabulary as a GGUF file with that
``tokenizer.ggml.pre`` name (a stand-in for a real model's file, nothing downloaded) and times it
on the unseen protocol (``benchmarks/protocol.py``, one CPU): the GGUF file through the fused
pipeline (the default where llama.cpp's pre-tokenizer is a hand-written splitter), through the
reference path (``pretokenizer="regex"``: llama.cpp's split emulated over ``re``), and the same
ranks loaded as a tiktoken vocabulary. With ``--batches``: batches of unseen documents on every core
(``encode_ordinary_batch`` on one thread and on all, its numpy form, the same ranks as tiktoken).

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


def gguf_from_ranks(vocab_name: str, pre: str, path: str) -> str:
    """Write the ranks vocabulary ``vocab_name`` as a byte-level GGUF file: its tokens in GPT-2's
    byte alphabet, its merges in priority order, its special tokens typed CONTROL."""
    import gguf

    from bpebench.algorithms.formats.byte_alphabet import bytes_to_token_text
    from bpebench.algorithms.peers import merges_in_priority_order

    vocab = load_vocabulary(vocab_name)
    texts = [bytes_to_token_text(t) for t in vocab.tokens]
    types = [gguf.TokenType.NORMAL] * len(texts)
    for literal, token_id in vocab.special_tokens.items():
        while token_id >= len(texts):
            texts.append(f"<unused{len(texts)}>")
            types.append(gguf.TokenType.UNUSED)
        texts[token_id], types[token_id] = literal, gguf.TokenType.CONTROL
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(texts)
    writer.add_token_types(types)
    writer.add_token_merges([f"{texts[a]} {texts[b]}" for a, b in merges_in_priority_order(vocab)])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def table_from_ranks(specs: list[str]) -> None:
    """The unseen protocol (one CPU, every document once, the rows taking turns) for GGUF files made
    from built-in ranks vocabularies."""
    import tempfile
    from pathlib import Path

    from bpebench.benchmarks import protocol

    protocol.pin_to_one_cpu()
    print("GGUF files written from built-in ranks (unseen text, one CPU, MB/s; ids checked equal)")
    print("| file | kind | GGUF, fused | GGUF, reference path | same ranks as tiktoken | fused / reference |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for spec in specs:
            vocab_name, pre = spec.split(":")
            vocab = load_vocabulary(gguf_from_ranks(vocab_name, pre, str(Path(scratch, f"{vocab_name}-{pre}.gguf"))))
            rows = {"fused": Tokenizer(vocab), "reference": Tokenizer(vocab, pretokenizer="regex"),
                    "tiktoken": Tokenizer(vocab_name)}
            if not rows["fused"].fused:
                raise SystemExit(f"{spec}: no fused path for this pre-tokenizer")

            def same(name: str, result, first) -> None:
                if name != "tiktoken" and result != first:
                    raise SystemExit(f"{spec}: {name} ids differ from the fused path's")

            for kind in protocol.KINDS:
                text_stream = protocol.stream(kind)
                seconds = protocol.time_unseen({k: t.encode_ordinary for k, t in rows.items()}, text_stream, same)
                mb = text_stream.measured_bytes / 1e6
                speeds = {k: mb / v for k, v in seconds.items()}
                print(f"| {vocab_name} as {pre} | {kind} | {speeds['fused']:.1f} | {speeds['reference']:.2f} |"
                      f" {speeds['tiktoken']:.1f} | {seconds['reference'] / seconds['fused']:.1f}x |", flush=True)


def table_batches(specs: list[str], rounds: int = 5) -> None:
    """Batches on every core (``--batches``): the measured documents of every kind dealt into
    ``rounds`` disjoint batches (as the all-core table of ``quick_pipeline.py``), each encoded once
    by every row after a warm-up batch, the rows taking turns; MB/s over all batches, ids checked
    equal to the GGUF file's on one thread."""
    import os
    import tempfile
    from pathlib import Path

    from bpebench.benchmarks.quick_pipeline import _allcore_batches, _in_rotation

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    warm, batches, n_bytes = _allcore_batches(rounds)
    print(f"\nGGUF files written from built-in ranks: batches on {cpus} CPUs ({n_bytes / 1e6:.2f} MB in {rounds}"
          " batches of unseen documents, MB/s; ids checked equal)")
    print("| file | batch, 1 thread | batch, all threads | to numpy, all threads | same ranks as tiktoken,"
          " all threads |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for spec in specs:
            vocab_name, pre = spec.split(":")
            vocab = load_vocabulary(gguf_from_ranks(vocab_name, pre, str(Path(scratch, f"{vocab_name}-{pre}.gguf"))))
            gguf_tok, ranks_tok = Tokenizer(vocab), Tokenizer(vocab_name)
            rows = {"one": lambda texts: gguf_tok.encode_ordinary_batch(texts, num_threads=1),
                    "all": gguf_tok.encode_ordinary_batch,
                    "flat": gguf_tok.encode_ordinary_batch_to_numpy,
                    "tiktoken": ranks_tok.encode_ordinary_batch}
            for row in rows.values():
                row(warm)

            def check(r: int, outputs: dict) -> None:
                ids, offsets = outputs["flat"]
                flat = [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
                if not outputs["one"] == outputs["all"] == flat:
                    raise SystemExit(f"{spec}: batch {r} gives other ids on all threads")

            wall, _ = _in_rotation(rows, batches, check)
            cells = " | ".join(f"{n_bytes / 1e6 / wall[k]:.1f}" for k in rows)
            print(f"| {vocab_name} as {pre} | {cells} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--from", dest="from_ranks", action="append", default=[], metavar="VOCAB:PRE",
                        help="time a GGUF file written from a built-in ranks vocabulary (repeatable)")
    parser.add_argument("--size", type=int, default=1_000_000, help="bytes of each corpus timed (default 1 MB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batches", action="store_true",
                        help="with --from: batches on every core instead of the one-CPU unseen table")
    args = parser.parse_args()
    if args.from_ranks:
        (table_batches if args.batches else table_from_ranks)(args.from_ranks)
    if not args.files:
        return
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
