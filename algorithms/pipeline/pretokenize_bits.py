"""Bit-parallel pre-tokenizer for ASCII text: where pieces start, 64 characters per step. Exact.

The general compiled pre-tokenizer (:mod:`bpebench.algorithms.pipeline.pretokenize_compiled`)
decodes UTF-8 into class words and runs a small state machine per piece: a data-dependent
branch or two per piece, which the CPU mispredicts often (natural text alternates words,
spaces and punctuation irregularly). Ending its runs with bit scans instead of loops saved
little (2026-11-27: o200k prose 4.5 -> 3.7 ms per MB, code unchanged), so here every rule of
the six patterns is rewritten as bitwise algebra over whole 64-bit words, and no branch
depends on the text except at apostrophes:

1. :func:`ascii_bitmaps` classifies the text 64 bytes per step with vector compares
   (:func:`bpebench.algorithms.kernels.bits.ascii_masks`): one row of eight uint64 bitmaps per
   64 bytes (:data:`BITMAPS`), and whether every byte is ASCII;
2. a backward pass marks the whitespace that no ``[\\r\\n]`` follows within its run;
3. :func:`piece_starts` computes, word by word, the bitmap of positions where a piece starts
   (carries between words: the run of ``[\\r\\n/]`` that a punctuation run absorbs, the
   three-digit groups, and the one-bit neighbours); contractions are then applied at each
   apostrophe (rare), and ``\\s++$`` (cl100k) at the end of the text;
4. the caller walks the set bits (:func:`bits.cttz`): piece ``i`` is ``[start_i, start_{i+1})``.

Piece starts, o200k (``[^\\r\\n\\p{L}\\p{N}]?[UP]*[LO]+C? | ... | \\p{N}{1,3} | ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*
| \\s*[\\r\\n]+ | \\s+(?!\\S) | \\s+``), with ``P`` = punctuation ``[^\\s\\p{L}\\p{N}]``, ``S`` = ``\\s``,
``R`` = ``[\\r\\n]``, ``NR`` = ``S`` and not ``R``, ``prev(X)`` / ``next(X)`` = the character before / after is
in ``X``:

* a punctuation run absorbs the ``[\\r\\n/]`` run that follows it when that starts with ``R``
  (``ABS``, one carry-propagating addition); the first character after it starts a piece;
* a punctuation piece starts where a punctuation run starts (not absorbed), unless a space
  ``' '`` precedes it, which then starts the piece (`` ?P+``);
* a letter run starts a piece at its first letter, or one character earlier when that
  character is ``NR`` or starts a punctuation piece (the optional prefix); in o200k an
  upper-case letter after a lower-case one starts a new piece (``[UP]*[LO]+``);
* digit runs start a piece every three digits (qwen2: every digit; gpt2: once);
* in a whitespace run: its first character not absorbed; the character after its last ``R``
  when the rest of the run is ``NR`` (``\\s*[\\r\\n]+``); its last character when it is ``NR`` and
  the text goes on (``\\s+(?!\\S)`` leaves it to the next piece);
* contractions (o200k: ``'s`` ... after a word; cl100k, llama3, qwen2, gpt2: a piece of their
  own where an apostrophe starts a piece) move the starts around the apostrophe.

gpt2 (`` ?\\p{L}++| ?\\p{N}++| ?P++|\\s++$|\\s+(?!\\S)|\\s``) has a space as its only prefix and no
``[\\r\\n]`` rules. Exact: the same pieces as ``regex.findall`` with the six patterns on ASCII text
(hypothesis, every ASCII character, and the benchmark corpora). Text whose non-ASCII characters
are letters, whitespace or punctuation (not numbers) is split over its bytes the same way
(:func:`letter_bitmaps`: each byte of such a character carries its class; the starts that rules
of one character put inside a whitespace or punctuation character of several bytes are corrected
after, ``_other_characters``); other text over its characters (:func:`class_bitmaps`). o200k's
and Tekken's letters in both case classes split as lower-case ones except right before an
upper-case letter, where such a text goes to the general pre-tokenizer. Complexity: O(n / 64) word operations plus O(1) per apostrophe and per non-ASCII
character.

numba API::

    ascii_bitmaps(data, start, end) -> (bitmaps uint64[(end - start) // 64 + 2, 8], all ASCII?)
    letter_bitmaps(data, start, end, stage1, stage2, pattern_id) -> (the same over bytes, REFUSED / LETTERS / OTHERS)
    piece_starts(data, start, n, bitmaps, pattern_id, cls, others) -> uint64[(n + 63) // 64 + 1] start bitmap
"""

from __future__ import annotations

import numpy as np

