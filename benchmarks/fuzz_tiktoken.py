"""Differential fuzz of the default Tokenizer against tiktoken on generated hostile text.

    python benchmarks/fuzz_tiktoken.py --vocab o200k_base --seconds 600 --seed 1

Each round draws a batch of texts made of random pieces: runs of vocabulary tokens, characters of
many Unicode blocks (those the newest Unicode added among them), whitespace runs of every kind,
contractions, digits, special-token literals, long runs of one character, ASCII punctuation soup;
now and then a text long enough to be cut into parts on two threads. Every text goes through
``encode_ordinary``, ``encode_to_numpy``, ``encode_ordinary_batch`` and its flat form on two
threads, ``encode(allowed_special="all")``, ``count`` and ``decode``, each compared with tiktoken's
ids (or the text). A mismatch prints one line and writes the text under ``--out``; the exit status
is 1 when any was found.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

BLOCKS = [(0x20, 0x7E)] * 6 + [
    (0xA0, 0x24F), (0x290, 0x29F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF), (0x880, 0x8FF),
    (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x1AB0, 0x1AFF), (0x2000, 0x206F), (0x3000, 0x30FF),
    (0x4E00, 0x9FFF), (0xA7C0, 0xA7FF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xFF00, 0xFFEF), (0x10000, 0x1007F),
    (0x10D40, 0x10D8F), (0x16EA0, 0x16EDF), (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF), (0x323B0, 0x3347F)]
WHITESPACE = [" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n", "\u00a0", "\u3000", "\u2028", "\x0b", "\x0c", "\u200b",
              "\u0085"]
BITS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "123", "4567", "1234567", "...", "!!", "//",
        "<|endoftext|>", "\u200d", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u00e9", "e\u0301", "\u216b",
        "\u01c5", "\ufb01", "\u0130", "\u00df", "\u03a3\u0391\u03a3", "\uff21\uff22", "\u0661\u0662", "\U0001d7d9",
        "\ufeff", "\u017f"]


def _chunk(rng: random.Random, tokens: list[str]) -> str:
    r = rng.random()
    if r < 0.25:
        return "".join(rng.choice(tokens) for _ in range(rng.randint(1, 20)))
    if r < 0.5:
        low, high = rng.choice(BLOCKS)
        return "".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 40)))
    if r < 0.65:
        return rng.choice(WHITESPACE) * rng.randint(1, 30)
    if r < 0.8:
        return rng.choice(BITS) * rng.randint(1, 4)
    if r < 0.9:
        low, high = rng.choice(BLOCKS)
        return chr(rng.randint(low, high)) * rng.randint(20, 300)
    return "".join(rng.choice("aA1 _-.,;:!?()[]{}'\"\n\t") for _ in range(rng.randint(1, 60)))


def text(rng: random.Random, tokens: list[str], chunks: int) -> str:
    return "".join(_chunk(rng, tokens) for _ in range(chunks))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", default="o200k_base")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-mismatches"))
    args = parser.parse_args(argv)

    import bpebench
    from bpebench.errors import BpebenchError
    from bpebench.properties.oracles import tiktoken_encoding

    from bpebench.algorithms.peers import peer_status

    try:
        vocabulary = bpebench.load_vocabulary(args.vocab)
        why = next((why for peer, ok, why in peer_status(vocabulary) if peer == "tiktoken" and not ok), None)
        if why is None and vocabulary.normalizer not in (None, "none"):
            why = f"its text is normalized first ({vocabulary.normalizer}); `bpebench parity` compares such files"
        if why is not None:
            raise BpebenchError(f"tiktoken cannot judge {args.vocab}: {why}")
        ours = bpebench.get_encoding(args.vocab)
        theirs = tiktoken_encoding(vocabulary)
    except BpebenchError as exc:
        print(f"fuzz_tiktoken: {exc}", file=sys.stderr)
        return 2
    tokens = []
    for i in range(0, theirs.n_vocab - 300, 7):
        try:
            tokens.append(theirs.decode_single_token_bytes(i).decode("utf-8"))
        except (KeyError, UnicodeDecodeError):
            continue
    rng = random.Random(args.seed)
    end = time.monotonic() + args.seconds
    texts = found = 0

    def mismatch(what: str, sample: str) -> None:
        nonlocal found
        found += 1
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"{args.vocab}-{args.seed}-{found}.txt"
        path.write_text(sample, encoding="utf-8", errors="surrogatepass")
        print(f"MISMATCH {what}: {len(sample)} characters, written to {path}", flush=True)

    while time.monotonic() < end:
        batch = [text(rng, tokens, rng.choice([1, 3, 10, 50, 300])) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.05:
            batch.append(text(rng, tokens, 20000))  # long: cut into parts on the threads
        expected = [theirs.encode_ordinary(t) for t in batch]
        got = {"encode_ordinary": [ours.encode_ordinary(t) for t in batch],
               "encode_to_numpy": [ours.encode_to_numpy(t, disallowed_special=()).tolist() for t in batch],
               "encode_ordinary_batch": ours.encode_ordinary_batch(batch, num_threads=2),
               "encode(allowed_special='all')": [ours.encode(t, allowed_special="all") for t in batch]}
        ids, offsets = ours.encode_ordinary_batch_to_numpy(batch, num_threads=2)
        got["encode_ordinary_batch_to_numpy"] = [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
        with_specials = [theirs.encode(t, allowed_special="all") for t in batch]
        for k, sample in enumerate(batch):
            for what, results in got.items():
                want = with_specials[k] if what.startswith("encode(") else expected[k]
                if results[k] != want:
                    mismatch(what, sample)
            if ours.count(sample) != len(expected[k]):
                mismatch("count", sample)
            if ours.decode(got["encode_ordinary"][k]) != sample:
                mismatch("decode", sample)
        texts += len(batch)
    print(f"{args.vocab} seed {args.seed}: {texts} texts, {found} mismatches")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
