"""llama.cpp's special-token rules: how literals are cut out of the text, and BOS/EOS.

``tokenizer_st_partition`` in llama.cpp's ``src/llama-vocab.cpp`` does not search
for the leftmost special token, as tiktoken and HF do: it takes the special tokens
**longest first** and splits every remaining piece of raw text at each occurrence
of one token before going on to the next (ties in length: by id here; llama.cpp's
sort leaves their order unspecified). A token with ``lstrip`` eats the ASCII
whitespace before it, ``rstrip`` the whitespace after it. USER_DEFINED tokens are
cut even when special tokens are not parsed; CONTROL and UNKNOWN ones only when
they are. :class:`LlamaCppCarver` does this for the Tokenizer (for any vocabulary
with ``llama_cpp`` settings); :func:`llama_tokenize` is llama.cpp's
``llama_tokenize(text, add_special, parse_special)`` on top of a Tokenizer.

>>> partition("a<x>b<x><xy>", [("<xy>", 2, False, False), ("<x>", 1, False, False)])
['a', 1, 'b', 1, 2]

Complexity: finding which literals occur is one ``str.find`` scan per literal, or, for
literals sharing a first character with many others, one pass over that character's
positions; cutting is O(literals present x text length), as in llama.cpp.
"""

from __future__ import annotations

from typing import Sequence

#: what C's ``isspace`` accepts in the "C" locale (llama.cpp strips with it)
_C_SPACE = " \t\n\v\f\r"


def partition(text: str, tokens: Sequence[tuple[str, int, bool, bool]]) -> list[str | int]:
    """Cut ``tokens`` ((literal, id, lstrip, rstrip), longest first) out of ``text`` the way
    llama.cpp does; returns raw text pieces and token ids in order."""
    fragments: list[str | int] = [text] if text else []
    for literal, token_id, lstrip, rstrip in tokens:
        if not literal:
            continue
        out: list[str | int] = []
        for fragment in fragments:
            if isinstance(fragment, int) or literal not in fragment:
                out.append(fragment)
                continue
            start, end = 0, len(fragment)
            while True:
                found = fragment.find(literal, start)
                if found == -1:
                    if start < end:
                        out.append(fragment[start:end])
                    break
                left = found
                if lstrip:
                    while left > start and fragment[left - 1] in _C_SPACE:
                        left -= 1
                if left > start:
                    out.append(fragment[start:left])
                out.append(token_id)
                start = found + len(literal)
                if rstrip:
                    while start < end and fragment[start] in _C_SPACE:
                        start += 1
        fragments = out
    return fragments


#: up to this many first characters, each is looked for in a text (a C scan of a few hundred MB/s)
#: instead of making the text's set of characters (7-25 ns a character: 58-200 us for 8 kB)
_SCANNED_FIRSTS = 32


class _Literals:
    """Which of some literals occur in a text."""

    def __init__(self, literals) -> None:
        self._by_first: dict[str, set[str]] = {}
        for text in literals:
            self._by_first.setdefault(text[0], set()).add(text)
        self._lengths = {first: sorted({len(t) for t in texts}) for first, texts in self._by_first.items()}

    def present(self, text: str) -> set[str]:
        """The literals that occur in ``text``: one ``str.find`` scan per literal when few share a
        first character, else one pass over that character's positions (DeepSeek's 2 398 literals
        mostly start with ``[``)."""
        found: set[str] = set()
        if len(self._by_first) <= _SCANNED_FIRSTS:
            firsts = [first for first in self._by_first if first in text]
        else:
            firsts = self._by_first.keys() & set(text)
        for first in firsts:
            literals = self._by_first[first]
            if len(literals) <= 16:
                found.update(t for t in literals if t in text)
                continue
            lengths, candidates = self._lengths[first], set()
            position = text.find(first)
            while position != -1:
                candidates.update(text[position:position + n] for n in lengths)
                position = text.find(first, position + 1)
            found |= candidates & literals
        return found


class LlamaCppCarver:
    """Special-token carving with llama.cpp's rules for one vocabulary (its ``llama_cpp`` settings)."""

    def __init__(self, vocabulary) -> None:
        info = vocabulary.llama_cpp or {}
        lstrip, rstrip = set(info.get("lstrip", ())), set(info.get("rstrip", ()))
        specials = vocabulary.special_tokens
        order = sorted(specials.items(), key=lambda item: (-len(item[0]), item[1]))
        self._tokens = [(text, token_id, text in lstrip, text in rstrip) for text, token_id in order if text]
        #: literals cut out even when special tokens are not parsed (llama.cpp's USER_DEFINED)
        self.always = frozenset(info.get("user_defined", ())) & specials.keys()
        self._all = _Literals(text for text, *_ in self._tokens)
        # ordinary text looks only for these (a Llama-3 file has 256 special literals, none of them always cut)
        self._always = _Literals(text for text, *_ in self._tokens if text in self.always)

    def present(self, text: str) -> set[str]:
        """The special-token literals that occur in ``text``."""
        return self._all.present(text)

    def segments(self, text: str, allowed: frozenset[str]) -> list[str | int]:
        """``text`` cut at the ``allowed`` special tokens and at the always-cut ones."""
        if not text:
            return []
        present = (self._all if allowed else self._always).present(text)
        if not present:
            return [text]
        chosen = [t for t in self._tokens if t[0] in present and (t[0] in allowed or t[0] in self.always)]
        return partition(text, chosen) if chosen else [text]


def llama_tokenize(tokenizer, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
    """llama.cpp's ``llama_tokenize``: ``parse_special`` cuts every special token out of the text
    (else only USER_DEFINED ones); ``add_special`` adds BOS / EOS where the file asks for them."""
    ids = tokenizer.encode(text, allowed_special="all") if parse_special else tokenizer.encode_ordinary(text)
    info = tokenizer.vocabulary.llama_cpp or {}
    if add_special and info.get("add_bos") and info.get("bos") is not None:
        ids = [info["bos"], *ids]
    if add_special and info.get("add_eos") and info.get("eos") is not None:
        ids = [*ids, info["eos"]]
    return ids


def missing_bytes_regex(vocabulary):
    """A bytes regex matching the byte values that are not tokens of a byte-level vocabulary
    (None when every byte is one): llama.cpp drops those bytes from its output."""
    import re

    missing = [b for b in range(256) if vocabulary.byte_token[b] < 0]
    if not missing:
        return None
    return re.compile(b"[" + b"".join(re.escape(bytes([b])) for b in missing) + b"]")
