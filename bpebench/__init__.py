"""bpebench: a benchmark and verification harness for byte-pair-encoding (BPE) encoders.

The public API (each name is imported on first use, so ``import bpebench`` is cheap)::

    import bpebench

    vocab = bpebench.load_vocabulary("o200k_base")        # a built-in name or any tokenizer file
    tok = bpebench.Tokenizer(vocab)                       # tiktoken's encode / decode semantics
    enc = bpebench.get_encoding("cl100k_base")            # tiktoken's name for the same thing
    tok.encode_ordinary("hello world")
    bpebench.encoder_names()                              # every registered encoder
    bpebench.Tokenizer(vocab, algorithm="heap")           # any of them in the pipeline
    bpebench.check_encoder(MyEncoder)                     # the conformance kit on any class

Subpackages: ``bpebench.algorithms`` (encoders, formats, kernels, pipeline, cache,
peers), ``bpebench.corpora``, ``bpebench.properties``, ``bpebench.reports``,
``bpebench.benchmarks``; the command line is ``bpebench`` (:mod:`bpebench.cli`).
"""

from __future__ import annotations

from ._lazy import lazy_exports
from .errors import BpebenchError, UnknownNameError, UnsupportedVocabulary, VocabularyError

_EXPORTS = {
    "load_vocabulary": "algorithms.formats",
    "load_path": "algorithms.formats",
    "Vocabulary": "algorithms.formats.vocabulary",
    "Tokenizer": "algorithms.pipeline.tokenizer",
    "DisallowedSpecialError": "algorithms.pipeline.tokenizer",
    "get_encoding": "algorithms.pipeline.tokenizer",
    "list_encoding_names": "algorithms.pipeline.tokenizer",
    "Encoder": "algorithms.core.encoder",
    "PiecewiseEncoder": "algorithms.core.encoder",
    "register_encoder": "algorithms.core.registry",
    "encoder_names": "algorithms.core.registry",
    "get_encoder_class": "algorithms.core.registry",
    "make_encoder": "algorithms.core.registry",
    "default_encoder_name": "algorithms.core.registry",
    "split_at_tokens": "algorithms.pipeline.chunking",
    "count_till_limit": "algorithms.pipeline.chunking",
    "count_range": "algorithms.pipeline.chunking",
    "check_encoder": "properties.kit",
}
__all__ = sorted([*_EXPORTS, "BpebenchError", "UnknownNameError", "UnsupportedVocabulary", "VocabularyError",
                  "__version__"])
_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str) -> object:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("bpebench")
        except PackageNotFoundError:  # running from a checkout that is not installed
            return "0+unknown"
    return _getattr(name)
