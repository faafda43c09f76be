"""The Tokenizer pipeline: special tokens, normalizers, pre-tokenizers (reference and
compiled), the fused compiled kernel, its ahead-of-time build and C id-list helper, and
the chunking and agreement operations built on a Tokenizer."""