from ..kernels.bits import (MASK_APOS, MASK_BLANK, MASK_CRLF, MASK_DIGIT, MASK_LEAD, MASK_LOWER, MASK_NON_ASCII,
                            MASK_SLASH, MASK_SPACE, MASK_UPPER, ascii_masks, bit_planes, ctlz, cttz)
from ..kernels.jit import njit
from .pretokenize_compiled import CL100K, GPT2, O200K, QWEN2, TEKKEN, _contraction_tail
from .pretokenize_compiled import utf8_classes as _utf8_classes
from .unicode_table import F_APOS, F_CRLF, F_L, F_LO, F_N, F_SLASH, F_SPACE, F_UP, F_WS

#: the columns of a bitmap row (``space`` = ``\s``, ``blank`` = exactly ``' '``)
BITMAPS = ("upper", "lower", "digit", "space", "crlf", "slash", "blank", "apostrophe")
B_UPPER, B_LOWER, B_DIGIT, B_SPACE, B_CRLF, B_SLASH, B_BLANK, B_APOS = range(8)
_ROW = len(BITMAPS)
#: columns of a bitmap row
BITMAP_COLUMNS = _ROW
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ALL = ~np.uint64(0)
_TOP = np.uint64(63)
_NO_CLASSES = np.zeros(0, dtype=np.uint16)
_NO_OFFSETS = np.zeros(0, dtype=np.int64)


@njit(cache=True)
def ascii_bitmaps(data, start, end):
    """Class bitmaps of ``data[start:end]``: row ``k`` covers bytes ``start + 64k ..``, columns
    :data:`BITMAPS`; bits past the end are 0 and two zero rows follow. Also whether every byte is
    ASCII (if not, the bitmaps are not complete: use the general pre-tokenizer)."""
    bitmaps = np.empty((bitmap_rows(end - start), _ROW), dtype=np.uint64)
    return bitmaps, ascii_bitmaps_into(data, start, end, bitmaps)


@njit(cache=True, inline="always")
def bitmap_rows(n):
    """Rows of the bitmaps of ``n`` positions (64 a row, then two zero rows)."""
    return (n >> 6) + 2


@njit(cache=True, inline="always")
def _clear_rows(bitmaps, rows):
    for k in range(rows):
        for column in range(_ROW):
            bitmaps[k, column] = _ZERO


@njit(cache=True, _nrt=False)
def ascii_bitmaps_into(data, start, end, bitmaps):
    """:func:`ascii_bitmaps` written into ``bitmaps`` (at least ``bitmap_rows(end - start)`` rows, which
    it clears first); returns whether every byte is ASCII. Allocates nothing (a call on a word spent
    more on allocations and reference counts than on its bytes)."""
    return ascii_rows_into(data, start, end, bitmaps) < 0


@njit(cache=True, inline="always")
def ascii_rows_into(data, start, end, bitmaps):
    """:func:`ascii_bitmaps_into`, returning -1 when every byte is ASCII, else the first row that holds
    another (the rows before it are complete: ``letter_bitmaps_into`` may go on from there)."""
    _clear_rows(bitmaps, bitmap_rows(end - start))
    k = 0
    i = start
    while i + 64 <= end:
        masks = ascii_masks(data, i)
        if masks[MASK_NON_ASCII] != 0:
            return k
        _full_row(masks, bitmaps, k)
        i += 64
        k += 1
    non_ascii, _ = _partial_row(data, i, end, bitmaps, k)
    return -1 if non_ascii == 0 else k


@njit(cache=True, inline="always")
def _full_row(masks, bitmaps, k):
    """Row ``k`` of the bitmaps from the ``ascii_masks`` of its 64 bytes. ORed in: ``letter_bitmaps``
    has set the continuation bytes of a letter that began in the row before."""
    bitmaps[k, B_UPPER] |= masks[MASK_UPPER]
    bitmaps[k, B_LOWER] |= masks[MASK_LOWER]
    bitmaps[k, B_DIGIT] |= masks[MASK_DIGIT]
    bitmaps[k, B_SPACE] |= masks[MASK_SPACE]
    bitmaps[k, B_CRLF] |= masks[MASK_CRLF]
    bitmaps[k, B_SLASH] |= masks[MASK_SLASH]
    bitmaps[k, B_BLANK] |= masks[MASK_BLANK]
    bitmaps[k, B_APOS] |= masks[MASK_APOS]


