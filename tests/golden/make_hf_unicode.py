"""Regenerate ``algorithms/pipeline/hf_unicode.json``: where HF ``tokenizers``' Unicode tables
disagree with Python's ``unicodedata`` (run once per ``tokenizers`` release; the output is committed).

    python tests/golden/make_hf_unicode.py

HF's components use tables of different ages (Unicode normalization and StripAccents from
``unicode-normalization-alignments``, BertNormalizer and Punctuation from
``unicode_categories``, Lowercase and Digits from Rust's standard library), Python its own
``unicodedata``. Every code point is probed through the real components and only the
disagreements are written (character lists as code point ranges):

* ``inert``: per form (NFC, NFD, NFKC, NFKD), the characters HF leaves alone and treats as
  unassigned (no decomposition, combining class 0), found with ``"a" + c + U+0323 U+0301``;
  ``mapped``: the ones HF rewrites differently, with HF's result for the character alone;
* ``strip_accents``: characters StripAccents removes although Python's category is not a
  mark (``remove``), or keeps although it is (``keep``);
* ``lowercase``: HF's lowercase where it differs from ``str.lower`` of the character;
* ``bert_other`` / ``bert_nonspacing``: BertNormalizer's clean_text and strip_accents
  verdicts where they differ from Python's categories (``remove`` / ``keep``);
* ``numeric`` / ``punctuation``: Digits' and Punctuation's verdicts where they differ.

Nothing in bpebench computes these: they are the library's answers.
"""

from __future__ import annotations

import importlib.metadata
import json
import string
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "algorithms" / "pipeline" / "hf_unicode.json"
PROBE = "\u0323\u0301"


def _chars():
    for cp in range(0x10FFFF + 1):
        if not 0xD800 <= cp <= 0xDFFF:
            yield chr(cp)


def _is_other(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs")


def _ranges(value):
    """Character lists as [first, last] code point ranges (the unassigned planes compress)."""
    if isinstance(value, dict):
        return {k: _ranges(v) for k, v in value.items()}
    if isinstance(value, list):
        ranges: list[list[int]] = []
        for cp in sorted(ord(c) for c in value):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
        return ranges
    return value


def main() -> None:
    from tokenizers import normalizers as N
    from tokenizers import pre_tokenizers as P

    forms = {form: getattr(N, form)() for form in ("NFC", "NFD", "NFKC", "NFKD")}
    strip, lower = N.StripAccents(), N.Lowercase()
    bert_clean = N.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    bert_strip = N.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    digits, punct = P.Digits(individual_digits=True), P.Punctuation()
    out: dict = {"tokenizers": importlib.metadata.version("tokenizers"), "unidata": unicodedata.unidata_version,
                 "inert": {f: [] for f in forms}, "mapped": {f: {} for f in forms},
                 "strip_accents": {"remove": [], "keep": []}, "lowercase": {},
                 "bert_other": {"remove": [], "keep": []}, "bert_nonspacing": {"remove": [], "keep": []},
                 "numeric": {"yes": [], "no": []}, "punctuation": {"yes": [], "no": []}}
    for c in _chars():
        probe = "a" + c + PROBE
        for form, hf in forms.items():
            if hf.normalize_str(probe) != unicodedata.normalize(form, probe):
                alone = hf.normalize_str(c)
                if alone == c:
                    out["inert"][form].append(c)
                else:
                    out["mapped"][form][c] = alone
        is_mark = unicodedata.category(c).startswith("M")
        removed = strip.normalize_str("a" + c) == "a"
        if removed != is_mark:
            out["strip_accents"]["remove" if removed else "keep"].append(c)
        if lower.normalize_str(c) != c.lower():
            out["lowercase"][c] = lower.normalize_str(c)
        cleaned = bert_clean.normalize_str("a" + c)
        python_removes = c in "\0\ufffd" or (c not in "\t\n\r" and _is_other(c))
        if (cleaned == "a") != python_removes and cleaned in ("a", "a" + c):
            out["bert_other"]["remove" if cleaned == "a" else "keep"].append(c)
        stripped = bert_strip.normalize_str(c)
        python_stripped = "".join(x for x in unicodedata.normalize("NFD", c) if unicodedata.category(x) != "Mn")
        if stripped != python_stripped and stripped in ("", c):
            out["bert_nonspacing"]["remove" if stripped == "" else "keep"].append(c)
        numeric = len(digits.pre_tokenize_str("a" + c + "a")) == 3
        if numeric != (unicodedata.category(c) in ("Nd", "Nl", "No")):
            out["numeric"]["yes" if numeric else "no"].append(c)
        is_punct = len(punct.pre_tokenize_str("a" + c + "a")) == 3
        python_punct = unicodedata.category(c).startswith("P") or (c.isascii() and c in string.punctuation)
        if is_punct != python_punct:
            out["punctuation"]["yes" if is_punct else "no"].append(c)
    OUT.write_text(json.dumps(_ranges(out), separators=(",", ":"), sort_keys=True), encoding="utf-8")
    sizes = {k: len(v) if not isinstance(v, dict) else {kk: len(vv) for kk, vv in v.items()} for k, v in out.items()
             if k not in ("tokenizers", "unidata")}
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes): {sizes}")


if __name__ == "__main__":
    main()
