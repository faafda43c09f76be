"""The hard-string set: short texts tokenizers tend to get wrong, each its own document.

Every pipeline stage has inputs where implementations part ways: scripts without spaces,
emoji glued by zero-width joiners, combining marks, digit runs of every length, each kind of
whitespace, contractions in every case, special-token literals inside ordinary text,
characters normalizers rewrite (compatibility forms, ligatures, case) and long runs of one
character class. ``bpebench parity`` runs these by default; tests use them wherever a
hard-string set is wanted.

* :data:`GOLDEN_TEXTS`: the texts ``tests/golden/golden.json`` records the real libraries'
  ids for (``tests/golden/make_golden.py`` imports them);
* :data:`PIPELINE_TEXTS`: the texts ``tests/golden/pipelines/golden_pipelines.json`` records
  the ids of the component-pipeline fixtures for (``tests/golden/make_pipeline_golden.py``
  imports them). Both are append only: the committed ids follow their order;
* :data:`HARD_STRINGS`: those and every group below, without repeats.

>>> len(HARD_STRINGS) == len(set(HARD_STRINGS)) > len(GOLDEN_TEXTS) + len(PIPELINE_TEXTS)
True
"""

from __future__ import annotations

GOLDEN_TEXTS: tuple[str, ...] = (
    "hello world",
    " hello world",
    "Hello, World! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "  two leading spaces and three trailing   ",
    "a  b   c    d     e      f",
    "x" + " " * 17 + "y",
    "tab\tseparated\t\tvalues\t",
    "windows\r\nline\r\n\r\nendings\r\n",
    "\n\n\nnewlines only\n\n",
    "IT'S he'S they'll We'LL I'VE you've she'd HE'D I'm I'M don't DON'T",
    "'s 'S 't 're 've 'm 'll 'd",
    " ".join("1234567890123"[:k] for k in range(1, 13)),
    "0 00 000 0000 00000 000000 3.14159 1,000,000 2026-07-01",
    "東京は日本の首都です。今日はいい天気ですね。",
    "中文分词测试：你好，世界！",
    "مرحبا بالعالم، كيف حالك؟",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "Привет, мир! Ελληνικά γράμματα.",
    "emoji 😀👍🏽 family 👨‍👩‍👧‍👦 coder 👩‍💻 flag 🇯🇵",
    "e\u0301 n\u0303 a\u0308 (combining) vs é ñ ä (precomposed)",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dalgo",
    "def f(x):\n    if x > 0:\n        return x ** 2\n    return -x  # comment\n",
    "\tfor (int i = 0; i < n; ++i) {\n\t\tsum += a[i];\n\t}\n",
    "<html><body class=\"main\">&amp; &lt;tag&gt;</body></html>",
    "https://example.com/path?query=1&x=%20#frag user@example.org",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "!!!!!!?????......,,,,;;;;::::----____====",
    "The end of text: <|endoftext|> and more <|endoftext|>",
    "fim <|fim_middle|> im <|im_start|>user<|im_end|> s <s> </s> <unk>",
    "\u00a0non-breaking\u00a0space\u2003em space\u3000ideographic space",
    "\u2581already a sentencepiece space\u2581\u2581",
    "mixed 한국어 text with English and 日本語 and العربية",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𐍈 𝄞 supplementary planes",
    "\x00\x01\x07\x1b[31mcontrol\x1b[0m\x7f",
    "",
    " ",
    "a",
)

#: every whitespace character, in one string (the component-pipeline fixtures' texts use it)
WHITESPACE_KINDS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
                   "\u2028\u2029\u202f\u205f\u3000\x1c\x1d\x1e\x1f\u200b\ufeff"

PIPELINE_TEXTS: tuple[str, ...] = (
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
)

#: every character Unicode, Python's ``str.isspace`` or a common regex engine calls whitespace,
#: and invisible ones that are not but look like it
SPACE_CHARACTERS: tuple[str, ...] = (
    "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", " ", "\x85", "\xa0", "\u1680",
    "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009",
    "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
    "\u180e", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",
)

#: each space character between letters, doubled before a word and trailing; then mixtures
WHITESPACE: tuple[str, ...] = tuple(f"a{c}b {c}{c}x y{c}" for c in SPACE_CHARACTERS) + (
    "".join(SPACE_CHARACTERS),
    " \t \n \r\n \u3000 \xa0x",
    "word\n\n\n\n    indented\n\t\t\ttabs   \n",
    "trailing spaces    ",
    "\r\r\n\n\r",
)

_DIGITS = (
    "0123456789",
    "٠١٢٣٤٥٦٧٨٩",  # Arabic-Indic
    "०१२३४५६७८९",  # Devanagari
    "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19",  # fullwidth
)

