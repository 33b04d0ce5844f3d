"""One HTML table builder for every view: Wengert tables, comparisons, report pages.

Every cell is text, escaped here; a row may carry a CSS class (a report marks the cells
that did not finish).

>>> html_table(["x", "y"], [["1", "<2>"]])
'<table><thead><tr><th>x</th><th>y</th></tr></thead><tbody><tr><td>1</td><td>&lt;2&gt;</td></tr></tbody></table>'
"""

from __future__ import annotations

import html
from collections.abc import Sequence


def html_table(head: Sequence[str], rows: Sequence[Sequence[str]],
               classes: Sequence[str] | None = None) -> str:
    """``<table>`` with header ``head`` and ``rows`` of cell texts (each escaped);
    ``classes[i]``, when given and not empty, is row i's CSS class."""
    esc = html.escape
    cells = "".join(f"<th>{esc(c)}</th>" for c in head)
    body = "".join(
        (f"<tr class=\"{esc(classes[i])}\">" if classes and classes[i] else "<tr>")
        + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
        for i, row in enumerate(rows))
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def swatches(shades: Sequence[tuple[object, str, str]]) -> list[str]:
    """A legend's colour samples: each ``(bound, colour, words)`` of ``shades`` as an HTML
    span of its colour around its (escaped) words.

    >>> swatches([(1.0, "#fff", "< 1")])
    ['<span style="background:#fff;padding:0 0.4em;white-space:nowrap">&lt; 1</span>']
    """
    return [f'<span style="background:{colour};padding:0 0.4em;white-space:nowrap">'
            f"{html.escape(words)}</span>" for _, colour, words in shades]
