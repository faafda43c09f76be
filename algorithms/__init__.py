"""Encoders: one BPE strategy per module here, all behind the interface in ``core``.

Every plain module of this package is an encoder that registers itself with
``@register_encoder``; the infrastructure lives in subpackages:

* ``core``: the :class:`Encoder` interface and the registry;
* ``formats``: the :class:`Vocabulary` and its file formats (tiktoken, HF
  ``tokenizer.json``, SentencePiece, GGUF), pre-tokenizer patterns;
* ``kernels``: what encoders share (BPE's definition in plain Python, compiled
  tables, tries, the short-piece merge loop, the lazy ``njit``);
* ``pipeline``: the Tokenizer (special tokens, normalizers, pre-tokenizers, the fused
  compiled kernel, its ahead-of-time build), chunking and agreement;
* ``cache``: derived data on disk (the memory-mapped vocabulary store);
* ``peers``: the other libraries, behind one interface.

A new encoder is one module here (or an entry point in the group ``bpebench.encoders``)::

    from bpebench.algorithms import Encoder, register_encoder

    @register_encoder
    class MyEncoder(Encoder):
        name = "mine"
        def encode(self, data: bytes) -> list[int]: ...
"""

from bpebench._lazy import lazy_exports

_EXPORTS = {"Encoder": "core.encoder", "PiecewiseEncoder": "core.encoder", "register_encoder": "core.registry",
            "encoder_names": "core.registry", "get_encoder_class": "core.registry", "make_encoder": "core.registry",
            "default_encoder_name": "core.registry"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
