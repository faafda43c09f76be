"""Named, seeded, disk-cached inputs for tests and benchmarks.

>>> from bpebench import corpora
>>> text = corpora.get("udhr-ru", size=200)          # str: natural text
>>> data = corpora.get("invalid-utf8", size=64)     # bytes: may be invalid UTF-8
>>> corpora.get_bytes("random-tokens", vocab="cl100k_base", size=1000)[:4]  # doctest: +SKIP

``names()`` lists them, ``describe()`` gives each one's one-line description
(adversarial ones also say why they are hard). Any existing file or directory
path is accepted as a user corpus. Categories:

* natural: ``udhr-{en,zh,ja,ko,ar,he,ru,hi,th}``, ``udhr-all``, ``prose-en`` (:mod:`bpebench.corpora.natural`)
* code: ``code-python`` (:mod:`bpebench.corpora.code`), ``code-c`` (:mod:`bpebench.corpora.documents`)
* document streams for the speed benchmarks: ``prose-docstrings``, ``code-c``, ``faker-multilingual``
  (:mod:`bpebench.corpora.documents`)
* random: ``random-tokens`` (:mod:`bpebench.corpora.random_tokens`)
* adversarial: :mod:`bpebench.corpora.adversarial` and :mod:`bpebench.corpora.search`

Beside them, :mod:`bpebench.corpora.hard_strings` holds the hard-string set: short texts,
each its own document, that tokenizers tend to get wrong (``bpebench parity`` runs them by
default).
"""

from .registry import (
    Corpus,
    cache_dir,
    clear_memory_cache,
    corpus,
    describe,
    get,
    get_bytes,
    names,
    read_user_corpus,
    register_corpus,
)
from . import natural, code, documents, random_tokens, adversarial, search  # noqa: E402,F401,I001  (they register)

__all__ = [
    "Corpus",
    "cache_dir",
    "clear_memory_cache",
    "corpus",
    "describe",
    "get",
    "get_bytes",
    "names",
    "read_user_corpus",
    "register_corpus",
]
