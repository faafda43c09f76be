"""``bpebench corpora``: list the corpora, or show / write one.

    bpebench corpora                         # every corpus: size (default parameters) and description
    bpebench corpora udhr-ja --head 200      # the first 200 characters (bytes corpora: escaped)
    bpebench corpora unsplittable --vocab cl100k_base --size 1000000 --out piece.txt
    bpebench corpora digits --param seed=3
"""

from __future__ import annotations

import sys

from bpebench.errors import BpebenchError


def _parse_params(args) -> dict:
    params: dict = {}
    for item in args.param or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BpebenchError(f"--param expects KEY=VALUE, got {item!r}")
        params[key] = int(value) if value.lstrip("-").isdigit() else value
    for key in ("size", "seed", "vocab"):
        value = getattr(args, key)
        if value is not None:
            params[key] = value
    return params


def _human(n: int) -> str:
    for unit in ("B", "kB", "MB"):
        if n < 1000 or unit == "MB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def cmd_corpora(args) -> int:
    from bpebench import corpora

    if not args.name:
        if args.head is not None or args.out or args.param or args.size is not None:
            raise BpebenchError("name a corpus to use --head, --out, --size or --param (see `bpebench corpora`)")
        print(f"{'name':<20} {'category':<12} {'size':>9}  description (cache: {corpora.cache_dir()})")
        for name, description in corpora.describe().items():
            spec = corpora.corpus(name)
            print(f"{name:<20} {spec.category:<12} {_human(len(corpora.get_bytes(name))):>9}  {description}",
                  flush=True)
            if spec.why_hard:
                print(f"{'':<44}hard because {spec.why_hard}")
        print("Any file or directory path is also accepted as a corpus.")
        return 0
    value = corpora.get(args.name, **_parse_params(args))
    if args.out:
        data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
        try:
            with open(args.out, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise BpebenchError(f"{args.out}: cannot write ({exc.strerror or exc})") from None
        print(f"wrote {len(data)} bytes to {args.out}", file=sys.stderr)
        return 0
    head = 200 if args.head is None else args.head
    if isinstance(value, str):
        print(value[:head])
    else:
        print(value[:head].decode("ascii", "backslashreplace"))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("corpora", help="list the named corpora, or show / write one")
    p.add_argument("name", nargs="?", help="corpus name or a file/directory path (omit to list all)")
    p.add_argument("--head", type=int, default=None, help="show the first N characters (default 200)")
    p.add_argument("--size", type=int, default=None, help="size in bytes (generators that take one)")
    p.add_argument("--vocab", default=None, help="vocabulary (vocabulary-dependent generators)")
    p.add_argument("--seed", type=int, default=None, help="random seed (seeded generators)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE", help="any other generator parameter")
    p.add_argument("--out", default=None, help="write the whole corpus to this file instead")
    p.set_defaults(func=cmd_corpora)