@njit(cache=True, inline="always")
def _partial_row(data, i, end, bitmaps, k):
    """Row ``k`` of the bitmaps from the fewer than 64 bytes ``data[i:end]``, byte by byte; returns
    the masks of its bytes above 127 and of its lead bytes (``>= 0xC0``)."""
    non_ascii = leads = _ZERO
    for j in range(end - i):
        b = data[i + j]
        bit = _ONE << np.uint64(j)
        if b >= 128:
            non_ascii |= bit
            if b >= 192:
                leads |= bit
        elif 65 <= b <= 90:
            bitmaps[k, B_UPPER] |= bit
        elif 97 <= b <= 122:
            bitmaps[k, B_LOWER] |= bit
        elif 48 <= b <= 57:
            bitmaps[k, B_DIGIT] |= bit
        elif 9 <= b <= 13 or b == 32:
            bitmaps[k, B_SPACE] |= bit
            if b == 10 or b == 13:
                bitmaps[k, B_CRLF] |= bit
            if b == 32:
                bitmaps[k, B_BLANK] |= bit
        elif b == 47:
            bitmaps[k, B_SLASH] |= bit
        elif b == 39:
            bitmaps[k, B_APOS] |= bit
    return non_ascii, leads


@njit(cache=True, inline="always")
def _is_ascii_letter(b):
    return 97 <= (np.int64(b) | 32) <= 122


#: what :func:`letter_bitmaps_into` found: the text must be split over its characters; every
#: non-ASCII character is a letter; some are whitespace or punctuation (``piece_starts`` then moves
#: the starts that single-character rules put inside them)
REFUSED, LETTERS, OTHERS = 0, 1, 2


@njit(cache=True)
def letter_bitmaps(data, start, end, stage1, stage2, pattern_id):
    """(bitmaps, :data:`REFUSED`, :data:`LETTERS` or :data:`OTHERS`): :func:`letter_bitmaps_into` into new bitmaps."""
    bitmaps = np.empty((bitmap_rows(end - start), _ROW), dtype=np.uint64)
    return bitmaps, letter_bitmaps_into(data, start, end, stage1, stage2, pattern_id, bitmaps, 0)


