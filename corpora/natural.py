"""Natural text in many languages, from data that ``pip install`` brings (nothing is downloaded).

* ``udhr-*``: the Universal Declaration of Human Rights excerpts that Google Fonts
  uses as each language's sample text, shipped in the ``gflanguages`` wheel
  (``gflanguages/data/languages/<lang>_<Script>.textproto``, ``sample_text``
  fields). The fields overlap (a poster line is a prefix of a specimen), so each
  paragraph is kept once, longest fields first. 2-7 kB per language.
* ``udhr-all``: the same for every language that has a sample text (~750
  languages in dozens of scripts, ~1 MB), ordered by language id.
* ``prose-en``: English prose: the reference-manual topics that CPython ships in
  ``pydoc_data.topics`` (what ``help("if")`` prints), sorted by topic. ~460 kB.

Each is deterministic for a given installed version of the source package.
"""

from __future__ import annotations

import codecs
import importlib.util
import re
from pathlib import Path

from bpebench.errors import BpebenchError

from .registry import register_corpus
from .util import clip_utf8

#: corpus suffix -> gflanguages language id
UDHR_LANGUAGES = {
    "en": "en_Latn",
    "zh": "zh_Hans",
    "ja": "ja_Jpan",
    "ko": "ko_Kore",
    "ar": "ar_Arab",
    "he": "he_Hebr",
    "ru": "ru_Cyrl",
    "hi": "hi_Deva",
    "th": "th_Thai",
}
_LANGUAGE_NAMES = {
    "en": "English", "zh": "Chinese (simplified)", "ja": "Japanese", "ko": "Korean", "ar": "Arabic",
    "he": "Hebrew", "ru": "Russian", "hi": "Hindi", "th": "Thai",
}
#: sample_text fields, longest first (the short ones are mostly contained in the long ones)
_FIELDS = ("specimen_16", "specimen_21", "specimen_32", "specimen_36", "specimen_48", "tester", "styles",
           "poster_sm", "poster_md", "poster_lg")
_FIELD_LINE = re.compile(r'^\s*(\w+):\s*"((?:[^"\\]|\\.)*)"\s*$')


def _languages_dir() -> Path:
    spec = importlib.util.find_spec("gflanguages")
    if spec is None or not spec.submodule_search_locations:
        raise BpebenchError("natural-text corpora need the gflanguages package (pip install gflanguages)")
    return Path(list(spec.submodule_search_locations)[0], "data", "languages")


def _unescape(value: str) -> str:
    # protobuf text format uses C escapes (\n, \", octal bytes) over UTF-8 text
    return codecs.escape_decode(value.encode("utf-8"))[0].decode("utf-8")


def sample_text(language_id: str) -> str:
    """The de-duplicated sample text of one gflanguages language (paragraphs joined by newlines)."""
    path = _languages_dir() / f"{language_id}.textproto"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        raise BpebenchError(f"gflanguages has no language {language_id!r} ({path})") from None
    fields: dict[str, str] = {}
    inside = False
    for line in lines:
        if line.startswith("sample_text {"):
            inside = True
        elif inside and line.startswith("}"):
            break
        elif inside:
            m = _FIELD_LINE.match(line)
            if m:
                fields[m.group(1)] = _unescape(m.group(2))
    kept: list[str] = []
    for name in _FIELDS:
        for paragraph in fields.get(name, "").split("\n"):
            paragraph = paragraph.strip()
            if paragraph and not any(paragraph in k for k in kept):
                kept.append(paragraph)
    return "\n".join(kept)


def _udhr_builder(language_id: str):
    def build(*, size: int | None = None) -> str:
        return clip_utf8(sample_text(language_id), size)

    return build


for _code, _lang_id in UDHR_LANGUAGES.items():
    register_corpus(
        f"udhr-{_code}",
        description=f"{_LANGUAGE_NAMES[_code]}: Universal Declaration of Human Rights excerpts"
        f" (gflanguages sample text {_lang_id}).",
        category="natural",
    )(_udhr_builder(_lang_id))


@register_corpus(
    "udhr-all",
    description="Every language with a sample text in gflanguages (~750 languages, dozens of scripts), UDHR"
    " excerpts ordered by language id, one paragraph block per language.",
    category="natural",
)
def udhr_all(*, size: int | None = None) -> str:
    blocks = []
    total = 0
    for path in sorted(_languages_dir().glob("*.textproto")):
        text = sample_text(path.stem)
        if not text:
            continue
        blocks.append(text)
        total += len(text.encode("utf-8")) + 2
        if size is not None and total >= size:
            break
    return clip_utf8("\n\n".join(blocks), size)


@register_corpus(
    "prose-en",
    description="English prose: the Python reference-manual topics shipped with CPython (pydoc_data.topics),"
    " sorted by topic; contains some code examples.",
    category="natural",
)
def prose_en(*, size: int | None = None) -> str:
    from pydoc_data.topics import topics

    return clip_utf8("\n\n".join(topics[k].strip() for k in sorted(topics)), size)
