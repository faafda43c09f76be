"""Document streams for the speed benchmarks: text of three kinds a user encodes, from installed files.

The *unseen* protocol (``benchmarks/quick_pipeline.py``) warms every encoder on one part of a
corpus and then times each document of another part once, so these corpora are long (about
1.4 MB) and made of many documents separated by blank lines:

* ``prose-docstrings``: English prose, the docstrings of the running interpreter's standard
  library (modules, classes, functions), in sorted file order;
* ``code-c``: C code, CPython's headers (``Python.h`` and the rest of its include directory)
  followed by any ``.c`` files of the standard library, in sorted path order;
* ``faker-multilingual``: ``faker``'s lorem text in 12 languages and 10 scripts (English,
  German, French, Spanish, Russian, Greek, Arabic, Hebrew, Bengali, Thai, Japanese, Chinese),
  one document of a few paragraphs per language in turn, seeded. Needs ``faker`` (the
  ``bench`` extra); the text depends on its word lists, so name its version with a result.

:func:`documents` cuts any of them (or any text) into documents of about a given size at
blank lines.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

from bpebench.errors import BpebenchError

from .registry import register_corpus
from .util import clip_utf8

#: the 12 faker locales of ``faker-multilingual``
FAKER_LOCALES = ("en_US", "de_DE", "fr_FR", "es_ES", "ru_RU", "el_GR", "ar_AA", "he_IL", "bn_BD", "th_TH",
                 "ja_JP", "zh_CN")


@register_corpus(
    "prose-docstrings",
    description="English prose: the docstrings of the running interpreter's standard library (modules,"
    " classes, functions; sorted file order), separated by blank lines.",
    category="natural",
    version=2,
)
def prose_docstrings(*, size: int | None = 1_400_000) -> str:
    from bpebench.algorithms.pipeline.pretokenize_compiled import stdlib_prose

    return stdlib_prose(size if size is not None else 1 << 40).decode("utf-8")


def c_files() -> list[Path]:
    """CPython's header files, then the standard library's ``.c`` files, each group in path order."""
    include = Path(sysconfig.get_paths()["include"])
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    headers = sorted(include.rglob("*.h"), key=lambda p: p.relative_to(include).as_posix())
    sources = sorted(stdlib.rglob("*.c"), key=lambda p: p.relative_to(stdlib).as_posix())
    return headers + sources


@register_corpus(
    "code-c",
    description="C code: CPython's headers, then the standard library's .c files (sorted paths), each file"
    " after a '/* file: */' line.",
    category="code",
)
def code_c(*, size: int | None = 1_400_000) -> str:
    parts: list[str] = []
    total = 0
    for path in c_files():
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        chunk = f"/* file: {path.name} */\n{source}\n\n"
        parts.append(chunk)
        total += len(chunk.encode("utf-8"))
        if size is not None and total >= size:
            break
    if not parts:
        raise BpebenchError("code-c: no C headers found (the interpreter's include directory is empty)")
    return clip_utf8("".join(parts), size)


@register_corpus(
    "faker-multilingual",
    description="faker's lorem paragraphs in 12 languages / 10 scripts (en de fr es ru el ar he bn th ja zh),"
    " one document per language in turn, seeded; needs faker.",
    category="natural",
)
def faker_multilingual(*, size: int | None = 1_400_000, seed: int = 0, document_bytes: int = 6_000) -> str:
    try:
        from faker import Faker
    except ImportError:
        raise BpebenchError("faker-multilingual needs faker (pip install faker, or the bench extra)") from None
    fakers = []
    for i, locale in enumerate(FAKER_LOCALES):
        fake = Faker(locale)
        fake.seed_instance(seed * 1000 + i)
        fakers.append(fake)
    budget = size if size is not None else 1_400_000
    blocks: list[str] = []
    total = 0
    while total < budget:
        for fake in fakers:
            paragraphs: list[str] = []
            length = 0
            while length < document_bytes:
                paragraph = fake.paragraph(nb_sentences=6)
                paragraphs.append(paragraph)
                length += len(paragraph.encode("utf-8")) + 1
            block = "\n".join(paragraphs)
            blocks.append(block)
            total += len(block.encode("utf-8")) + 2
    return clip_utf8("\n\n".join(blocks), size)


def documents(text: str, target_bytes: int = 8_000) -> list[str]:
    """``text`` cut at blank lines into documents of at least ``target_bytes`` UTF-8 bytes (the
    last may be shorter); ``"".join`` of the result is ``text``.

    >>> documents("a\\n\\nb\\n\\nc", 2)
    ['a\\n\\n', 'b\\n\\n', 'c']
    """
    out: list[str] = []
    start = 0
    while start < len(text):
        cut = start + max(1, target_bytes // 4)  # characters are 1-4 bytes: grow until the size is met
        while True:
            found = text.find("\n\n", cut)
            end = len(text) if found < 0 else found + 2
            if end >= len(text) or len(text[start:end].encode("utf-8", "surrogatepass")) >= target_bytes:
                break
            cut = end
        out.append(text[start:end])
        start = end
    return out
