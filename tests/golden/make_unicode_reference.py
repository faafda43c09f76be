"""Regenerate ``algorithms/pipeline/unicode_reference.json``: the code points whose general category
the ``regex`` module reads differently from tiktoken's and HF ``tokenizers``' regex engines (run once
per release of any of the three; the output is committed).

    python tests/golden/make_unicode_reference.py

``regex`` follows the newest Unicode (17.0 at the time of writing); tiktoken's engine (Rust's
``regex`` crate under ``fancy-regex``) and HF's (Oniguruma) an older one, the same in both. Every
code point is probed through each library: tiktoken with a pattern of one category over a string of
all code points (``findall`` keeps only the matches, whose bytes come back as the ids of a
vocabulary of the 256 bytes), ``tokenizers`` with a ``Split`` of that category that removes its
matches. A code point whose category differs is written with the libraries' category; the two
libraries must agree. Nothing in bpebench computes these: they are the libraries' answers.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "algorithms" / "pipeline" / "unicode_reference.json"
CATEGORIES = ("Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp Cc Cf Co Cn").split()


def _everything() -> str:
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def _categories(members) -> dict[int, str]:
    """Code point -> category, from ``members(category) -> set of characters``."""
    found: dict[int, str] = {}
    for category in CATEGORIES:
        for c in members(category):
            if ord(c) in found:
                raise SystemExit(f"U+{ord(c):04X} in {found[ord(c)]} and {category}")
            found[ord(c)] = category
    return found


def main() -> None:
    import regex
    import tiktoken
    from tokenizers import Regex, pre_tokenizers

    everything = _everything()
    ranks = {bytes([i]): i for i in range(256)}

    def tiktoken_members(category: str) -> set[str]:
        encoding = tiktoken.Encoding("probe", pat_str=rf"\p{{{category}}}", mergeable_ranks=ranks, special_tokens={})
        return set(bytes(encoding.encode_ordinary(everything)).decode("utf-8"))

    def hf_members(category: str) -> set[str]:
        split = pre_tokenizers.Split(Regex(rf"\p{{{category}}}"), behavior="removed")
        return set(everything) - set("".join(piece for piece, _ in split.pre_tokenize_str(everything)))

    def regex_members(category: str) -> set[str]:
        return set(regex.findall(rf"\p{{{category}}}", everything))

    ours, theirs, hf = _categories(regex_members), _categories(tiktoken_members), _categories(hf_members)
    if theirs != hf:
        raise SystemExit("tiktoken and tokenizers read the categories differently; this file assumes one reading")
    differ = sorted((cp, theirs.get(cp, "Cn")) for cp in range(0x110000)
                    if not 0xD800 <= cp <= 0xDFFF and ours.get(cp, "Cn") != theirs.get(cp, "Cn"))
    ranges: list[list] = []
    for cp, category in differ:
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == category:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp, category])
    OUT.write_text(json.dumps({
        "regex": regex.__version__,
        "tiktoken": importlib.metadata.version("tiktoken"),
        "tokenizers": importlib.metadata.version("tokenizers"),
        "differ": ranges,
    }, indent=None) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(differ)} code points in {len(ranges)} ranges")


if __name__ == "__main__":
    main()
