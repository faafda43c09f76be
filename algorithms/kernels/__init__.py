"""What encoders and the pipeline share: BPE's definition in plain Python, the compiled
tables and tries over a vocabulary, the short-piece merge loop, and the lazy ``njit``."""
