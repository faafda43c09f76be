r"""llama.cpp's pre-tokenizer table for BPE vocabularies, as data.

A GGUF file does not store its pre-tokenizer regex, only a name
(``tokenizer.ggml.pre``). llama.cpp (``src/llama-vocab.cpp``) maps each name to a
*type* and each type to a list of regexes, plus a few flags. This module is that
mapping, transcribed from the llama.cpp sources vendored in ``llama-cpp-python``
0.3.36; :mod:`bpebench.algorithms.pipeline.llama_cpp_split` runs the lists with llama.cpp's
semantics (each regex splits the pieces the previous one left, unmatched text
stays a piece, ``\p{..}`` classes are whole Unicode categories).

* :data:`PRE_TYPES`: type -> :class:`PreType` (regex list, ``byte_encode``).
* :data:`PRE_NAMES`: ``tokenizer.ggml.pre`` value -> :class:`PreName` (type and the
  flags llama.cpp sets with it: ``ignore_merges``, ``add_bos``, no BOS token,
  space escaping).

A missing ``tokenizer.ggml.pre`` means ``default`` (llama.cpp warns and uses it);
an unknown name is refused by the loader, as llama.cpp refuses it.

>>> PRE_NAMES["llama-bpe"].type, PRE_NAMES["llama-bpe"].ignore_merges
('llama3', True)
>>> len(PRE_TYPES["default"].regexes)
4
"""

from __future__ import annotations

from dataclasses import dataclass

# Shared pieces (llama.cpp writes them out in full at every use).
_CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#: GPT-2's pattern without the final ``|\s+`` (llama.cpp's "custom GPT-2" string)
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
#: Llama-3's pattern with the case-insensitive group spelled out (ECMAScript has no ``(?i:)``)
_LLAMA3 = (_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
           r"|\s+(?!\S)|\s+")
#: Qwen2's: Llama-3's with single digits
_QWEN2 = _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
#: o200k's case-aware words, with llama.cpp's lookahead spelling of the case classes
_CASED_WORDS = (r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+" + _CONTRACTIONS +
                r"?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*" + _CONTRACTIONS + "?")
_CJK_RUNS = "[一-龥ࠀ-一가-퟿]+"
_HAN_KANA = "[一-龥぀-ゟ゠-ヿ]+"
_ASCII_PUNCT_WORD = '[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+'
#: DeepSeek-V3's words; llama.cpp writes CR and LF as real characters here (same meaning in a regex)
_DEEPSEEK3_WORDS = (_ASCII_PUNCT_WORD + "|[^\r\n" + r"\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+" + "[\r\n]*"
                    + r"|\s*" + "[\r\n]+" + r"|\s+(?!\S)|\s+")
#: AFMoE's: DeepSeek-V3's with escaped CR and LF
_AFMOE_WORDS = (_ASCII_PUNCT_WORD + r"|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)"
                r"|\s+")
_NO_PUNCT_WORDS = r" ?[^(\s|.,!?…。，、।۔،)]+"
_NEWLINE_RUNS = r"[^\n]+|[\n]+"
#: DeepSeek-LLM's Latin/Greek/Cyrillic/... letter class (from its tokenizer.json)
_DEEPSEEK_LETTERS = (  # escaped: several of these characters change under Unicode normalization
    "A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373"
    "\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481"
    "\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b"
    "\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b"
    "\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb"
    "\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128"
    "\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4"
    "\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf"
    "\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
    "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943"
)


@dataclass(frozen=True)
class PreType:
    """One llama.cpp pre-tokenizer type: its regexes, applied in order, and whether pieces are
    byte-level encoded before BPE (False only for SentencePiece-style BPE models)."""

    regexes: tuple[str, ...]
    byte_encode: bool = True


@dataclass(frozen=True)
class PreName:
    """What llama.cpp sets for one ``tokenizer.ggml.pre`` value."""

    type: str
    ignore_merges: bool = False  # a piece that is a token is emitted whole
    add_bos: bool = False  # default of ``tokenizer.ggml.add_bos_token``
    no_bos: bool = False  # the default BOS id is unset (ChatGLM / GLM)
    escape_whitespaces: bool = False  # spaces become U+2581 before splitting


