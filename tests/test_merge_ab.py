"""benchmarks/merge_ab.py: the pieces it times are the ones the kernel merges, a variant that gives other
ids stops it, and a bad argument is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "merge_ab.py"
MERGE = REPO / "algorithms" / "kernels" / "interleaved_merge.py"


def _run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, cwd=REPO,
                          timeout=600)


def test_the_timed_pieces_are_new_and_of_several_tokens(monkeypatch):
    """Oracles: the Tokenizer's ids of each piece (several), and words of the warm-up documents."""
    monkeypatch.delenv("BPEBENCH_AOT", raising=False)  # the script sets it for its own process
    import importlib

    merge_ab = importlib.import_module("bpebench.benchmarks.merge_ab")
    from bpebench import Tokenizer, load_vocabulary
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline
    from bpebench.benchmarks import protocol

    vocab = load_vocabulary("cl100k_base")
    code = protocol.stream("code")
    pieces = merge_ab.new_pieces(vocab, [code], FusedPipeline(vocab).plan)
    assert len(pieces) > 100 and len(set(pieces)) == len(pieces)
    tokenizer = Tokenizer(vocab)
    for piece in pieces[:300]:
        assert len(tokenizer.encode_ordinary(piece.decode("utf-8", "surrogatepass"))) >= 2
        assert piece not in vocab.tokens and len(piece) <= 24
    # a word between spaces in both the warm-up and the measured documents is the piece " word" in
    # both (cl100k's pattern): not new
    warm_text, measured_text = " ".join(code.warm), " ".join(code.measured)
    shared = {w for doc in code.measured for w in doc.split(" ")
              if w.isascii() and w.isalpha() and f" {w} " in warm_text and f" {w} " in measured_text
              and len(tokenizer.encode_ordinary(" " + w)) >= 2}
    assert shared
    assert not {p for p in pieces if p.startswith(b" ") and p[1:].decode() in shared}


def test_a_variant_with_other_ids_is_one_line_and_exit_1(tmp_path):
    variant = tmp_path / "interleaved_merge_b.py"
    source = MERGE.read_text(encoding="utf-8")
    wrong = source.replace("        out[n_out] = lanes[lane, _PARTS + i]\n",
                           "        out[n_out] = lanes[lane, _PARTS + i] + 1\n")
    assert wrong != source
    variant.write_text(wrong, encoding="utf-8")
    done = _run("--variant", str(variant), "--kinds", "code", "--rounds", "1", "--evict-mb", "0")
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == "merge_ab: variant and lanes give different ids"


@pytest.mark.parametrize("arguments, message", [
    (["--group", "0"], "--group must be 1 to 16"),
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--variant", "/no/such/file.py"], "no such file"),
    (["--vocab", "no-such-vocabulary"], "unknown vocabulary"),
])
def test_a_bad_argument_is_one_line_and_exit_2(arguments, message):
    done = _run(*arguments)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
