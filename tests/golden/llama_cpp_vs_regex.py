"""Where llama.cpp's hand-written splitters differ from the ``regex`` module (not part of the test run).

    python tests/golden/llama_cpp_vs_regex.py      # about 6 minutes

llama.cpp replaces the GPT-2, Llama-3, Qwen2 and Qwen3.5 regexes by C++ code. bpebench
reproduces that code (``LlamaCppPretokenizer``, checked against llama.cpp's ids by
``tests/test_llama_cpp.py`` and ``gguf_parity.py``); this script compares it with
``regex.findall`` on the original patterns (what HF tokenizers and tiktoken run) for
every code point U+0000..U+10FFFF in a few contexts, and sorts the differences into
"the two Unicode tables disagree on the code point's category" (Python's
``unicodedata``, which bpebench's emulation uses, against the ``regex`` module's newer
table) and the rest, which are differences of the splitters themselves.
"""

from __future__ import annotations

import unicodedata

import regex

from bpebench.algorithms.formats.patterns import GPT2, LLAMA3, QWEN2
from bpebench.algorithms.pipeline.llama_cpp_split import LlamaCppPretokenizer

#: Qwen3.5's tokenizer.json pattern (letters runs take marks too)
QWEN35 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CONTEXTS = ["a{0}b", " {0}x", "{0}{0}", "'{0}x", "1{0}2", " {0} ", "x{0}\n", "A{0}a"]


def regex_major_category(c: str) -> str:
    for name in ("L", "N", "P", "M", "S", "Z"):
        if regex.match(rf"\p{{{name}}}", c):
            return name
    return "Cn" if regex.match(r"\p{Cn}", c) else "C"


def main() -> None:
    print(f"unicodedata {unicodedata.unidata_version}, regex {regex.__version__}")
    for pre, pattern in (("gpt2", GPT2), ("llama3", LLAMA3), ("qwen2", QWEN2), ("qwen35", QWEN35)):
        ours, theirs = LlamaCppPretokenizer(pre), regex.compile(pattern)
        table_differs, other = 0, []
        for cp in range(0x110000):
            if 0xD800 <= cp < 0xE000:
                continue
            c = chr(cp)
            for context in CONTEXTS:
                text = context.format(c)
                if ours.split(text) != theirs.findall(text):
                    category = unicodedata.category(c)
                    major = "Cn" if category == "Cn" else category[0]
                    if major != regex_major_category(c):
                        table_differs += 1
                    else:
                        other.append((f"U+{cp:04X}", text, ours.split(text), theirs.findall(text)))
                    break
        print(f"{pre}: {table_differs} code points split differently because the Unicode tables differ;"
              f" {len(other)} otherwise: {other[:5]}")


if __name__ == "__main__":
    main()
