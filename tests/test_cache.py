"""The zero-copy vocabulary cache: built once, mapped afterwards, rebuilt when deleted,
damaged or stale, safe when two processes build at once, and never a different id."""

from __future__ import annotations

import base64
import multiprocessing
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from bpebench.algorithms.cache import files
from bpebench.algorithms.cache import vocabularies as cache
from bpebench.algorithms.formats import _CACHE, load_vocabulary
from bpebench.algorithms.formats.tiktoken_file import load_tiktoken
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import make_encoder

SAMPLE = "The zero-copy cache maps the compiled arrays; hello world 12345, naïve café!\n" * 3
N_TOKENS = 3000  # the first ranks of cl100k are a complete, much smaller vocabulary


@pytest.fixture(scope="module")
def small_tiktoken_file(tmp_path_factory) -> Path:
    """A tiktoken file with cl100k's first N_TOKENS ranks (every token merges from earlier ones)."""
    tokens = load_vocabulary("cl100k_base").tokens[:N_TOKENS]
    path = tmp_path_factory.mktemp("vocab") / "small.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    return path


@pytest.fixture()
def cache_root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "vocabularies"


class Builds:
    """``build`` for ``cached_vocabulary`` that counts how often it really ran."""

    def __init__(self, path: Path) -> None:
        self.path, self.count = path, 0

    def __call__(self):
        self.count += 1
        return load_tiktoken(self.path, name="small")


def load(path: Path, builds: Builds, **kwargs):
    return cache.cached_vocabulary(path, f"test:{path}", builds, **kwargs)


def ids(vocab) -> list[int]:
    return make_encoder("backtracking", vocab).encode(SAMPLE.encode())


def cache_files(root: Path) -> list[Path]:
    return sorted(root.glob("*.bpv"))


@pytest.fixture()
def expected(small_tiktoken_file) -> list[int]:
    """The naive reference on the freshly parsed file: the ids every cached load must give."""
    return bpe_reference(load_tiktoken(small_tiktoken_file, name="small"), SAMPLE.encode())


# ============================================================================= hit and miss
def test_first_load_builds_later_loads_map(small_tiktoken_file, cache_root, expected):
    builds = Builds(small_tiktoken_file)
    built = load(small_tiktoken_file, builds)
    assert builds.count == 1 and type(built).__name__ == "Vocabulary"
    assert len(cache_files(cache_root)) == 1
    mapped = load(small_tiktoken_file, builds, verify=True)
    assert builds.count == 1 and isinstance(mapped, cache.CachedVocabulary)
    assert ids(built) == ids(mapped) == expected
    # the Python token list is only built when asked for, and then equals the source
    assert mapped.__dict__["_tokens"] is None
    assert mapped.tokens == built.tokens and mapped.decode_bytes(expected) == SAMPLE.encode()
    assert mapped.fingerprint == built.fingerprint and mapped.problems() == built.problems() == []
    assert (np.asarray(mapped.priority) == built.priority).all() and len(mapped) == N_TOKENS


def test_deleted_cache_is_rebuilt(small_tiktoken_file, cache_root, expected):
    builds = Builds(small_tiktoken_file)
    load(small_tiktoken_file, builds)
    for f in cache_files(cache_root):
        f.unlink()
    assert ids(load(small_tiktoken_file, builds)) == expected and builds.count == 2
    assert isinstance(load(small_tiktoken_file, builds), cache.CachedVocabulary) and builds.count == 2


def test_caches_of_vanished_sources_are_removed(small_tiktoken_file, tmp_path, cache_root, expected, monkeypatch):
    """A temporary file's cache can never be hit again once the file is gone (the key holds its
    path and content); the next build removes it and its stamp, and leaves caches of files that remain."""
    monkeypatch.setattr(files, "RACY_SECONDS", 0.0)  # a cache file read back gets its stamp at once
    copies = {}
    for name in ("kept", "gone", "later"):
        copies[name] = tmp_path / f"{name}.tiktoken"
        shutil.copyfile(small_tiktoken_file, copies[name])
    for name in ("kept", "gone"):
        load(copies[name], Builds(copies[name]))
        load(copies[name], Builds(copies[name]))  # read back: stamped
    assert len(cache_files(cache_root)) == 2 and len(list(cache_root.glob("*.verified"))) == 2
    copies["gone"].unlink()
    assert len(cache_files(cache_root)) == 2  # nothing is scanned on a hit or a load of another
    load(copies["later"], Builds(copies["later"]))
    remaining = cache_files(cache_root)
    assert len(remaining) == 2
    assert sorted(cache_root.glob("*.verified")) == [files.stamp_path(p) for p in remaining if "kept" in p.name]
    kept = Builds(copies["kept"])
    assert ids(load(copies["kept"], kept)) == expected and kept.count == 0  # still mapped, not rebuilt
    regrown = Builds(copies["later"])
    assert ids(load(copies["later"], regrown)) == expected and regrown.count == 0


