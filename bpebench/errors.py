"""Errors a user can cause. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations


class BpebenchError(Exception):
    """A mistake in what the user asked for (bad name, bad file, bad id): shown as one line."""


class VocabularyError(BpebenchError):
    """A vocabulary file or name that cannot be loaded."""


class UnknownNameError(BpebenchError, KeyError):
    """A name (vocabulary, algorithm, corpus, pattern) that is not registered."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, known
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(known) or '(none)'}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class UnsupportedVocabulary(BpebenchError):
    """An encoder that cannot encode this vocabulary exactly and refuses it (see its message)."""
