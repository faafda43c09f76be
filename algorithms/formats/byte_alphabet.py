"""GPT-2's byte-level alphabet: 256 printable characters that stand for the 256 bytes.

Byte-level BPE vocabularies (GPT-2, Llama-3, Qwen2, ...) write every token as text in
this alphabet (``Ġ`` is the space byte, ``Ċ`` the newline); decoding a token through
it gives its bytes. Used by the ``tokenizer.json`` and GGUF loaders and by HF's
ByteLevel pre-tokenizer / normalizer / decoder.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (a bijection over all 256 bytes).

    Printable Latin-1 bytes stand for themselves; the other 68 bytes (controls,
    space, DEL, NBSP, soft hyphen) take the characters from U+0100 on, in byte order.

    >>> bytes_to_unicode()[ord("a")], bytes_to_unicode()[ord(" ")], bytes_to_unicode()[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def token_text_to_bytes(text: str) -> bytes | None:
    """The bytes a byte-level token string stands for, or None if it uses other characters."""
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in text)
    except KeyError:
        return None


def bytes_to_token_text(data: bytes) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in data)


def byte_piece_value(text: str) -> int | None:
    """0xXX for a ``<0xXX>`` byte token (SentencePiece / byte-fallback BPE), else None.

    >>> byte_piece_value("<0xE6>"), byte_piece_value("<0x4g>"), byte_piece_value("e")
    (230, None, None)
    """
    if len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
        try:
            return int(text[3:5], 16)
        except ValueError:
            return None
    return None