@pytest.mark.parametrize("damage", ["truncate-half", "truncate-last-byte", "header-byte", "magic", "empty"])
def test_damaged_cache_is_detected_and_rebuilt(small_tiktoken_file, cache_root, expected, damage):
    builds = Builds(small_tiktoken_file)
    load(small_tiktoken_file, builds)
    (path,) = cache_files(cache_root)
    size = path.stat().st_size
    raw = bytearray(path.read_bytes())
    if damage == "truncate-half":
        os.truncate(path, size // 2)
    elif damage == "truncate-last-byte":
        os.truncate(path, size - 1)
    elif damage == "header-byte":
        raw[len(cache.MAGIC) + 40 + 10] ^= 0x20  # inside the JSON header
        path.write_bytes(bytes(raw))
    elif damage == "magic":
        raw[0] ^= 0xFF
        path.write_bytes(bytes(raw))
    else:
        path.write_bytes(b"")
    with pytest.raises(cache.CacheDamaged):
        cache.read_cache(path, path.name[-36:-4])
    again = load(small_tiktoken_file, builds)
    assert builds.count == 2 and ids(again) == expected
    assert path.stat().st_size == size  # rewritten whole
    assert ids(load(small_tiktoken_file, builds)) == expected and builds.count == 2


@pytest.mark.parametrize("where", [-200, -5000, 10_000])
def test_damaged_array_data_is_never_used(small_tiktoken_file, cache_root, expected, capsys, where):
    """One flipped bit in the arrays (sizes and header still check out) is found on the next load,
    without asking for verification: the file changed since its bytes were last checked."""
    builds = Builds(small_tiktoken_file)
    load(small_tiktoken_file, builds)
    (path,) = cache_files(cache_root)
    assert isinstance(load(small_tiktoken_file, builds), cache.CachedVocabulary)
    raw = bytearray(path.read_bytes())
    raw[where] ^= 0x01
    path.write_bytes(bytes(raw))
    capsys.readouterr()
    assert ids(load(small_tiktoken_file, builds)) == expected and builds.count == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "discarded a damaged cache file" in err and "checksum" in err
    assert isinstance(load(small_tiktoken_file, builds), cache.CachedVocabulary) and builds.count == 2


def test_a_sound_file_is_hashed_once_after_each_change(small_tiktoken_file, cache_root, monkeypatch):
    builds = Builds(small_tiktoken_file)
    load(small_tiktoken_file, builds)
    (path,) = cache_files(cache_root)
    hashed = []
    real = cache.hashlib.sha256

    def counting(*args):
        if not args:  # the digest of the array bytes starts empty; other hashes are of given bytes
            hashed.append(1)
        return real(*args)

    monkeypatch.setattr(cache.hashlib, "sha256", counting)
    load(small_tiktoken_file, builds)  # written less than RACY_SECONDS ago: checked, and no stamp
    load(small_tiktoken_file, builds)
    assert len(hashed) == 2 and not files.stamp_path(path).exists()
    monkeypatch.setattr(files, "RACY_SECONDS", 0.0)  # as if the file were older
    load(small_tiktoken_file, builds)  # checked, then stamped
    load(small_tiktoken_file, builds)
    assert len(hashed) == 3 and files.stamp_path(path).exists()
    time.sleep(0.02)  # past a tick of the file system's clock
    os.utime(path)  # a change the file system sees (here without new bytes): checked, then stamped
    load(small_tiktoken_file, builds)
    load(small_tiktoken_file, builds)
    assert len(hashed) == 4 and builds.count == 1


def test_the_o200k_bit_flip_of_the_issue_gives_tiktokens_ids(tmp_path, monkeypatch):
    """A bit flipped near the end of the real o200k cache once gave 14 wrong ids (tiktoken: 10)."""
    import subprocess
    import sys

    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    script = ("import json, bpebench; t = bpebench.Tokenizer('o200k_base', pretokenizer='regex');"
              "print(json.dumps(t.encode_ordinary('The quick brown fox jumps over the lazy dog.')))")
    env = {**os.environ, "BPEBENCH_CACHE": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    (path,) = (tmp_path / "vocabularies").glob("*.bpv")
    with open(path, "r+b") as f:
        f.seek(-4096, os.SEEK_END)
        byte = f.read(1)
        f.seek(-4096, os.SEEK_END)
        f.write(bytes([byte[0] ^ 0x10]))
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.properties.oracles import tiktoken_encoding

    expected = tiktoken_encoding(load_vocabulary("o200k_base")).encode_ordinary(
        "The quick brown fox jumps over the lazy dog.")
    assert json.loads(again.stdout) == json.loads(first.stdout) == expected
    assert "discarded a damaged cache file" in again.stderr

def test_touched_or_modified_source_is_rebuilt(small_tiktoken_file, tmp_path, cache_root, expected):
    source = tmp_path / "copy.tiktoken"
    shutil.copyfile(small_tiktoken_file, source)
    builds = Builds(source)
    load(source, builds)
    (first,) = cache_files(cache_root)
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # touch
    assert ids(load(source, builds)) == expected and builds.count == 2
    (second,) = cache_files(cache_root)  # the stale file was removed
    assert second != first
    # a new last merge: the first two tokens of " bpebench" (a valid pair, corollary II) join
    small = load_tiktoken(source, name="small")
    first, second = bpe_reference(small, b" bpebench")[:2]
    with source.open("ab") as f:
        f.write(base64.b64encode(small.tokens[first] + small.tokens[second]) + b" %d\n" % N_TOKENS)
    vocab = load(source, builds)
    assert builds.count == 3 and len(vocab) == N_TOKENS + 1
    assert N_TOKENS in make_encoder("backtracking", vocab).encode(b" bpebench")
    assert ids(vocab) == bpe_reference(vocab, SAMPLE.encode())
    assert isinstance(load(source, builds), cache.CachedVocabulary) and builds.count == 3


def test_layout_code_is_part_of_the_key(small_tiktoken_file, monkeypatch):
    key = cache.source_key(small_tiktoken_file, "x")
    assert cache.source_key(small_tiktoken_file, "y") != key  # another loader
    monkeypatch.setattr(cache, "_layout_fingerprint", lambda: [["matching.py", 1, 2]])
    assert cache.source_key(small_tiktoken_file, "x") != key  # other code that writes the arrays


# ============================================================================= processes, loaders, switches
def _build_in_process(path: str, barrier, results) -> None:
    def slow_build():
        vocab = load_tiktoken(path, name="small")
        time.sleep(0.3)  # both processes are building before either writes
        return vocab

    barrier.wait()
    vocab = cache.cached_vocabulary(Path(path), f"test:{path}", slow_build)
    results.put((type(vocab).__name__, ids(vocab)))


def test_two_processes_building_at_once(small_tiktoken_file, cache_root, expected):
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    workers = [ctx.Process(target=_build_in_process, args=(str(small_tiktoken_file), barrier, results))
               for _ in range(2)]
    for w in workers:
        w.start()
    got = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert got == [("Vocabulary", expected)] * 2  # both built and wrote
    (path,) = cache_files(cache_root)
    assert not list(cache_root.glob("*.tmp"))
    builds = Builds(small_tiktoken_file)
    assert ids(load(small_tiktoken_file, builds, verify=True)) == expected and builds.count == 0


def _forget(path: str) -> None:
    """Drop ``load_vocabulary``'s memo of ``path`` (keyed by the path and the file's stamp)."""
    for memo in [memo for memo in _CACHE if memo == path or memo.startswith(path + "\0")]:
        del _CACHE[memo]


def test_load_vocabulary_of_a_path_goes_through_the_cache(small_tiktoken_file, cache_root, expected):
    key = str(small_tiktoken_file)
    for _ in range(2):
        _forget(key)
        vocab = load_vocabulary(key)
        assert ids(vocab) == expected and vocab.source == key
    assert isinstance(vocab, cache.CachedVocabulary) and len(cache_files(cache_root)) == 1
    _forget(key)


def test_cache_off(small_tiktoken_file, monkeypatch, tmp_path, expected):
    monkeypatch.setenv("BPEBENCH_VOCAB_CACHE", "off")
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    builds = Builds(small_tiktoken_file)
    assert cache.cache_dir() is None
    assert ids(load(small_tiktoken_file, builds)) == ids(load(small_tiktoken_file, builds)) == expected
    assert builds.count == 2 and not list(tmp_path.rglob("*.bpv"))


def test_merges_vocabulary_round_trips(cache_root):
    """HF ``tokenizer.json``: the merge list is stored as arrays and rebuilt on demand."""
    from bpebench.algorithms.formats.hf_json import load_hf_tokenizer_json

    source = Path(__file__).parent / "golden" / "bytelevel_bpe.json"
    built = cache.cached_vocabulary(source, "test:hf", lambda: load_hf_tokenizer_json(source))
    mapped = cache.cached_vocabulary(source, "test:hf", lambda: pytest.fail("should be mapped"))
    assert isinstance(mapped, cache.CachedVocabulary) and mapped.rule == "merges"
    assert mapped.merges == built.merges and mapped.special_tokens == built.special_tokens
    data = "hello merges, café".encode()
    assert make_encoder("backtracking", mapped).encode(data) == bpe_reference(built, data)


def test_out_of_order_ranks_survive_the_cache(tmp_path, cache_root):
    """A ranks file where ``abc`` (rank 256) forms from ``a`` + ``bc`` (rank 257): the mapped copy
    still knows, so backtracking refuses it and heap equals the reference."""
    from bpebench.algorithms.kernels.compiled import rank_order_break
    from bpebench.errors import UnsupportedVocabulary

    tokens = [bytes([b]) for b in range(256)] + [b"abc", b"bc"]
    source = tmp_path / "late.tiktoken"
    source.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    built = cache.cached_vocabulary(source, "test:late", lambda: load_tiktoken(source))
    mapped = cache.cached_vocabulary(source, "test:late", lambda: pytest.fail("should be mapped"))
    assert isinstance(mapped, cache.CachedVocabulary)
    assert "_rank_order_break" in mapped.__dict__  # read from the file, not recomputed
    assert rank_order_break(mapped) == rank_order_break(built) and "b'abc'" in rank_order_break(mapped)
    with pytest.raises(UnsupportedVocabulary):
        make_encoder("backtracking", mapped)
    assert make_encoder("heap", mapped).encode(b"xabcbc") == bpe_reference(built, b"xabcbc") == [120, 256, 257]


def test_a_checked_file_is_hashed_once_after_each_change(tmp_path, monkeypatch):
    """``read_checked`` (the Unicode class table, corpora, compiled patterns): the payload's sum is
    checked on the first read after the file changed, and damage written in place is always found."""
    path = tmp_path / "table.bin"
    payload = bytes(range(256)) * 40
    files.write_checked(path, payload)
    hashed = []
    real = files.hashlib.sha256
    monkeypatch.setattr(files.hashlib, "sha256", lambda data=b"": hashed.append(1) or real(data))
    assert files.read_checked(path) == payload and len(hashed) == 1  # just written: hashed, no stamp
    assert files.read_checked(path) == payload and len(hashed) == 2 and not files.stamp_path(path).exists()
    monkeypatch.setattr(files, "RACY_SECONDS", 0.0)  # as if the file were older
    assert files.read_checked(path) == payload and len(hashed) == 3  # hashed, then stamped
    assert files.read_checked(path) == payload and len(hashed) == 3  # the stamp matches: not hashed
    time.sleep(0.02)  # past a tick of the file system's clock
    before = os.stat(path)
    with open(path, "r+b") as f:  # one byte flipped in place: same size, same inode, mtime put back
        f.seek(-1, os.SEEK_END)
        f.write(bytes([payload[-1] ^ 1]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(files.CacheDamaged, match="checksum"):
        files.read_checked(path)
    files.discard(path, "test")
    assert not path.exists() and not files.stamp_path(path).exists()
