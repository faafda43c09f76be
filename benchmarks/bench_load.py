"""Load, short, long, decode (seed 002's four measurements), per vocabulary, ours and every peer.

* ``LoadCold.track_load_cold_seconds``: a fresh Python process builds a ready
  tokenizer and encodes one word; the seconds from the script's first line (so
  interpreter start-up is excluded). Ours: import, load the vocabulary, compile
  its tables, first encode (numba's on-disk cache included). A peer: import the
  library and build it (from our Vocabulary object when it is built from ranks,
  which is then loaded before the clock starts), first encode.
* ``LoadWarm.time_load_again``: the same in a process that has done it once
  (imports done, files in the OS cache, any on-disk cache of compiled tables filled).
* ``ShortLongDecode``: a batch of short strings (one sentence in each of eight
  languages), a ~5 kB English text, and decoding a text's ids one token at a time.

"ours" is a Tokenizer around the default (fastest exact) encoder.
"""

from __future__ import annotations

import subprocess
import sys

from bpebench.algorithms.core.registry import default_encoder_name

from . import common

OURS = f"ours/{default_encoder_name()}"
IMPLEMENTATIONS = [OURS] + [f"peer/{p}" for p in common.peer_names()]
SHORT_FROM = ["udhr-en", "udhr-zh", "udhr-ja", "udhr-ar", "udhr-he", "udhr-ru", "udhr-hi", "udhr-ko"]

_COLD_OURS = """
import time
start = time.perf_counter()
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.core.registry import make_encoder
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
tokenizer = Tokenizer(load_vocabulary({vocab!r}), algorithm={encoder!r})
tokenizer.encode_ordinary("hello world")
print(time.perf_counter() - start)
"""
_COLD_PEER = """
import time
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.peers import make_peer
vocabulary = load_vocabulary({vocab!r})
start = time.perf_counter()
peer = make_peer({peer!r}, vocabulary, verify=False)
peer.encode_ordinary("hello world")
print(time.perf_counter() - start)
"""


def _check_available(vocab: str, implementation: str) -> None:
    common.vocabulary(vocab)
    if implementation.startswith("peer/"):
        from bpebench.algorithms.peers import peer_status

        name = implementation[5:]
        for peer, ok, why in peer_status(common.vocabulary(vocab)):
            if peer == name and not ok:
                raise NotImplementedError(why)


def _short_texts() -> list[str]:
    texts = []
    for name in SHORT_FROM:
        first_line = common.text(name).split("\n")[0]
        texts.append(first_line[:60])
    return texts


class LoadCold:
    params = [common.VOCABS, IMPLEMENTATIONS]
    param_names = ["vocabulary", "implementation"]
    timeout = 300

    def setup(self, vocab, implementation):
        _check_available(vocab, implementation)

    def track_load_cold_seconds(self, vocab, implementation):
        if implementation.startswith("peer/"):
            script = _COLD_PEER.format(vocab=vocab, peer=implementation[5:])
        else:
            script = _COLD_OURS.format(vocab=vocab, encoder=implementation.partition("/")[2])
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed")
        return float(done.stdout.strip().splitlines()[-1])

    track_load_cold_seconds.unit = "seconds"


class LoadWarm:
    params = [common.VOCABS, IMPLEMENTATIONS]
    param_names = ["vocabulary", "implementation"]
    timeout = 300
    number = 1
    repeat = (1, 3, 30.0)
    warmup_time = 0

    def setup(self, vocab, implementation):
        _check_available(vocab, implementation)
        self.implementation = implementation
        self.vocab = vocab
        self.time_load_again(vocab, implementation)  # the first time is the cold one

    def time_load_again(self, vocab, implementation):
        from bpebench.algorithms import formats as loaders
        from bpebench.algorithms.pipeline.tokenizer import Tokenizer

        if implementation.startswith("peer/"):
            from bpebench.algorithms import peers

            peers._BUILT.clear()
            peers.make_peer(implementation[5:], common.vocabulary(vocab), verify=False).encode_ordinary("hello")
        else:
            loaders._CACHE.pop(vocab, None)
            Tokenizer(loaders.load_vocabulary(vocab), algorithm=implementation[5:]).encode_ordinary("hello")


class ShortLongDecode:
    params = [common.VOCABS, IMPLEMENTATIONS]
    param_names = ["vocabulary", "implementation"]
    timeout = 180

    def setup(self, vocab, implementation):
        _check_available(vocab, implementation)
        self.encode = common.pipeline_encode(implementation, vocab)
        self.decode = common.pipeline_decode(implementation, vocab)
        self.short = _short_texts()
        self.long = common.text("prose-en", 5_000)
        self.ids = self.encode(self.long)[:200]

    def time_encode_short_batch(self, vocab, implementation):
        for text in self.short:
            self.encode(text)

    def time_encode_long_5kB(self, vocab, implementation):
        self.encode(self.long)

    def time_decode_token_by_token_200(self, vocab, implementation):
        decode = self.decode
        for token in self.ids:
            decode([token])


for _vocab in common.VOCABS:
    common.preload(_vocab, encoders=[default_encoder_name()], raw=False)
