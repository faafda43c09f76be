"""Derived data on disk: the memory-mapped vocabulary store (``vocabularies``)."""