@njit(cache=True, _nrt=False)
def letter_bitmaps_into(data, start, end, stage1, stage2, pattern_id, bitmaps, first_row):
    r"""The bitmaps of :func:`ascii_bitmaps` over the *bytes* of ``data[start:end]`` when no
    non-ASCII character in it is a number, none is the long s (``(?i:'s)`` folds it) and, for o200k
    and Tekken, every mark continues a letter run: each byte of a letter carries its case bit, each
    byte of a whitespace character the whitespace bit, and punctuation none. Returns
    :data:`LETTERS` when every non-ASCII character is a letter (or such a mark), :data:`OTHERS` when
    some are whitespace or punctuation, else :data:`REFUSED` (the caller splits over characters).

    For o200k and Tekken, ``\p{Lm}``, ``\p{Lo}`` and ``\p{M}`` are in both case classes of
    ``[UP]*[LO]+``; they split as lower-case letters do except where one of them comes right before
    an upper-case letter (there the regex backs off into the run: ``ーAー`` is ``ーAー``, not ``ー`` +
    ``Aー``), so such a text is refused. Japanese, Chinese, Hebrew, Thai and Arabic words are
    therefore split over their bytes too.

    Why bytes may stand for characters here: a multi-byte letter is a run of letter positions
    inside a letter run, and every rule of :func:`piece_starts` that looks at one neighbouring
    character (the optional prefix before a word, ``' '`` before punctuation, whitespace before a
    line feed, the apostrophe's letters) then meets an ASCII character, which is one byte. So
    European text with a few accented letters, or Cyrillic and Greek, skips decoding every
    character into class words and their byte offsets (``utf8_classes``). A whitespace or
    punctuation character of several bytes is a run of such positions too, which only the rules that
    take one character can tell apart from the character itself; :func:`piece_starts` corrects what
    they did at each one (``_other_characters``), so prose with curly quotes, dashes or no-break
    spaces splits over its bytes as well. Ill-formed UTF-8 is refused too (the general pre-tokenizer
    defines it). From row ``first_row`` on: the rows before it hold ASCII bytes and are done, the
    others are clear (``ascii_rows_into`` stopped there); 0 clears them all first."""
    if first_row == 0:
        _clear_rows(bitmaps, bitmap_rows(end - start))
    found = LETTERS
    spill = _ZERO  # bytes of a whitespace or punctuation character begun in the row before
    cased = pattern_id == O200K or pattern_id == TEKKEN
    letter_end = both_end = np.int64(-1)  # where the last non-ASCII letter (and the last in both classes) ends
    k = first_row
    i = start + (first_row << 6)
    while i < end:
        if i + 64 <= end:
            masks = ascii_masks(data, i)
            _full_row(masks, bitmaps, k)
            non_ascii = masks[MASK_NON_ASCII]
            leads = masks[MASK_LEAD]
        else:
            non_ascii, leads = _partial_row(data, i, end, bitmaps, k)
        # the letters' bits, gathered in registers and written once per row (a read-modify-write of
        # the row per letter waited on the one before)
        upper_here = upper_next = lower_here = lower_next = _ZERO
        space_here = space_next = other_here = other_next = _ZERO
        while leads != 0:  # the characters that start in this row (their bytes may run into the next)
            j = cttz(leads)
            leads &= leads - _ONE
            p = i + j
            # the well-formedness checks of ``utf8_class_words``, written out: one decoder shared by
            # both as an inlined function returning (code point, length) made both 4-5x slower
            b0 = np.int64(data[p])
            if 0xC2 <= b0 <= 0xDF:
                length = 2
                low, high = 0x80, 0xBF
                cp = b0 & 0x1F
            elif 0xE0 <= b0 <= 0xEF:
                length = 3
                low = 0xA0 if b0 == 0xE0 else 0x80
                high = 0x9F if b0 == 0xED else 0xBF
                cp = b0 & 0x0F
            elif 0xF0 <= b0 <= 0xF4:
                length = 4
                low = 0x90 if b0 == 0xF0 else 0x80
                high = 0x8F if b0 == 0xF4 else 0xBF
                cp = b0 & 0x07
            else:
                return REFUSED
            if p + length > end:
                return REFUSED
            b1 = np.int64(data[p + 1])
            if b1 < low or b1 > high:
                return REFUSED
            cp = (cp << 6) | (b1 & 0x3F)
            for q in range(p + 2, p + length):
                b = np.int64(data[q])
                if (b & 0xC0) != 0x80:
                    return REFUSED
                cp = (cp << 6) | (b & 0x3F)
            c = np.int64(stage2[(np.int64(stage1[cp >> 8]) << 8) | (cp & 0xFF)])
            # Lm, Lo and marks are in both of o200k's case classes: they split like lower-case letters
            # unless one comes right before an upper-case letter (``[UP]*[LO]+`` backs off there); a
            # mark is no letter, so it must continue a letter run (else it is punctuation)
            upper = cased and (c & F_UP) != 0
            other = False
            if upper and (c & F_LO) != 0:
                # a mark right after a non-ASCII letter passes without a branch on "is it a mark" (Thai
                # and Bengali alternate letters and marks unpredictably)
                if np.int64((c & F_L) == 0) & np.int64(p != letter_end):
                    if not (p > start and _is_ascii_letter(data[p - 1])):
                        return REFUSED
                if p + length < end and 65 <= data[p + length] <= 90:
                    return REFUSED
                upper = False
                both_end = p + length
            elif (c & F_L) == 0:  # whitespace or punctuation (a mark too but for o200k and Tekken)
                if (c & F_N) != 0:  # ``\p{N}{1,3}`` counts characters
                    return REFUSED
                other = True
            elif cp == 0x17F or (upper and p == both_end):
                return REFUSED
            span = (_ONE << np.uint64(length)) - _ONE
            here = span << np.uint64(j)
            after = (span >> np.uint64(64 - j)) if j + length > 64 else _ZERO
            if other:
                found = OTHERS
                other_here |= here
                other_next |= after
                if (c & F_WS) != 0:
                    space_here |= here
                    space_next |= after
                continue
            letter_end = p + length
            if upper:
                upper_here |= here
                upper_next |= after
            else:
                lower_here |= here
                lower_next |= after
        bitmaps[k, B_UPPER] |= upper_here
        bitmaps[k, B_LOWER] |= lower_here
        bitmaps[k + 1, B_UPPER] |= upper_next
        bitmaps[k + 1, B_LOWER] |= lower_next
        bitmaps[k, B_SPACE] |= space_here
        bitmaps[k + 1, B_SPACE] |= space_next
        # every byte of the row above 127 now belongs to a character that began at a lead byte (a
        # continuation byte with no lead before it is ill-formed)
        if (non_ascii & ~(bitmaps[k, B_UPPER] | bitmaps[k, B_LOWER] | other_here | spill)) != 0:
            return REFUSED
        spill = other_next
        i += 64
        k += 1
    return found


