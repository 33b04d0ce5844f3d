"""Formatting records for people (a table) and for scripts (JSON, CSV, markdown)."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from typing import Any

import click

FORMATS = ("table", "json", "csv", "markdown")
format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
                             show_default=True, help="table for people; json/csv/markdown for "
                             "scripts and documents")
output_option = click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
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


def render(records: list[dict[str, Any]], fmt: str, columns: Sequence[str] | None = None,
           table: list[list[str]] | None = None, title: str | None = None) -> str:
    """``records`` in ``fmt``; ``table`` (header + display rows) overrides the table view."""
    columns = list(columns or (records[0].keys() if records else []))
    if fmt == "json":
        return json.dumps(records, indent=2, default=str)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(columns)
        writer.writerows([[_cell(r.get(c)) for c in columns] for r in records])
        return buf.getvalue()
    if table is None:  # people need no all-empty columns
        columns = [c for c in columns if any(r.get(c) not in (None, "") for r in records)]
    rows = table or [columns] + [[_cell(r.get(c)) for c in columns] for r in records]
    if fmt == "markdown":
        esc = [[c.replace("|", "\\|") for c in row] for row in rows]
        lines = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc[1:]])
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(title) if title else None, show_lines=False)
    for c in rows[0]:
        t.add_column(escape(c))
    for r in rows[1:]:
        t.add_row(*(escape(c) for c in r))  # "[jax]" is text, not rich markup
    buf = io.StringIO()
    Console(file=buf, width=140, highlight=False, force_terminal=False).print(t)
    return buf.getvalue().rstrip("\n")


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