PRE_TYPES: dict[str, PreType] = {
    "default": PreType((r"[\p{P}\$\+<=>\^~\|]+", _GPT2, r"\p{N}+", "[0-9][0-9][0-9]")),
    "llama3": PreType((_LLAMA3,)),
    "jais2": PreType((_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                      r"|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)"
                      r"|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}",)),
    "dbrx": PreType((_LLAMA3,)),
    "smaug": PreType((_LLAMA3,)),
    "deepseek_llm": PreType((
        "[\r\n]",
        r"\s?[" + _DEEPSEEK_LETTERS + "]+",
        r"\s?[!-/:-~！-／：-～‘-‟　-。]+",
        r"\s+$",
        _CJK_RUNS,
        r"\p{N}+",
    )),
    "deepseek3_llm": PreType((r"\p{N}{1,3}", _HAN_KANA, _DEEPSEEK3_WORDS)),
    "hunyuan_dense": PreType((r"\p{N}{1,3}", _HAN_KANA, _DEEPSEEK3_WORDS)),
    "joyai_llm": PreType((r"\p{N}{1,3}", _HAN_KANA, _DEEPSEEK3_WORDS)),
    "hy_v4": PreType((r"\p{N}{1,3}", _HAN_KANA, _DEEPSEEK3_WORDS)),
    "spark2_5": PreType((
        r"\p{N}{1,3}",
        _HAN_KANA,
        _ASCII_PUNCT_WORD + "|[^\r\n" + r"\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|" + "[\r\n]"
        + r"|\s+(?!\S)|\s+",
        r"\p{N}",
    )),
    "youtu": PreType((
        "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+" + _CONTRACTIONS +
        r"?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*" + _CONTRACTIONS +
        r"?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    )),
    "deepseek_coder": PreType(("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK_RUNS, r"\p{N}")),
    "falcon": PreType((r"[\p{P}\$\+<=>\^~\|`]+", _GPT2, "[0-9][0-9][0-9]")),
    **{name: PreType((r"\p{N}", _GPT2)) for name in (
        "starcoder", "refact", "command_r", "smollm", "codeshell", "exaone", "minerva", "mellum2")},
    **{name: PreType((_GPT2,)) for name in ("gpt2", "mpt", "olmo", "jais", "trillion", "granite_docling")},
    **{name: PreType((_QWEN2,)) for name in ("stablelm2", "qwen2", "hunyuan", "solar_open")},
    "qwen35": PreType((_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
                       r"|\s*[\r\n]+|\s+(?!\S)|\s+",)),
    "poro": PreType((_NO_PUNCT_WORDS,)),
    "bloom": PreType((_NO_PUNCT_WORDS,)),
    "gpt3_finnish": PreType((_NO_PUNCT_WORDS,)),
    "chatglm4": PreType((_LLAMA3,)),
    "viking": PreType((_NO_PUNCT_WORDS, r"\p{N}")),
    "tekken": PreType((
        r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+"
        r"((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    )),
    "chameleon": PreType((
        "<sentinel:[0-9]+>",
        "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
        "([\\t\\n]|    |  )",
        r"\p{N}",
        r"[\p{P}!-/:-@\[-`{-~]",
        _GPT2,
    )),
    "gpt4o": PreType((_CASED_WORDS + r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",)),
    "minimax_m2": PreType((_CASED_WORDS + r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",)),
    "granite_emb_multi": PreType((
        r"[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+" + _CONTRACTIONS +
        r"?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*" + _CONTRACTIONS +
        r"?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    )),
    "tiny_aya": PreType((
        r"\d{1,3}(?=(?:\d{3})*\b)",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+" + _CONTRACTIONS +
        r"?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*" + _CONTRACTIONS +
        r"?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    )),
    # llama.cpp recognises this one string and runs its hand-written Kimi-K2 splitter
    "kimi_k2": PreType((r"\p{Han}+",)),
    "superbpe": PreType((r"\p{N}+", r"(?=(\d{3})+(?!\d))")),
    "bailingmoe": PreType((r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",)),
    "seed_coder": PreType((_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+"
                           r"|\s*[\r\n]+|\s+(?!\S)|\s+",)),
    "ufakzeka": PreType((r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",)),
    "grok_2": PreType((_QWEN2,)),
    # llama.cpp recognises "\p{AFMoE_digits}" and runs its hand-written digit grouping
    "afmoe": PreType((
        r"\p{AFMoE_digits}",
        "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
        _AFMOE_WORDS,
    )),
    "laguna": PreType((_NEWLINE_RUNS, _QWEN2)),
    "exaone_moe": PreType((_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}"
                           r"| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+",)),
    "minicpm5": PreType((r"\p{N}{1,3}", _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*"
                         r"|\s*[\r\n]+|\s+(?!\S)|\s+")),
    # SentencePiece-style BPE on raw UTF-8 (spaces escaped to U+2581, <0xXX> byte pieces)
    "gemma4": PreType((_NEWLINE_RUNS,), byte_encode=False),
    "sarvam_moe": PreType((_NEWLINE_RUNS,), byte_encode=False),
    "whitespace": PreType((r"\S+",), byte_encode=False),
}


def _names(type_: str, names: str, **flags) -> dict[str, PreName]:
    return {name: PreName(type_, **flags) for name in names.split()}


PRE_NAMES: dict[str, PreName] = {
    **_names("default", "default"),
    **_names("minicpm5", "minicpm5", ignore_merges=True),
    **_names("llama3", "llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano",
             ignore_merges=True, add_bos=True),
    **_names("deepseek_llm", "deepseek-llm"),
    **_names("deepseek_coder", "deepseek-coder"),
    **_names("deepseek3_llm", "deepseek-v3"),
    **_names("spark2_5", "spark2_5"),
    **_names("youtu", "youtu", ignore_merges=True),
    **_names("falcon", "falcon"),
    **_names("mpt", "mpt"),
    **_names("starcoder", "starcoder"),
    **_names("gpt2", "gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert"
                     " jina-v1-en jina-v2-code roberta-bpe exaone4"),
    **_names("jais2", "jais-2"),
    **_names("gemma4", "gemma4 granite-embed-multi-311m", escape_whitespaces=True),
    **_names("sarvam_moe", "sarvam-moe", escape_whitespaces=True),
    **_names("whitespace", "whitespace"),
    **_names("refact", "refact"),
    **_names("command_r", "command-r"),
    **_names("qwen2", "qwen2 deepseek-r1-qwen kormo f2llmv2 megrez"),
    **_names("qwen35", "qwen35"),
    **_names("stablelm2", "stablelm2"),
    **_names("olmo", "olmo"),
    **_names("dbrx", "dbrx"),
    **_names("smaug", "smaug-bpe"),
    **_names("poro", "poro-chat"),
    **_names("chatglm4", "chatglm-bpe", no_bos=True),
    **_names("chatglm4", "glm4 glm5", no_bos=True, ignore_merges=True),
    **_names("viking", "viking"),
    **_names("jais", "jais"),
    **_names("tekken", "tekken", ignore_merges=True, add_bos=True),
    **_names("smollm", "smollm"),
    **_names("codeshell", "codeshell"),
    **_names("bloom", "bloom"),
    **_names("gpt3_finnish", "gpt3-finnish"),
    **_names("exaone", "exaone"),
    **_names("exaone_moe", "exaone-moe"),
    **_names("chameleon", "chameleon", add_bos=True),
    **_names("minerva", "minerva-7b"),
    **_names("gpt4o", "gpt-4o llama4 kanana2 talkie"),
    **_names("granite_emb_multi", "granite-embed-multi-97m", ignore_merges=True),
    **_names("tiny_aya", "tiny_aya cohere2moe"),
    **_names("superbpe", "superbpe"),
    **_names("trillion", "trillion"),
    **_names("granite_docling", "granite-docling"),
    **_names("bailingmoe", "bailingmoe bailingmoe2 llada-moe"),
    **_names("seed_coder", "seed-coder"),
    **_names("hunyuan", "hunyuan"),
    **_names("hunyuan_dense", "hunyuan-dense"),
    **_names("hy_v4", "hy_v4"),
    **_names("joyai_llm", "joyai-llm"),
    **_names("kimi_k2", "kimi-k2"),
    **_names("ufakzeka", "ufakzeka"),
    **_names("grok_2", "grok-2"),
    **_names("afmoe", "afmoe"),
    **_names("laguna", "laguna"),
    **_names("minimax_m2", "minimax-m2"),
    **_names("solar_open", "solar-open"),
    **_names("mellum2", "mellum2"),
}

#: what a GGUF file without ``tokenizer.ggml.pre`` gets (llama.cpp warns about it)
MISSING_PRE_NAME = "default"

#: the llama.cpp sources this table was read from
SOURCE = "llama.cpp src/llama-vocab.cpp and src/unicode.cpp, as vendored in llama-cpp-python 0.3.36"