@njit(cache=True)
def class_bitmaps(cls, pattern_id):
    r"""The same bitmaps over the characters of a text given by their class words (``utf8_class_words``),
    and whether the bit-parallel pre-tokenizer can split it. For o200k and Tekken the characters in
    both case classes (``\p{Lm}``, ``\p{Lo}``, ``\p{M}``) count as lower-case letters, which is exact
    unless one of them comes right before an upper-case letter (``[UP]*[LO]+`` backs off into the run
    there) or a mark does not continue a letter run (it is punctuation then): such a text is refused
    (see ``letter_bitmaps``); the other patterns split every text. A character's byte code (one bit
    per column) is computed without a branch, and each row's 64 codes are transposed into its
    bitmaps at once."""
    n = cls.shape[0]
    rows = (n >> 6) + 2
    bitmaps = np.zeros((rows, _ROW), dtype=np.uint64)
    codes = np.zeros(64, dtype=np.uint8)
    cased = np.int64(pattern_id == O200K or pattern_id == TEKKEN)
    refused = _ZERO
    before_both = before_letter = _ZERO
    for k in range((n + 63) >> 6):
        base = k << 6
        count = min(64, n - base)
        both_word = mark_word = _ZERO
        for j in range(count):
            c = np.int64(cls[base + j])
            letter = np.int64((c & F_L) != 0)
            up = np.int64((c & F_UP) != 0)
            lo = np.int64((c & F_LO) != 0)
            both = cased & up & lo
            mark = both & (1 - letter)
            upper = letter & cased & up & (1 - lo)
            lower = (letter | mark) & (1 - upper)
            both_word |= np.uint64(both) << np.uint64(j)
            mark_word |= np.uint64(mark) << np.uint64(j)
            codes[j] = (upper | (lower << 1) | (np.int64((c & F_N) != 0) << 2) | (np.int64((c & F_WS) != 0) << 3)
                        | (np.int64((c & F_CRLF) != 0) << 4) | (np.int64((c & F_SLASH) != 0) << 5)
                        | (np.int64((c & F_SPACE) != 0) << 6) | (np.int64((c & F_APOS) != 0) << 7))
        for j in range(count, 64):
            codes[j] = 0
        planes = bit_planes(codes, 0)
        for column in range(_ROW):
            bitmaps[k, column] = planes[column]
        letter_word = bitmaps[k, B_UPPER] | bitmaps[k, B_LOWER]
        # refused: an upper-case letter right after one of both classes, or a mark after no letter
        # (letter_word holds the marks too: a mark may continue a mark)
        refused |= bitmaps[k, B_UPPER] & _prev(both_word, before_both)
        refused |= mark_word & ~_prev(letter_word, before_letter)
        before_both, before_letter = both_word, letter_word
    return bitmaps, refused == 0


# ----------------------------------------------------------------------------- word algebra
@njit(cache=True, inline="always")
def _prev(x, before):
    """Bit i set when position i - 1 is in ``x`` (``before``: the previous word of the same bitmap)."""
    return (x << _ONE) | (before >> _TOP)


@njit(cache=True, inline="always")
def _next(x, after):
    """Bit i set when position i + 1 is in ``x`` (``after``: the next word of the same bitmap)."""
    return (x >> _ONE) | (after << _TOP)


@njit(cache=True, inline="always")
def _fill_left(seeds, mask):
    """Positions of ``mask`` from which a run of ``mask`` reaches a seed at or after them (seeds lie
    in ``mask``): six doubling steps, no loop over the bits."""
    filled = seeds
    run = mask
    filled |= (filled >> np.uint64(1)) & run
    run &= run >> np.uint64(1)
    filled |= (filled >> np.uint64(2)) & run
    run &= run >> np.uint64(2)
    filled |= (filled >> np.uint64(4)) & run
    run &= run >> np.uint64(4)
    filled |= (filled >> np.uint64(8)) & run
    run &= run >> np.uint64(8)
    filled |= (filled >> np.uint64(16)) & run
    run &= run >> np.uint64(16)
    filled |= (filled >> np.uint64(32)) & run
    return filled


@njit(cache=True, inline="always")
def _valid(n, k):
    """The positions of word ``k`` inside a text of ``n`` characters."""
    left = n - (k << 6)
    if left >= 64:
        return _ALL
    if left <= 0:
        return _ZERO
    return (_ONE << np.uint64(left)) - _ONE


@njit(cache=True, _nrt=False)
def _final_whitespace(bitmaps, words, final):
    r"""Per word, into ``final`` (``words + 1`` words): the ``NR`` whitespace (``\s`` but not ``\r``/``\n``)
    from which the rest of its run holds no ``[\r\n]`` (where ``\s*[\r\n]+`` leaves a final piece). A
    backward pass: the run's end decides."""
    final[words] = _ZERO
    later = _ZERO  # the next word's result
    for k in range(words - 1, -1, -1):
        space = bitmaps[k, B_SPACE]
        plain = space & ~bitmaps[k, B_CRLF]
        seeds = plain & ~_next(space, bitmaps[k + 1, B_SPACE])  # the text goes on with no whitespace
        seeds |= plain & (later << _TOP)  # the run goes on into the next word and is final there
        later = _fill_left(seeds, plain)
        final[k] = later


@njit(cache=True)
def piece_starts(data, start, n, bitmaps, pattern_id, cls, others):
    """The bitmap of positions where a piece starts, for ``pattern_id``: one uint64 per 64 positions
    and a zero word after them; position 0 is always set (for n > 0). The positions are bytes of
    the text ``data[start:start+n]`` (``ascii_bitmaps`` or ``letter_bitmaps``; ``cls`` empty; ``others``
    when that found whitespace or punctuation of several bytes), or the ``n`` characters whose class
    words are ``cls`` (``class_bitmaps``)."""
    starts = np.empty(start_words(n), dtype=np.uint64)
    piece_starts_into(data, start, n, bitmaps, pattern_id, cls, starts, np.empty(start_words(n), dtype=np.uint64),
                      others)
    return starts


