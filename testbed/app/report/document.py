"""A tiny document model, rendered twice: to Markdown and to self-contained HTML.

Building the report once as blocks keeps ``report.md`` and ``report.html``
identical in content; each renderer only decides the syntax.
"""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Callout:
    """A warning the reader must not miss (e.g. "partial run")."""

    text: str


@dataclass(frozen=True)
class Bullets:
    items: list[str]


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]

    def numeric_columns(self) -> list[bool]:
        """Columns whose every cell is a number (possibly with a unit): right-aligned."""
        return [
            all(_NUMERIC_CELL.match(row[i]) for row in self.rows if i < len(row))
            for i in range(len(self.headers))
        ]


_NUMERIC_CELL = re.compile(r"^(-|n/a|[-+]?\d[\d.,]*(e[-+]?\d+)?\s?(%|x|[KMG]iB|B)?( / .*)?|)$")


@dataclass(frozen=True)
class Image:
    """A plot: PNG and SVG files next to report.md, the PNG a data URI inside report.html
    (which links the SVG)."""

    name: str
    title: str
    png: bytes
    svg: bytes | None = None

    @property
    def relative_path(self) -> str:
        return f"plots/{self.name}.png"

    @property
    def svg_path(self) -> str:
        return f"plots/{self.name}.svg"


Block = Heading | Paragraph | Callout | Bullets | Table | Image


# --------------------------------------------------------------------- numbers


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def money(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def number(value: float | None) -> str:
    """Integers and large values without decimals, small values to 4 significant digits."""
    if value is None or not math.isfinite(value):
        return "-"
    if float(value).is_integer() or abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.4g}"


def size(value: float | None) -> str:
    """Bytes in IEC units, with the exact byte count for small values."""
    if value is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{int(value)} B"


# --------------------------------------------------------------------- Markdown


def to_markdown(blocks: list[Block]) -> str:
    return "\n\n".join(_markdown_block(block) for block in blocks) + "\n"


def _markdown_block(block: Block) -> str:
    match block:
        case Heading(text, level):
            return f"{'#' * level} {text}"
        case Paragraph(text):
            return text
        case Callout(text):
            return f"> **{text}**"
        case Bullets(items):
            return "\n".join(f"- {item}" for item in items)
        case Table(headers, rows):
            return markdown_table(headers, rows, block.numeric_columns())
        case Image(title=title, svg=svg):
            vector = f" ([SVG]({block.svg_path}))" if svg is not None else ""
            return f"![{title}]({block.relative_path}){vector}"
    raise TypeError(f"unknown block {block!r}")


def markdown_table(headers: list[str], rows: list[list[str]], numeric: list[bool] | None = None) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    numeric = numeric or Table(headers, rows).numeric_columns()
    align = ["---:" if right else "---" for right in numeric]
    return "\n".join([line(headers), "| " + " | ".join(align) + " |", *map(line, rows)])


# --------------------------------------------------------------------- HTML

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { border-bottom: 2px solid #ccc; padding-bottom: .3rem; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
.table { overflow: auto; max-width: 100%; margin: .8rem 0; }
.table.tall { max-height: 36rem; }
.table.tall th { position: sticky; top: 0; }
table { border-collapse: collapse; font-size: .92rem; }
th, td { border: 1px solid #ccc; padding: .25rem .6rem; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: .9rem; }
.callout { background: #fff4d6; border-left: 4px solid #e0a800; padding: .6rem 1rem; }
"""


_NUM = ' class="num"'
TALL_ROWS = 40
"""Tables longer than this scroll inside a box of their own (a 1,000-node table stays usable)."""


def to_html(blocks: list[Block], title: str) -> str:
    body = "\n".join(_html_block(block) for block in blocks)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def _html_block(block: Block) -> str:
    match block:
        case Heading(text, level):
            return f"<h{level}>{html.escape(text)}</h{level}>"
        case Paragraph(text):
            return f"<p>{html.escape(text)}</p>"
        case Callout(text):
            return f'<p class="callout"><strong>{html.escape(text)}</strong></p>'
        case Bullets(items):
            return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"
        case Table(headers, rows):
            numeric = block.numeric_columns()
            head = "".join(
                f"<th{_NUM if right else ''}>{html.escape(h)}</th>"
                for h, right in zip(headers, numeric, strict=True)
            )
            body = "".join(
                "<tr>"
                + "".join(
                    f"<td{_NUM if right else ''}>{html.escape(c)}</td>"
                    for c, right in zip(row, numeric, strict=False)
                )
                + "</tr>"
                for row in rows
            )
            tall = " tall" if len(rows) > TALL_ROWS else ""
            table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            return f'<div class="table{tall}">{table}</div>'
        case Image(name, title, png, svg):
            data = base64.b64encode(png).decode("ascii")
            vector = f' (<a href="{block.svg_path}">SVG</a>)' if svg is not None else ""
            return (
                f'<figure id="{html.escape(name)}"><img src="data:image/png;base64,{data}" '
                f'alt="{html.escape(title)}"><figcaption>{html.escape(title)}{vector}</figcaption></figure>'
            )
    raise TypeError(f"unknown block {block!r}")
