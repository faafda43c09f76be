"""Decoders with HF ``tokenizers`` semantics: token strings back to text.

HF decodes ids by turning each into its token string, running the decoder's
``decode_chain`` over the list, and joining the result; without a decoder the token
strings are joined with spaces. Implemented: ByteLevel, Metaspace, ByteFallback, Fuse,
Strip, Replace, BPEDecoder, WordPiece and Sequence. Others are refused with one line.

Details that HF has and that are kept: Metaspace drops *every* replacement character
of the first token (not only a leading one) unless ``prepend_scheme`` is ``never``;
ByteFallback turns a run of ``<0xXX>`` tokens that is not valid UTF-8 into one U+FFFD
per byte; ByteLevel maps back only tokens made entirely of byte-level characters.

Complexity: linear in the total length of the tokens. Exact.
"""

from __future__ import annotations

from bpebench.errors import VocabularyError
from ..formats.byte_alphabet import byte_piece_value
from .text_pieces import build_component
from .normalizers import SPM_SPACE, describe_spec, matches_of, pattern_of


class Decoder:
    spec: dict

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def decode(self, tokens: list[str]) -> str:
        return "".join(self.decode_chain(list(tokens)))

    def describe(self) -> str:
        return describe_spec(self.spec)


class ByteLevelDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        from ..formats.byte_alphabet import unicode_to_bytes

        self.spec = spec
        self.table = unicode_to_bytes()

    def decode_chain(self, tokens: list[str]) -> list[str]:
        table = self.table
        data = bytearray()
        for token in tokens:
            try:
                data.extend(table[c] for c in token)
            except KeyError:
                data.extend(token.encode("utf-8", "surrogatepass"))
        return [data.decode("utf-8", "replace")]


class MetaspaceDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.replacement = spec.get("replacement", SPM_SPACE)
        scheme = spec.get("prepend_scheme")
        if scheme is None:
            scheme = "always" if spec.get("add_prefix_space", True) else "never"
        self.strip_first = scheme != "never"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        rep = self.replacement
        return [token.replace(rep, "" if i == 0 and self.strip_first else " ") for i, token in enumerate(tokens)]


class ByteFallbackDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        pending = bytearray()

        def flush() -> None:
            if pending:
                try:
                    out.append(pending.decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend("\ufffd" for _ in pending)
                pending.clear()

        for token in tokens:
            value = byte_piece_value(token)
            if value is not None:
                pending.append(value)
            else:
                flush()
                out.append(token)
        flush()
        return out


class FuseDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


class StripDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.content = spec.get("content", " ")
        self.start = int(spec.get("start", 0))
        self.stop = int(spec.get("stop", 0))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            chars = list(token)
            a = 0
            while a < min(self.start, len(chars)) and chars[a] == self.content:
                a += 1
            b = len(chars)
            removed = 0
            while removed < self.stop and b > a and chars[b - 1] == self.content:
                b -= 1
                removed += 1
            out.append("".join(chars[a:b]))
        return out


class ReplaceDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.pattern = pattern_of(spec, where)
        self.content = spec.get("content", "")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            parts = [self.content if is_match else token[a:b] for a, b, is_match in matches_of(self.pattern, token)]
            out.append("".join(parts))
        return out


class BPEDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.suffix = spec.get("suffix", "</w>")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [t.replace(self.suffix, "" if i == last else " ") if self.suffix else t for i, t in enumerate(tokens)]


_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


class WordPieceDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.prefix = spec.get("prefix", "##")
        self.cleanup = bool(spec.get("cleanup", True))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, token in enumerate(tokens):
            if i:
                token = token.replace(self.prefix, "", 1) if token.startswith(self.prefix) else " " + token
            if self.cleanup:
                for old, new in _CLEANUP:
                    token = token.replace(old, new)
            out.append(token)
        return out


class SentencePieceDecoder(Decoder):
    """SentencePiece's own ``Decode`` (bpebench's component; no HF decoder matches it).

    Spec: ``{"type": "SentencePiece", "unk_token", "control_tokens": [...], "add_dummy_prefix",
    "remove_extra_whitespaces"}``. Runs of ``<0xXX>`` pieces become their bytes (U+FFFD per
    byte where they are not UTF-8), control pieces nothing, the unknown piece `` \u2047 ``,
    ``▁`` a space. At the start of the text (nothing written yet, and no leading ``▁``
    consumed yet) a piece's leading ``▁`` is dropped when the dummy prefix or whitespace
    collapsing is on; with collapsing, every piece's until some text is written.
    """

    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.unk = spec.get("unk_token")
        self.control = frozenset(spec.get("control_tokens") or ())
        self.collapse = bool(spec.get("remove_extra_whitespaces", True))
        self.strip_leading = self.collapse or bool(spec.get("add_dummy_prefix", True))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        pending = bytearray()
        is_bos_ws, bos_ws_seen = True, False
        for token in tokens:
            value = byte_piece_value(token)
            if value is not None:
                pending.append(value)
                continue
            if pending:
                try:
                    out.append(pending.decode("utf-8"))
                except UnicodeDecodeError:
                    out.append("\ufffd" * len(pending))
                pending.clear()
            if bos_ws_seen or any(out):
                is_bos_ws = False
            bos_ws_seen = False
            if token in self.control:
                continue
            if token == self.unk:
                out.append(" \u2047 ")
                continue
            if is_bos_ws and self.strip_leading and token.startswith(SPM_SPACE):
                token = token[1:]
                bos_ws_seen = not self.collapse
            out.append(token.replace(SPM_SPACE, " "))
        if pending:
            try:
                out.append(pending.decode("utf-8"))
            except UnicodeDecodeError:
                out.append("\ufffd" * len(pending))
        return ["".join(out)]


class SequenceDecoder(Decoder):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        children = spec.get("decoders")
        if not isinstance(children, list):
            raise VocabularyError(f"{where}: Sequence decoder without a 'decoders' list")
        self.parts = [d for d in (build_decoder(c, where) for c in children) if d is not None]

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for part in self.parts:
            tokens = part.decode_chain(tokens)
        return tokens


DECODER_TYPES: dict[str, type[Decoder]] = {
    "ByteLevel": ByteLevelDecoder, "Metaspace": MetaspaceDecoder, "ByteFallback": ByteFallbackDecoder,
    "Fuse": FuseDecoder, "Strip": StripDecoder, "Replace": ReplaceDecoder, "BPEDecoder": BPEDecoder,
    "WordPiece": WordPieceDecoder, "Sequence": SequenceDecoder, "SentencePiece": SentencePieceDecoder,
}


def build_decoder(spec: dict | None, where: str = "decoder") -> Decoder | None:
    """The runtime decoder of a ``tokenizer.json`` ``decoder`` value (None for null)."""
    return build_component(spec, DECODER_TYPES, "decoder", where)
