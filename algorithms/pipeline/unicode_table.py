"""Per-code-point character classes for the compiled pre-tokenizer.

The table is generated **from the ``regex`` module itself**, not from
:mod:`unicodedata`: the reference splitting is ``regex.findall`` and the two
libraries ship different Unicode versions (this environment: ``regex`` 2026.x
knows Unicode 17.0 scripts such as Sidetic and Tolong Siki, while Python 3.11's
``unicodedata`` is Unicode 14.0; about 27,000 code points are classified
differently). To build it we run each class the patterns use (``\\p{L}``,
``\\p{N}``, ``\\s``, ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]``, ``(?i:s)`` ...) once
over a string holding every code point U+0000..U+10FFFF and record which
positions match; the code points newer than tiktoken's and HF's Unicode stand in that string as
characters of the class those libraries read (:mod:`.unicode_reference`). That takes about a
second; the result is cached under
``$XDG_CACHE_HOME/bpebench`` (default ``~/.cache/bpebench``, override with
``BPEBENCH_CACHE``), keyed by the ``regex`` version and the stand-ins' table, so a ``regex``
upgrade rebuilds it automatically.

Notes on what ``regex`` calls whitespace: ``\\s`` in the ``regex`` module is the
Unicode ``White_Space`` property (TAB..CR, SPACE, U+0085, NBSP, U+1680,
U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). Unlike
``str.isspace()`` it does **not** include the separators U+001C..U+001F; those
are ``[^\\s\\p{L}\\p{N}]`` ("other") characters for every pattern here.

Class word layout (``uint16`` per code point; see the ``F_*`` constants):

====  =========  ===============================================================
bit   name       meaning
====  =========  ===============================================================
0     L          ``\\p{L}``
1     N          ``\\p{N}``
2     WS         ``\\s``
3     CRLF       ``[\\r\\n]`` (exactly U+000D, U+000A)
4     UP         ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]`` (o200k "upper" class)
5     LO         ``[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]`` (o200k "lower" class)
6     SPACE      exactly U+0020 (the literal ``" ?"``)
7     APOS       exactly U+0027, i.e. what ``(?i:')`` matches
8     SLASH      exactly ``/`` (o200k's ``[\\r\\n/]*`` suffix)
9     ASCII_LOW  exactly one of ``a``..``z`` (case-sensitive GPT-2 contractions)
10-11 LEN        always 0 in the table; the UTF-8 decoder stores the
                 character's byte length minus one here
12-15 FOLD       which contraction letter ``(?i:x)`` matches this code point:
                 0 none, 1 s, 2 d, 3 m, 4 t, 5 l, 6 v, 7 r, 8 e
                 (e.g. ``S``, ``s`` and U+017F LONG S all have FOLD = 1)
====  =========  ===============================================================

A character with none of L/N/WS set is "other" (``[^\\s\\p{L}\\p{N}]``); class
word 0 is what invalid UTF-8 maps to (like U+FFFD, which is ``So``).

The flat 0x110000-entry table is stored two-level: ``stage1`` (4352 ``int32``
block numbers, one per 256 code points) and ``stage2`` (``uint16``, unique
256-entry blocks concatenated): ``cls = stage2[(stage1[cp >> 8] << 8) | (cp & 255)]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..cache.files import CacheDamaged, cache_root, discard, map_checked, write_checked

F_L = 1 << 0
F_N = 1 << 1
F_WS = 1 << 2
F_CRLF = 1 << 3
F_UP = 1 << 4
F_LO = 1 << 5
F_SPACE = 1 << 6
F_APOS = 1 << 7
F_SLASH = 1 << 8
F_ASCII_LOW = 1 << 9
LEN_SHIFT = 10
FOLD_SHIFT = 12

#: Contraction letters and their FOLD ids (1-based, stored in bits 12..15).
FOLD_LETTERS = "sdmtlvre"
FOLD_S, FOLD_D, FOLD_M, FOLD_T, FOLD_L, FOLD_V, FOLD_R, FOLD_E = range(1, 9)

N_CODEPOINTS = 0x110000
BLOCK = 256
N_BLOCKS = N_CODEPOINTS // BLOCK  # 4352

#: Bump when the class layout or its derivation changes (invalidates caches).
FORMAT_VERSION = 2

_ALL_CODEPOINTS: str | None = None


def _all_codepoints() -> str:
    """Every code point in order, those newer than the files' libraries' Unicode replaced by stand-ins
    of the class those libraries read (:mod:`.unicode_reference`), so that the tables built over it
    class them as tiktoken and HF ``tokenizers`` do."""
    global _ALL_CODEPOINTS
    if _ALL_CODEPOINTS is None:
        from .unicode_reference import reference_code_points

        _ALL_CODEPOINTS = reference_code_points("".join(map(chr, range(N_CODEPOINTS))))
    return _ALL_CODEPOINTS


def regex_mask(pattern: str) -> np.ndarray:
    """Boolean array: which code points match the single-character ``pattern``.

    ``pattern`` must match exactly one character; it is run once with
    ``regex.finditer`` over a string of all 0x110000 code points.
    """
    import regex

    everything = _all_codepoints()
    mask = np.zeros(N_CODEPOINTS, dtype=bool)
    for m in regex.finditer(f"(?:{pattern})+", everything):
        mask[m.start() : m.end()] = True
    return mask


def build_flat_table() -> np.ndarray:
    """The flat ``uint16[0x110000]`` class table, derived from the ``regex`` module."""
    table = np.zeros(N_CODEPOINTS, dtype=np.uint16)
    for flag, pat in (
        (F_L, r"\p{L}"),
        (F_N, r"\p{N}"),
        (F_WS, r"\s"),
        (F_CRLF, r"[\r\n]"),
        (F_UP, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
        (F_LO, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
        (F_SPACE, r"\x20"),
        (F_APOS, r"(?i:')"),
        (F_SLASH, r"/"),
        (F_ASCII_LOW, r"[a-z]"),
    ):
        table[regex_mask(pat)] |= flag
    for fid, letter in enumerate(FOLD_LETTERS, start=1):
        # Both the literal form (llama3: (?i:'s|...)) and the class form
        # (cl100k: (?i:[sdmt])) must agree, or one FOLD id could not serve both.
        lit = regex_mask(f"(?i:{letter})")
        cls = regex_mask(f"(?i:[{letter}])")
        if not np.array_equal(lit, cls):  # pragma: no cover - regex behaviour change
            raise RuntimeError(f"regex: (?i:{letter}) and (?i:[{letter}]) differ")
        if np.any(table[lit] >> FOLD_SHIFT):  # pragma: no cover
            raise RuntimeError("a code point case-folds to two contraction letters")
        table[lit] |= np.uint16(fid << FOLD_SHIFT)
    return table


def two_level(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Compress a flat table into ``(stage1 int32[4352], stage2 uint16[k*256])``."""
    blocks = flat.reshape(N_BLOCKS, BLOCK)
    uniq, inverse = np.unique(blocks, axis=0, return_inverse=True)
    stage1 = np.ascontiguousarray(inverse.reshape(-1), dtype=np.int32)
    stage2 = np.ascontiguousarray(uniq.reshape(-1), dtype=np.uint16)
    return stage1, stage2