@njit(cache=True, inline="always")
def start_words(n):
    """Words of the start bitmap of ``n`` positions (and of its scratch), the zero word after them included."""
    return ((n + 63) >> 6) + 1


@njit(cache=True, _nrt=False)
def piece_starts_into(data, start, n, bitmaps, pattern_id, cls, starts, final, others):
    """:func:`piece_starts` written into ``starts`` (at least ``start_words(n)`` words), with ``final`` (as
    many) as scratch. Allocates nothing."""
    words = (n + 63) >> 6
    for k in range(words + 1):
        starts[k] = _ZERO
    if n == 0:
        return
    if pattern_id == GPT2:
        _starts_gpt2(bitmaps, n, words, starts)
    else:
        _final_whitespace(bitmaps, words, final)
        _starts_main(bitmaps, n, words, final, pattern_id, starts)
        if pattern_id == CL100K:
            _whitespace_to_end(bitmaps, n, starts)
    _contractions(data, start, n, bitmaps, pattern_id, starts, cls)
    if others:
        _other_characters(data, start, n, bitmaps, pattern_id, starts)


@njit(cache=True, _nrt=False)
def _other_characters(data, start, n, bitmaps, pattern_id, starts):
    r"""Over bytes, a whitespace or punctuation character of several bytes is a run of as many
    positions of its class, and two rules that take one character then differ from ``regex``:

    * whitespace: ``\s+(?!\S)`` leaves the run's last character to the next piece, and a word takes
      the character before it as a prefix; both put a start at the character's last byte, which
      belongs at its first (the start moves there; if the character began a piece already, the two
      are one);
    * punctuation (not in gpt2, whose only prefix is ``' '``): a word takes the punctuation character
      before it as its prefix when that character starts a piece, but over bytes that character is a
      run of several, so its last byte never starts one: when a piece starts at the character and a
      letter follows it, the word's own start goes.

    Every other rule sees a run of one class either way. O(1) per such character, found from the lead
    bytes that no letter covers."""
    prefix = pattern_id != GPT2
    size = data.shape[0]
    for k in range((n + 63) >> 6):
        i = start + (k << 6)
        if i + 64 <= size:
            leads = ascii_masks(data, i)[MASK_LEAD]
        else:
            leads = _ZERO
            for j in range(size - i):
                if data[i + j] >= 192:
                    leads |= _ONE << np.uint64(j)
        leads &= _valid(n, k) & ~(bitmaps[k, B_UPPER] | bitmaps[k, B_LOWER])
        while leads != 0:
            a = (k << 6) + cttz(leads)
            leads &= leads - _ONE
            lead = data[start + a]
            b = a + (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4)
            if _bit(bitmaps[:, B_SPACE], a) != 0:
                moved = False
                for q in range(a + 1, b):
                    if _bit(starts, q) != 0:
                        _clear(starts, q)
                        moved = True
                if moved:
                    _set(starts, a)
            elif prefix and b < n and _bit(starts, a) != 0 \
                    and (_bit(bitmaps[:, B_UPPER], b) | _bit(bitmaps[:, B_LOWER], b)) != 0:
                _clear(starts, b)


