"""Formatting records for people (a table) and for scripts (JSON, CSV, markdown)."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import click

FORMATS = ("table", "json", "csv", "markdown")
format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
                             show_default=True, help="table for people; json/csv/markdown for "
                             "scripts and documents")


def writable(ctx: click.Context | None, param: click.Parameter | None, path: str | None
             ) -> str | None:
    """A click callback: fail before measuring if ``path`` cannot be written.

    >>> writable(None, None, "/nonexistent/a/b.txt")
    Traceback (most recent call last):
    ...
    click.exceptions.BadParameter: cannot write /nonexistent/a/b.txt: no such folder /nonexistent/a
    """
    if not path:
        return path
    folder = os.path.dirname(os.path.abspath(path))
    why = ("no such folder " + folder if not os.path.isdir(folder) else
           "it is a folder" if os.path.isdir(path) else
           "permission denied" if not os.access(path if os.path.exists(path) else folder,
                                                 os.W_OK) else _tried(path))
    if why:
        raise click.BadParameter(f"cannot write {path}: {why}", ctx=ctx, param=param)
    return path


def _tried(path: str) -> str | None:
    """Why opening ``path`` to append fails (a file made for the try is removed again);
    None if it opens: some folders (/proc) pass os.access yet refuse every new file."""
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()
    if not existed:
        os.remove(path)
    return None


def writable_folder(ctx: click.Context | None, param: click.Parameter | None,
                    path: str | None) -> str | None:
    """A click callback: fail before measuring if files cannot be made in the folder
    ``path`` (made later if it does not exist yet).

    >>> writable_folder(None, None, "/proc/rep")
    Traceback (most recent call last):
    ...
    click.exceptions.BadParameter: cannot write into /proc/rep: no such file or directory
    """
    if not path:
        return path
    nearest = os.path.abspath(path)
    while not os.path.exists(nearest):
        nearest = os.path.dirname(nearest)
    why = None if os.path.isdir(nearest) else f"{nearest} is a file"
    if why is None:
        try:
            os.rmdir(tempfile.mkdtemp(dir=nearest))
        except OSError as exc:
            why = (exc.strerror or str(exc)).lower()
    if why:
        raise click.BadParameter(f"cannot write into {path}: {why}", ctx=ctx, param=param)
    return path


output_option = click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
                             callback=writable,
                             help="write to this file instead of standard output")
quiet_option = click.option("-q", "--quiet", is_flag=True, help="no progress display")
cluster_option = click.option(
    "--cluster", metavar="local:N|tcp://HOST:PORT",
    help="run the cells as tasks on a Dask cluster: N worker processes on this machine (N at "
    "most the cores), or a running scheduler; needs pip install diffkit[cluster]")


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


STATUS_STYLES = {"ok": "green", "n/a": "dim", "domain": "yellow", "nonfinite": "yellow",
                 "kink": "yellow", "inaccurate": "red", "timeout": "red", "oom": "red",
                 "error": "red"}


def width() -> int:
    """The terminal's width (``COLUMNS`` first); 100 when there is no terminal."""
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def color(output: str | None = None) -> bool:
    """Colour only on a terminal, never into a file or with ``NO_COLOR`` set."""
    return output is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def render(records: list[dict[str, Any]], fmt: str, columns: Sequence[str] | None = None,
           table: list[list[str]] | None = None, title: str | None = None,
           colored: bool = False, wrap: Sequence[str] = (), optional: Sequence[str] = ()
           ) -> str:
    """``records`` in ``fmt``; ``table`` (header + display rows) overrides the table view.

    The table fits the terminal's width: columns named in ``wrap`` (e.g. a description)
    are cut with an ellipsis instead of wrapping over many lines, and the columns named in
    ``optional`` are left out, the last first, until it fits (a note says which); a
    ``status`` column is coloured when ``colored``.
    """
    columns = list(columns or (records[0].keys() if records else []))
    if fmt == "json":
        return json.dumps(records, indent=2, default=str)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(columns)
        writer.writerows([[_cell(r.get(c)) for c in columns] for r in records])
        return buf.getvalue().rstrip("\r\n")  # emit() ends the last line
    if table is None:  # people need no all-empty columns
        columns = [c for c in columns if any(r.get(c) not in (None, "") for r in records)]
    rows = table or [columns] + [[_cell(r.get(c)) for c in columns] for r in records]
    if fmt == "markdown":
        esc = [[c.replace("|", "\\|") for c in row] for row in rows]
        lines = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc[1:]])
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=io.StringIO(), width=width(), highlight=False,
                      force_terminal=colored, color_system="standard" if colored else None)
    status = rows[0].index("status") if "status" in rows[0] else None
    longest = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    keep = list(range(len(rows[0])))
    while True:  # leave out optional columns, the last named first, until the table fits
        need = sum(min(longest[i], 30) if rows[0][i] in wrap else longest[i] for i in keep)
        spare = [i for i in keep if rows[0][i] in optional]
        if not spare or need + 2 * (len(keep) - 1) <= console.width:
            break
        keep.remove(max(spare, key=lambda i: optional.index(rows[0][i])))
    t = Table(title=escape(title) if title else None, box=box.SIMPLE_HEAD, pad_edge=False,
              show_edge=False, collapse_padding=True, title_justify="left")
    fixed = {i: min(longest[i], 24) for i in keep if rows[0][i] not in wrap}
    room = max(console.width - sum(fixed.values()) - 2 * (len(keep) - 1), 10)
    cuts = max(len(keep) - len(fixed), 1)
    for i in keep:  # cut columns share the room the others leave
        cut = i not in fixed
        t.add_column(escape(rows[0][i]), no_wrap=cut, overflow="ellipsis" if cut else "fold",
                     min_width=fixed.get(i), max_width=room // cuts if cut else None)
    fits = sum(longest[i] for i in keep) + 2 * (len(keep) - 1) <= console.width
    for r in rows[1:]:
        cells = [escape(r[i] if fits or i not in fixed else _breakable(r[i], fixed[i]))
                 for i in keep]  # "[jax]" is text, not rich markup
        if colored and status in keep and r[status] in STATUS_STYLES:
            j = keep.index(status)
            cells[j] = f"[{STATUS_STYLES[r[status]]}]{cells[j]}[/]"
        t.add_row(*cells)
    console.print(t)
    hidden = [c for i, c in enumerate(rows[0]) if i not in keep]
    if hidden:
        console.print(escape(f"(not shown at {console.width} columns: {', '.join(hidden)}; "
                             "widen the terminal or use --format json)"))
    text = console.file.getvalue().rstrip("\n")
    return "\n".join(line.rstrip() for line in text.splitlines())


def _breakable(text: str, limit: int) -> str:
    """``text`` with each word longer than ``limit`` broken after a ``.``, ``,``, ``(`` or
    ``[`` (a line break), so a narrow column wraps code between names, never inside one.

    >>> _breakable("optim.SGD(model.parameters(), lr)", 24)
    'optim.SGD(model.\\nparameters(), lr)'
    """
    import re

    def split(word: str) -> str:
        pieces, line = [], ""
        for part in re.findall(r"[^.,(\[]*[.,(\[]?", word):
            if line and len(line) + len(part) > limit:
                pieces.append(line)
                line = ""
            line += part
        return "\n".join(pieces + [line])

    return " ".join(split(w) if len(w) > limit else w for w in text.split(" "))


def wrapped(lines: Sequence[str]) -> str:
    """Notes under a table, wrapped to the terminal's width between words, never inside a
    number or a name; a bullet (``  - ...``) continues under its text, other lines
    indented by two.

    >>> import os; os.environ["COLUMNS"] = "24"
    >>> print(wrapped(["  - error 1.2e-16 for 183840 operations"]))
      - error 1.2e-16 for
        183840 operations
    """
    import textwrap

    def indent(line: str) -> str:
        lead = len(line) - len(line.lstrip(" -"))
        return " " * lead if lead else "  "

    return "\n".join(textwrap.fill(line, width(), subsequent_indent=indent(line),
                                    break_long_words=False, break_on_hyphens=False)
                      for line in lines)


def emit(text: str, output: str | None) -> None:
    if output:
        with open(output, "w") as fh:
            fh.write(text + "\n")
    else:
        click.echo(text)


class Progress:
    """A progress bar on stderr when it is a terminal (and not --quiet); else silent.
    ``total=None`` (a cluster run, whose labels carry their own counts) pulses."""

    def __init__(self, total: int | None, quiet: bool) -> None:
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from rich.progress import Progress as Bar

            from rich.console import Console

            self.bar = Bar(transient=True, console=Console(stderr=True))
            self.task = self.bar.add_task("measuring", total=total)
            self.bar.start()

    def step(self, what: str) -> None:
        if self.bar:
            self.bar.update(self.task, description=what, advance=1)

    def close(self) -> None:
        if self.bar:
            self.bar.stop()