def expand(stage1: np.ndarray, stage2: np.ndarray) -> np.ndarray:
    """Inverse of :func:`two_level` (the flat table)."""
    cps = np.arange(N_CODEPOINTS, dtype=np.int64)
    return stage2[(stage1[cps >> 8].astype(np.int64) << 8) | (cps & 255)]


def regex_unicode_version() -> str:
    """Best guess of the Unicode version the ``regex`` module implements.

    ``regex`` does not expose it; we probe for the scripts each version added.
    """
    import regex

    probes = [
        ("17.0", "Sidetic"),
        ("16.0", "Garay"),
        ("15.0", "Kawi"),
        ("14.0", "Vithkuqi"),
        ("13.0", "Yezidi"),
    ]
    for version, script in probes:
        try:
            regex.compile(rf"\p{{Script={script}}}")
        except regex.error:
            continue
        return f">= {version}"
    return "< 13.0"


def cache_path() -> Path:
    import regex

    from .unicode_reference import digest

    return cache_root() / f"unicode_classes_v{FORMAT_VERSION}_regex-{regex.__version__}-{digest()}.bin"


def _valid(stage1: np.ndarray, stage2: np.ndarray) -> bool:
    return (
        stage1.shape == (N_BLOCKS,)
        and stage1.dtype == np.int32
        and stage2.dtype == np.uint16
        and stage2.ndim == 1
        and stage2.size % BLOCK == 0
        and int(stage1.min()) >= 0
        and int(stage1.max()) < stage2.size // BLOCK
    )


def load_tables(use_cache: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(stage1, stage2)``, from the disk cache if present and valid.

    A missing, stale or unreadable cache is rebuilt from the ``regex`` module;
    an unwritable cache directory is not an error (the table just isn't saved).
    The cache is the two arrays' raw bytes behind a length and sha256 (``write_checked``), mapped
    (``map_checked``; reading and copying its 88 kB cost a fresh process 0.2 ms, numpy's ``.npz``
    1.5 ms).
    """
    path = cache_path()
    if use_cache:
        try:
            payload = map_checked(path)  # writable (copy on write): numba compiles read-only arrays apart
            if payload is not None:
                # stage1 copied: the payload starts at byte 58 and int32 wants 4-byte alignment
                stage1 = np.frombuffer(payload, dtype=np.int32, count=N_BLOCKS).copy()
                stage2 = np.frombuffer(payload, dtype=np.uint16, offset=stage1.nbytes)
                if not _valid(stage1, stage2):
                    raise CacheDamaged("tables of the wrong shape")
                return stage1, stage2
        except (CacheDamaged, ValueError) as exc:  # never used: rebuilt below
            discard(path, str(exc))
    stage1, stage2 = two_level(build_flat_table())
    if use_cache:
        write_checked(path, stage1.astype(np.int32).tobytes() + stage2.astype(np.uint16).tobytes())
    return stage1, stage2


def unicodedata_differences(flat: np.ndarray | None = None) -> int:
    """How many code points ``unicodedata`` would put in a different L/N/M/WS class.

    For documentation/diagnostics only: shows why the table is taken from
    ``regex`` rather than from the running Python's ``unicodedata``.
    """
    import unicodedata

    if flat is None:
        flat = build_flat_table()
    ours = flat & (F_L | F_N | F_WS | F_UP | F_LO)
    cat_flags = {}
    for cat in ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No"):
        f = 0
        if cat[0] == "L":
            f |= F_L
        if cat[0] == "N":
            f |= F_N
        if cat in ("Lu", "Lt", "Lm", "Lo") or cat[0] == "M":
            f |= F_UP
        if cat in ("Ll", "Lm", "Lo") or cat[0] == "M":
            f |= F_LO
        cat_flags[cat] = f
    theirs = np.zeros(N_CODEPOINTS, dtype=np.uint16)
    for cp in range(N_CODEPOINTS):
        c = chr(cp)
        f = cat_flags.get(unicodedata.category(c), 0)
        if c.isspace() and not 0x1C <= cp <= 0x1F:
            f |= F_WS
        theirs[cp] = f
    return int(np.count_nonzero(ours != theirs))
