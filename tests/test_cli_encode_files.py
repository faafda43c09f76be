"""``bpebench encode --input FILE... --output ids.npy``: the streamed, threaded ids equal the
ids of one ``encode_ordinary`` call per file (and tiktoken's)."""

from __future__ import annotations

import numpy as np
import pytest

from bpebench import corpora
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.pipeline.streaming import encode_files
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.cli import main


def _files(tmp_path):
    texts = [corpora.get("prose-en", size=300_000), corpora.get("code-python", size=200_000) + "<|endoftext|>",
             corpora.get("udhr-all", size=120_000), ""]
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"doc{i}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return texts, paths


@pytest.mark.parametrize("threads", ["1", "2"])
def test_encode_files_cli_writes_the_ids_of_each_file(tmp_path, capsys, threads):
    texts, paths = _files(tmp_path)
    out = tmp_path / "ids.npy"
    code = main(["encode", "--input", *map(str, paths), "--output", str(out), "--threads", threads])
    assert code == 0
    assert "4 file(s)" in capsys.readouterr().err
    got = np.load(out)
    assert got.dtype == np.uint32
    tiktoken = pytest.importorskip("tiktoken")
    from bpebench.algorithms.formats.patterns import resolve_pattern

    vocab = load_vocabulary("o200k_base")
    enc = tiktoken.Encoding("o200k", pat_str=resolve_pattern(vocab.pattern),
                            mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)}, special_tokens={})
    expected = [i for t in texts for i in enc.encode_ordinary(t)]
    assert got.tolist() == expected


def test_small_blocks_cut_only_at_pre_token_boundaries(tmp_path):
    """Blocks far smaller than a file: the ids still equal one call per file."""
    texts, paths = _files(tmp_path)
    tok = Tokenizer(load_vocabulary("cl100k_base"))
    stats = encode_files(tok, paths, tmp_path / "ids.npy", num_threads=2, block_bytes=4096, progress=False)
    expected = [tok.encode_ordinary(t, num_threads=1) for t in texts]
    assert np.load(tmp_path / "ids.npy").tolist() == [i for ids in expected for i in ids]
    assert stats.offsets == list(np.cumsum([0] + [len(e) for e in expected]))


def test_encode_files_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff\xfe")
    assert main(["encode", "--input", str(bad), "--output", str(tmp_path / "x.npy")]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and len(err.strip().splitlines()) == 1
    assert main(["encode", "--input", str(tmp_path / "missing.txt"), "--output", str(tmp_path / "x.npy")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["encode", "--input", str(bad)]) == 2
    assert "--output" in capsys.readouterr().err
