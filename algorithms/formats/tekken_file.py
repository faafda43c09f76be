"""Read mistral-common's ``tekken.json``: tiktoken ranks behind a block of special-token ids.

The file holds ``config`` (``pattern``, ``default_vocab_size``, ``default_num_special_tokens``)
and ``vocab``, a list of ``{"rank", "token_bytes" (base64), "token_str"}`` in rank order.
mistral-common's ``Tekkenizer`` keeps the first ``default_vocab_size -
default_num_special_tokens`` ranks, encodes with tiktoken (that pattern, no special
tokens) and adds ``default_num_special_tokens`` to every id; ids below that are the
special tokens (``special_tokens`` in the file, else mistral-common's default list, the
rest ``<SPECIAL_n>``). The Vocabulary here is that: ids 0..n-1 special (excluded from
BPE), then the ranks. Special-token literals in text are plain text to Tekkenizer, as
in ``encode_ordinary``. Exact: equals ``Tekkenizer.encode(text, bos=False, eos=False)``
(``tests/test_formats_tiktoken.py``).
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

import numpy as np

from bpebench.errors import VocabularyError
from ..kernels.compiled import NEVER
from .tiktoken_file import read_limited
from .vocabulary import Vocabulary, check_id_space


def _default_special_names(count: int) -> list[str]:
    """mistral-common's default special tokens (its deprecated list) when it is installed."""
    try:
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    except ImportError:
        return []
    return [t["token_str"] for t in Tekkenizer.DEPRECATED_SPECIAL_TOKENS][:count]


def load_tekken(path: str | Path, *, name: str | None = None) -> Vocabulary:
    path = Path(path)
    try:
        data = json.loads(read_limited(path))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VocabularyError(f"{path}: not a tekken.json (not valid JSON: {exc})") from None
    config = data.get("config") if isinstance(data, dict) else None
    vocab = data.get("vocab") if isinstance(data, dict) else None
    if not isinstance(config, dict) or not isinstance(vocab, list):
        raise VocabularyError(f"{path}: not a tekken.json (no 'config' object and 'vocab' list)")
    try:
        pattern = str(config["pattern"])
        size = int(config["default_vocab_size"])
        n_special = int(config["default_num_special_tokens"])
    except (KeyError, TypeError, ValueError) as exc:
        raise VocabularyError(f"{path}: tekken.json config lacks {exc}") from None
    inner = size - n_special
    if n_special < 0 or inner < 256 or inner > len(vocab):
        raise VocabularyError(f"{path}: tekken.json config asks for {inner} ranks and {n_special} special tokens;"
                              f" the file has {len(vocab)} ranks")
    check_id_space(str(path), len(vocab), size)
    tokens: list[bytes] = []
    for rank, entry in enumerate(vocab[:inner]):
        try:
            if entry["rank"] != rank:
                raise VocabularyError(f"{path}: vocab entry {rank} has rank {entry['rank']}")
            tokens.append(base64.b64decode(entry["token_bytes"], validate=True))
        except (KeyError, TypeError, binascii.Error):
            raise VocabularyError(f"{path}: vocab entry {rank} is not {{'rank', 'token_bytes'}}") from None
    listed = data.get("special_tokens")
    if listed is None:
        names = _default_special_names(n_special)
    else:
        names = [str(t["token_str"]) for t in sorted(listed, key=lambda t: t["rank"])]
    names += [f"<SPECIAL_{i}>" for i in range(len(names), n_special)]
    if len(set(names)) != n_special:
        raise VocabularyError(f"{path}: tekken.json special tokens are not {n_special} distinct names")
    return Vocabulary(
        name=name or path.name.split(".")[0],
        tokens=[s.encode("utf-8") for s in names] + tokens,
        priority=np.concatenate([np.full(n_special, NEVER, dtype=np.int64), np.arange(inner, dtype=np.int64)]),
        rule="ranks",
        special_tokens={s: i for i, s in enumerate(names)},
        pattern=pattern,
        excluded=frozenset(range(n_special)),
        source=str(path),
    )
