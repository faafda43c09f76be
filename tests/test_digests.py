"""The stat-keyed digest index: the same sha256 as reading the file, never a stale one."""

from __future__ import annotations

import hashlib
import os
import time

from bpebench.algorithms.cache import digests


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_digest_is_the_files_sha256_and_follows_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "f.bin"
    path.write_bytes(b"one")
    old = time.time() - 60
    os.utime(path, (old, old))
    assert digests.file_digest(path) == _sha(path)
    assert digests.index_path(path).exists()
    assert digests.file_digest(path) == _sha(path)  # from the index now
    path.write_bytes(b"two")  # same size, new modification time
    assert digests.file_digest(path) == _sha(path)


def test_a_file_modified_just_before_it_was_hashed_is_read_again(tmp_path, monkeypatch):
    """Same size and the same mtime tick: the entry was never trusted, so the new bytes count."""
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "f.bin"
    path.write_bytes(b"aaaa")
    first = digests.file_digest(path)
    stamp = path.stat().st_mtime_ns
    path.write_bytes(b"bbbb")
    os.utime(path, ns=(stamp, stamp))  # as if rewritten within the same clock tick
    assert digests.file_digest(path) == _sha(path) != first


def test_a_damaged_index_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "f.bin"
    digests.index_path(path).parent.mkdir(parents=True)
    digests.index_path(path).write_text("{not json")
    path.write_bytes(b"x" * 100)
    assert digests.file_digest(path) == _sha(path)
    digests.index_path(path).write_text('{"%s": "garbage"}' % path.resolve())
    digests.forget()
    assert digests.file_digest(path) == _sha(path)


def test_the_index_forgets_files_that_are_gone_and_keeps_the_newest(tmp_path, monkeypatch):
    """Every fresh process parses the index: entries of deleted files go, and at most
    ``MAX_ENTRIES`` (the most recently hashed) stay, each still the file's true digest."""
    import json

    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(digests, "MAX_ENTRIES", 3)
    gone = tmp_path / "gone.bin"
    gone.write_bytes(b"soon deleted")
    digests.file_digest(gone)
    gone.unlink()
    paths = []
    for i in range(5):
        path = tmp_path / f"f{i}.bin"
        path.write_bytes(bytes([i]) * 10)
        paths.append(path)
        assert digests.file_digest(path) == _sha(path)
    stored = json.loads(digests.index_path(paths[0]).read_bytes())
    assert sorted(stored) == sorted(os.path.abspath(p) for p in paths[-3:])
    digests.forget()
    for path in paths:  # forgotten ones are hashed again, never answered wrongly
        assert digests.file_digest(path) == _sha(path)


def test_each_directory_has_an_index_of_its_own(tmp_path, monkeypatch):
    """A fresh process parses only the indexes of the directories it hashes files in; a file's
    digest is found after the index is read again, and files of two directories never mix."""
    import json

    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(digests, "RACY_SECONDS", 0.0)  # the files' change times are now
    old = time.time() - 60
    files = []
    for directory in ("a", "b"):
        (tmp_path / directory).mkdir()
        path = tmp_path / directory / "same-name.bin"
        path.write_bytes(directory.encode() * 50)
        os.utime(path, (old, old))
        files.append(path)
        assert digests.file_digest(path) == _sha(path)
    a, b = files
    assert digests.index_path(a) != digests.index_path(b)
    assert list(json.loads(digests.index_path(a).read_bytes())) == [os.path.abspath(a)]
    assert list(json.loads(digests.index_path(b).read_bytes())) == [os.path.abspath(b)]
    digests.forget()
    reads = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        reads.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    assert digests.file_digest(a) == _sha(a) and digests.file_digest(b) == _sha(b)
    assert not [r for r in reads if r in (str(a), str(b))]  # both answered by their indexes