@njit(cache=True, _nrt=False)
def _starts_main(bitmaps, n, words, final, pattern_id, starts):
    """o200k, cl100k, llama3, qwen2 (see the module docstring)."""
    o200k = pattern_id == O200K or pattern_id == TEKKEN  # cased words, [\r\n/]* after punctuation
    groups = 1 if pattern_id == QWEN2 or pattern_id == TEKKEN else 3
    before_letter = before_lower = before_other = before_digit = _ZERO
    before_open = before_crlf = before_blank = before_prefix = _ZERO
    absorbing = _ZERO  # 1: the absorbed run of the previous word goes on at bit 0
    pending = -1  # where the next group of digits starts in this word, if a digit run goes on
    for k in range(words):
        upper = bitmaps[k, B_UPPER]
        lower = bitmaps[k, B_LOWER]
        digit = bitmaps[k, B_DIGIT]
        space = bitmaps[k, B_SPACE]
        crlf = bitmaps[k, B_CRLF]
        blank = bitmaps[k, B_BLANK]
        valid = _valid(n, k)
        letter = upper | lower
        other = valid & ~(letter | digit | space)
        plain = space & ~crlf
        # a punctuation run absorbs the [\r\n/]* ([\r\n]*) run after it when that starts with \r or \n
        tail = (crlf | bitmaps[k, B_SLASH]) if o200k else crlf
        seeds = (crlf & _prev(other, before_other)) | absorbing
        total = tail + seeds
        absorbing = _ONE if total < tail else _ZERO
        absorbed = ((total ^ tail) & tail) | (seeds & tail)
        after_absorbed = (total ^ tail) & ~tail & valid
        # punctuation pieces: where a run starts or an absorbed run ends, unless ' ' comes first
        punct = ((other & ~_prev(other, before_other) & ~absorbed) | (after_absorbed & other)) \
            & ~_prev(blank, before_blank)
        # a letter run takes the character before it as a prefix when that starts a piece
        next_letter = (bitmaps[k + 1, B_UPPER] | bitmaps[k + 1, B_LOWER])
        prefix = (plain | punct) & _next(letter, next_letter)
        words_ = letter & ~_prev(letter, before_letter)
        if o200k:
            words_ |= upper & _prev(lower, before_lower)
        words_ = (words_ & ~_prev(prefix, before_prefix)) | prefix
        # digits in groups of three (qwen2: one) from the start of their run
        first_digit = digit & ~_prev(digit, before_digit)
        group = first_digit
        if pending >= 0 and (digit & _ONE) != 0:
            need = (_ONE << np.uint64(pending + 1)) - _ONE
            if (digit & need) == need:
                group |= _ONE << np.uint64(pending)
        if groups == 1:
            group = digit
        else:
            full = digit & (digit << np.uint64(1)) & (digit << np.uint64(2))
            more = group
            while more != 0:
                more = (more << np.uint64(3)) & full
                group |= more
            pending = -1
            if (digit >> _TOP) != 0:
                pending = (63 - ctlz(group) + 2) % 3
        # whitespace: the first character not absorbed, the one after the last \r\n when only
        # NR follows in the run, and the last NR character when the text goes on
        open_space = space & ~absorbed
        next_valid = _valid(n, k + 1) & _ONE
        after_run = _next(valid & ~space, next_valid & ~bitmaps[k + 1, B_SPACE])
        spaces = (open_space & ~_prev(open_space, before_open)) | (plain & _prev(crlf, before_crlf) & final[k]) \
            | (plain & after_run)
        starts[k] = (words_ | group | punct | spaces) & valid
        before_letter, before_lower, before_other, before_digit = letter, lower, other, digit
        before_open, before_crlf, before_blank, before_prefix = open_space, crlf, blank, prefix


@njit(cache=True, _nrt=False)
def _starts_gpt2(bitmaps, n, words, starts):
    r"""gpt2: `` ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s`` (contractions apart)."""
    before_letter = before_digit = before_other = before_space = before_blank = _ZERO
    for k in range(words):
        letter = bitmaps[k, B_UPPER] | bitmaps[k, B_LOWER]
        digit = bitmaps[k, B_DIGIT]
        space = bitmaps[k, B_SPACE]
        blank = bitmaps[k, B_BLANK]
        valid = _valid(n, k)
        other = valid & ~(letter | digit | space)
        runs = (letter & ~_prev(letter, before_letter)) | (digit & ~_prev(digit, before_digit)) \
            | (other & ~_prev(other, before_other))
        next_valid = _valid(n, k + 1) & _ONE
        after_run = _next(valid & ~space, next_valid & ~bitmaps[k + 1, B_SPACE])
        spaces = (space & ~_prev(space, before_space)) | (space & after_run)
        starts[k] = ((runs & ~_prev(blank, before_blank)) | spaces) & valid
        before_letter, before_digit, before_other, before_space, before_blank = letter, digit, other, space, blank


@njit(cache=True, inline="always")
def _bit(words, p):
    return (words[p >> 6] >> np.uint64(p & 63)) & _ONE


@njit(cache=True, inline="always")
def _set(words, p):
    words[p >> 6] |= _ONE << np.uint64(p & 63)


@njit(cache=True, inline="always")
def _clear(words, p):
    words[p >> 6] &= ~(_ONE << np.uint64(p & 63))


@njit(cache=True, _nrt=False)
def _whitespace_to_end(bitmaps, n, starts):
    r"""cl100k's ``\s++$``: whitespace that runs to the end of the text is one piece from its first
    start (the characters a punctuation run absorbed have none)."""
    p = n - 1
    while p >= 0 and _bit(bitmaps[:, B_SPACE], p) != 0:
        p -= 1
    first = -1
    for q in range(p + 1, n):
        if _bit(starts, q) != 0:
            if first < 0:
                first = q
            else:
                _clear(starts, q)


@njit(cache=True, inline="always")
def _lower(b):
    return b | 32 if 65 <= b <= 90 else b


