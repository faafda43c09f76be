"""Small HTML helpers: escaping, number formats, tables, the page shell (inline CSS, no scripts).

The page needs nothing from the network: styles are inline and images are PNG
files next to it, referenced by relative path. O(cells) per table.
"""

from __future__ import annotations

import html
import math
from typing import Iterable, Sequence

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330;
       max-width: 1120px; margin: 0 auto; padding: 18px 26px 60px; background: #fff; }
h1 { font-size: 24px; margin: 0 0 2px; }
h2 { font-size: 18px; margin: 30px 0 8px; padding-top: 6px; border-top: 1px solid #dde2ea; }
h3 { font-size: 15px; margin: 16px 0 6px; }
p.lede { color: #566074; margin: 0 0 10px; }
nav { font-size: 13px; margin: 6px 0 10px; }
nav a { margin-right: 12px; color: #2457c5; text-decoration: none; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(250px, 1fr)); gap: 10px; }
.card { border: 1px solid #dde2ea; border-radius: 6px; padding: 8px 12px; background: #f8f9fb; }
.card b { display: block; font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: #6b7485; }
.verdict { border-left: 4px solid #9aa3b5; padding: 4px 12px; margin: 8px 0; background: #fbfcfd; }
.verdict.good { border-color: #2e9d57; } .verdict.warn { border-color: #d99a16; }
.verdict.bad { border-color: #d23d3d; background: #fff6f6; } .verdict.ref { border-color: #5b6bd6; }
.verdict .name { font-weight: 600; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { padding: 3px 9px; border-bottom: 1px solid #e5e8ee; text-align: right; white-space: nowrap; }
th { background: #f1f3f7; font-weight: 600; }
td.text, th.text { text-align: left; white-space: normal; }
td.good { color: #1f7a41; } td.bad { color: #c22f2f; font-weight: 600; } td.muted { color: #8a93a5; }
tr.peer td:first-child { font-style: italic; }
img { max-width: 100%; border: 1px solid #eceff4; margin: 4px 0; }
.note { color: #6b7485; font-size: 13px; margin: 4px 0; }
.mono, code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
details { margin: 6px 0; }
.scroll { overflow-x: auto; }
table.compact th { white-space: normal; vertical-align: bottom; max-width: 92px; font-size: 12px; }
table.compact td { text-align: center; }
table.compact td.text { text-align: left; }
.muted { color: #8a93a5; }
th.group { text-align: center; border-bottom: 1px solid #c9cfda; }
td.sym { font-size: 15px; }
"""


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def seconds(value) -> str:
    """1.5e-05 -> '15.0 µs'."""
    if missing(value):
        return "–"
    value = float(value)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def number(value, digits: int = 3) -> str:
    if missing(value):
        return "–"
    value = float(value)
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def ratio(value) -> str:
    return "–" if missing(value) else f"{float(value):.2g}×" if float(value) < 10 else f"{float(value):.0f}×"


def percent(value, digits: int = 1) -> str:
    if missing(value):
        return "–"
    value = 100 * float(value)
    if value == 100 or value == 0:
        return f"{value:.0f}%"
    return f"{value:.{digits}f}%"


def size(value) -> str:
    if missing(value):
        return "–"
    value = float(value)
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


Cell = str | tuple[str, str]  # text, or (text, css class); text is already escaped HTML


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], *, text_columns: int = 1,
          row_classes: Sequence[str] | None = None, css: str = "", header_html: bool = False,
          drop_empty_columns: bool = False) -> str:
    """An HTML table; the first ``text_columns`` columns are left-aligned text. Headers are escaped
    unless ``header_html``. ``drop_empty_columns`` leaves out columns (after the text ones) whose
    every cell is empty or a dash: a column that says nothing on this page."""
    if drop_empty_columns:
        rows = [list(r) for r in rows]

        def said(cell) -> bool:
            text = cell[0] if isinstance(cell, tuple) else cell
            return str(text).strip() not in ("", "–")

        keep = [i for i in range(len(headers)) if i < text_columns or any(i < len(r) and said(r[i]) for r in rows)]
        headers = [headers[i] for i in keep]
        rows = [[r[i] for i in keep if i < len(r)] for r in rows]
    out = [f'<div class="scroll"><table class="{css}"><thead><tr>' if css else '<div class="scroll"><table><thead><tr>']
    for i, h in enumerate(headers):
        h = h if header_html else esc(h)
        out.append(f'<th class="text">{h}</th>' if i < text_columns else f"<th>{h}</th>")
    out.append("</tr></thead><tbody>")
    for r, row in enumerate(rows):
        cls = row_classes[r] if row_classes and r < len(row_classes) and row_classes[r] else ""
        out.append(f'<tr class="{cls}">' if cls else "<tr>")
        for i, cell in enumerate(row):
            text, extra = cell if isinstance(cell, tuple) else (cell, "")
            classes = " ".join(c for c in ("text" if i < text_columns else "", extra) if c)
            out.append(f'<td class="{classes}">{text}</td>' if classes else f"<td>{text}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def image(name: str | None, alt: str) -> str:
    if not name:
        return f'<p class="note">{esc(alt)}: no data to draw.</p>'
    return f'<img src="{esc(name)}" alt="{esc(alt)}">'


def notes(messages: Iterable[str]) -> str:
    return "".join(f'<p class="note">{esc(m)}</p>' for m in messages if m)


def page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )
