"""The hard-string set for pipeline parity: every kind of text a tokenizer pipeline tends to get wrong.

Scripts, emoji with ZWJ and modifiers, combining marks, digit runs of 1 to 12,
every kind of whitespace, contractions in both cases, special-token literals (with
spaces around them, glued to words, repeated), compatibility characters that NFKC
changes, and long runs. Shared by ``make_pipeline_golden.py`` and the tests.
"""

from __future__ import annotations

WHITESPACE_KINDS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
                   "\u2028\u2029\u202f\u205f\u3000\x1c\x1d\x1e\x1f\u200b\ufeff"

HARD_STRINGS: list[str] = [
    "hello world", " hello world", "Hello, World! How are you today?",
    "  two leading spaces and three trailing   ", "a  b   c    d     e      f",
    "tab\tseparated\t\tvalues\t", "windows\r\nline\r\n\r\nendings\r\n", "\n\n\nnewlines only\n\n",
    "IT'S he'S they'll We'LL I'VE you've she'd HE'D I'm I'M don't DON'T", "'s 'S 't 're 've 'm 'll 'd",
    "It's the model's 2nd test, isn't it?",
    " ".join("123456789012"[:k] for k in range(1, 13)), "0 00 000 3.14159 1,000,000 2026-07-01 ٣٤٥ ①②③ 五六",
    "東京は日本の首都です。今日はいい天気ですね。", "中文分词测试：你好，世界！", "한국어 텍스트와 English",
    "مرحبا بالعالم، كيف حالك؟", "नमस्ते दुनिया, आप कैसे हैं?", "Привет, мир! Ελληνικά γράμματα. ΣΑΣ σας",
    "emoji 😀👍🏽 family 👨‍👩‍👧‍👦 coder 👩‍💻 flag 🇯🇵 keycap 1️⃣",
    "e\u0301 n\u0303 a\u0308 (combining) vs é ñ ä (precomposed) Å Å",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f algo",
    "ﬁ ﬂ ① ² ½ Ｈｅｌｌｏ ｶﾀｶﾅ ㎏ Ⅻ ℌ İstanbul ß",
    "every whitespace:" + WHITESPACE_KINDS + "end", WHITESPACE_KINDS,
    "def f(x):\n    if x > 0:\n        return x ** 2\n    return -x  # comment\n",
    "<html><body class=\"main\">&amp; &lt;tag&gt;</body></html>", "https://example.com/path?query=1&x=%20#frag",
    "The end: <|endoftext|> and more<|endoftext|>x <|endoftext|><|endoftext|>",
    "fim <|fim_middle|> im <|im_start|>user<|im_end|> s <s> </s> <unk> <mask> [MASK] <pad>",
    "  <s>  hello</s>world <s>", "<s>", "</s> ", "a<mask>b <mask> <mask>x", "hello helloworld say hello",
    "\u2581already a sentencepiece space\u2581\u2581", "Ġ Ċ byte-level lookalikes",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "!!!!!!?????......,,,,;;;;::::----____====",
    " " * 40 + "x", "\n" * 30, "ab" * 40, "1" * 30, "😀" * 12,
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𐍈 𝄞 supplementary", "\x00\x01\x07\x1b[31mcontrol\x1b[0m\x7f",
    "Ǆ ǅ ǆ Σ ς σ ΣΣ", "", " ", "a", "x",
]