#: digit runs of length 1 to 12 in four scripts (each run its own text), then numbers in context
DIGIT_RUNS: tuple[str, ...] = tuple(
    "".join(digits[i % 10] for i in range(1, k + 1)) for digits in _DIGITS for k in range(1, 13)
) + (
    "x1 x12 x123 x1234 12a 3.14 -42 1e10 0x1F 1,234,567.89 \u00bd \u00b2 \u00b3 \u216b \u2460\u2461\u2462",
    "version 10.0.19045 build 22621 on 2026-07-01T12:34:56Z",
)

CONTRACTIONS: tuple[str, ...] = (
    "I'd've y'all can't won't shan't o'clock rock'n'roll",
    "it\u2019s don\u2019t we\u2019ll they\u2019re I\u2019m",
    "'''' ''s ' s 's' \"'s\" ('ll) x's's",
    "DON'T Don't dOn'T THEY'RE They'Re",
    "l'homme d'accord aujourd'hui",
)

#: special-token literals of the common vocabularies, alone, doubled, glued and broken
SPECIAL_LITERALS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|endoftext|><|endoftext|>",
    "x<|endoftext|>y",
    " <|endoftext|> ",
    "<|endoftext",
    "<<|endoftext|>>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "<s>[INST] hello [/INST]</s>",
    "[CLS] a [SEP] b [SEP] [PAD] [MASK] [UNK]",
    "<pad><unk><mask><|fim_prefix|>def<|fim_suffix|>\n<|fim_middle|>",
)

#: scripts without spaces or with marks, mixed directions, and characters normalizers rewrite
SCRIPTS: tuple[str, ...] = (
    "ภาษาไทยเขียนติดกัน",
    "ქართული Հայերեն",
    "தமிழ் বাংলা ગુજરાતી",
    "ኢትዮጵያ አማርኛ",
    "བོད་ཡིག",
    "កាន់តែពិសេស",
    "Cửa Việt Tiếng Việt",
    "שָׁלוֹם עברית",
    "English ثم العربية then 中文 then עברית.",
    "ǅemal ǈubljana İstanbul ΟΔΟΣ Straße STRASSE ẞ",
    "ﬁne ﬂow ｆｕｌｌｗｉｄｔｈ ＡＢＣ ㎏ ㍿ ™ … ℌ",
    "\u1100\u1161\u11a8 \uac01 \ud55c\uad6d\uc5b4",  # decomposed jamo, the same syllable precomposed, Korean
    "Ångström Å A\u030a café cafe\u0301 naïve nai\u0308ve",
    "a\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309\u030a\u030b\u030c b",
    "الْعَرَبِيَّة",
    "\ue000\uf8ff private use \U000f0000 and a noncharacter \ufdd0",
)

#: emoji with skin tones, zero-width joiners, keycaps, tag sequences, variation selectors, flags
EMOJI: tuple[str, ...] = (
    "👩🏽\u200d💻👨🏿\u200d🚀 "
    "🧑\u200d🤝\u200d🧑 👁\ufe0f\u200d🗨\ufe0f",
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f flag of Scotland",
    "1\ufe0f\u20e3 #\ufe0f\u20e3 *\ufe0f\u20e3 ©\ufe0f ®\ufe0f ‼\ufe0f",
    "❤\ufe0f\u200d🔥❤\ufe0e❤\ufe0f",
    "🇺🇸🇬🇧🇫🇷🇩🇪🇯🇵",
    "👨\u200d👩\u200d👧\u200d👦" * 3,
    "".join(chr(c) for c in range(0x1F600, 0x1F620)),
)

#: long runs of one character class: one pre-tokenizer piece each, or many identical ones
LONG_RUNS: tuple[str, ...] = (
    "a" * 1000,
    "ab" * 500,
    " " * 1000 + "x",
    "\n" * 300,
    "\t" * 200 + "x",
    "7" * 600,
    "!" * 500,
    "\u00e9" * 400,
    "\u6771" * 300,
    "\U0001f600" * 200,
    "a\u0301" * 200,
    "la " * 300,
    "Supercalifragilisticexpialidocious" * 20,
    "x" * 64 + " " + "y" * 256 + " " + "z" * 1024,
)

HARD_STRINGS: tuple[str, ...] = tuple(dict.fromkeys(
    GOLDEN_TEXTS + PIPELINE_TEXTS + WHITESPACE + DIGIT_RUNS + CONTRACTIONS + SPECIAL_LITERALS + SCRIPTS + EMOJI + LONG_RUNS
))