@njit(cache=True, inline="always")
def _contraction_end(data, start, n, i, exact):
    """After an apostrophe at ``i - 1``: the end of ``[sdmt]|ll|ve|re`` (``exact``: lower case only,
    else either case) at ``i``, or -1."""
    if i >= n:
        return -1
    b1 = data[start + i]
    if not exact:
        b1 = _lower(b1)
    if b1 == 115 or b1 == 100 or b1 == 109 or b1 == 116:  # s d m t
        return i + 1
    if i + 1 < n:
        b2 = data[start + i + 1]
        if not exact:
            b2 = _lower(b2)
        if (b1 == 108 and b2 == 108) or ((b1 == 118 or b1 == 114) and b2 == 101):  # ll ve re
            return i + 2
    return -1


@njit(cache=True, _nrt=False)
def _contractions(data, start, n, bitmaps, pattern_id, starts, cls):
    """Apply the contractions, apostrophe by apostrophe from the left. o200k: after a word's
    letters ``(?i:'s|'t|'re|'ve|'m|'ll|'d)`` belongs to the word; the others: where an apostrophe
    starts a piece, ``'`` and the letters are a piece of their own. Either way the piece after
    starts right behind them."""
    if pattern_id == TEKKEN:  # no contractions: an apostrophe is punctuation (or a word's prefix)
        return
    o200k = pattern_id == O200K
    exact = pattern_id == GPT2
    last_end = -1
    for k in range((n + 63) >> 6):
        apostrophes = bitmaps[k, B_APOS]
        while apostrophes != 0:
            j = (k << 6) + cttz(apostrophes)
            apostrophes &= apostrophes - _ONE
            if o200k:
                if j == 0 or j == last_end:
                    continue
                if (_bit(bitmaps[:, B_UPPER], j - 1) | _bit(bitmaps[:, B_LOWER], j - 1)) == 0:
                    continue
            elif _bit(starts, j) == 0:
                continue
            if cls.shape[0] > 0:  # characters: the class words know which letters (?i:...) folds
                end = _contraction_tail(cls, n, j + 1, exact)
            else:
                end = _contraction_end(data, start, n, j + 1, exact)
            if end < 0:
                continue
            for q in range(j if o200k else j + 1, end):
                _clear(starts, q)
            if end < n:
                _set(starts, end)
            last_end = end


@njit(cache=True)
def piece_ends_ascii(data, pattern_id):
    """All piece ends (byte offsets) of the ASCII text ``data``, or an empty array if it is not ASCII."""
    n = data.shape[0]
    bitmaps, ascii_only = ascii_bitmaps(data, 0, n)
    if not ascii_only:
        return np.zeros(0, dtype=np.int64)
    return _ends(piece_starts(data, 0, n, bitmaps, pattern_id, _NO_CLASSES, False), n, _NO_OFFSETS)


@njit(cache=True, inline="always")
def _ends(starts, n, offsets):
    """The piece ends a start bitmap over ``n`` positions gives: byte offsets (``offsets`` of the
    characters, or the positions themselves when it is empty)."""
    ends = np.empty(n + 1, dtype=np.int64)
    by_char = offsets.shape[0] > 0
    m = 0
    for k in range(starts.shape[0]):
        word = starts[k]
        if k == 0:
            word &= ~_ONE
        while word != 0:
            position = (k << 6) + cttz(word)
            ends[m] = offsets[position] if by_char else position
            m += 1
            word &= word - _ONE
    if n > 0:
        ends[m] = offsets[n] if by_char else n
        m += 1
    return ends[:m].copy()


@njit(cache=True)
def piece_ends_chars(data, pattern_id, stage1, stage2):
    """All piece ends (byte offsets) of the UTF-8 text ``data`` split over its characters' class words
    (``class_bitmaps``), or an empty array when the bit-parallel pre-tokenizer cannot split it."""
    cls, offsets = _utf8_classes(data, stage1, stage2)
    n = cls.shape[0]
    bitmaps, easy = class_bitmaps(cls, pattern_id)
    if not easy:
        return np.zeros(0, dtype=np.int64)
    return _ends(piece_starts(data, 0, n, bitmaps, pattern_id, cls, False), n, offsets)


@njit(cache=True)
def piece_ends_letters(data, pattern_id, stage1, stage2):
    """All piece ends (byte offsets) of the UTF-8 text ``data`` split over its bytes with
    ``letter_bitmaps``, or an empty array when that refuses the text."""
    n = data.shape[0]
    bitmaps, found = letter_bitmaps(data, 0, n, stage1, stage2, pattern_id)
    if found == REFUSED:
        return np.zeros(0, dtype=np.int64)
    return _ends(piece_starts(data, 0, n, bitmaps, pattern_id, _NO_CLASSES, found == OTHERS), n, _NO_OFFSETS)
