"""A report's page: one self-contained ``index.html`` from an autoescaped Jinja2 template
(``templates/report.html``). Every text a user or a measurement supplied is escaped by
the template; tables come from the one table builder (:mod:`diffkit.views.tables`)."""

from __future__ import annotations

import base64
import datetime
import functools
import os
import platform
from pathlib import Path
from typing import Any

from ..views.tables import html_table
from . import atlas, gradbench, solvers, which
from .figures import INFO, cell, table_rows
from .summary import summary

Record = dict[str, Any]


def machine() -> dict[str, str]:
    """Where and with what the report was measured."""
    from importlib.metadata import PackageNotFoundError, version

    from ..bench.cluster import cpu_model

    blas = {v: os.environ[v] for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                         "MKL_NUM_THREADS") if v in os.environ}
    info = {"platform": platform.platform(), "CPU": cpu_model(), "CPU count": str(os.cpu_count()),
            "BLAS threads": ", ".join(f"{k}={v}" for k, v in blas.items()) or "default",
            "python": platform.python_version()}
    for pkg in ("numpy", "sympy", "matplotlib", "diffkit"):
        try:
            info[pkg] = version(pkg)
        except PackageNotFoundError:
            info[pkg] = "not installed"
    return info


def where(rows: list[Record]) -> tuple[str, bool]:
    """Where a figure's cells ran, when on a cluster: each machine, its CPU and how many
    cells it measured at a time (empty otherwise); and whether the CPU models differ.

    >>> where([{"host": "a", "cpu": "X", "concurrency": 2}])
    ('a (X), 2 cells at a time', False)
    """
    hosts = {r["host"]: (r.get("cpu"), r.get("concurrency")) for r in rows if r.get("host")}
    text = "; ".join(f"{h} ({cpu}), {n or '?'} cell{'s' if n != 1 else ''} at a time"
                     for h, (cpu, n) in sorted(hosts.items()))
    return text, len({cpu for cpu, _ in hosts.values()}) > 1


def table(columns: tuple[str, ...] | list[str], rows: list[Record]) -> str:
    """A figure's records as an HTML table; rows that did not finish are marked."""
    return html_table(columns, [[cell(c, r.get(c)) for c in columns] for r in rows],
                      ["" if r.get("status", "ok") == "ok" else "failed" for r in rows])


def _image(png: Path) -> tuple[str, int]:
    """A PNG as a data URL, so the page needs no other file to show it, and its width in
    pixels (from its header; 960 where the file is missing)."""
    if not png.exists():
        return png.name, 960
    blob = png.read_bytes()
    return ("data:image/png;base64," + base64.b64encode(blob).decode("ascii"),
            int.from_bytes(blob[16:20], "big"))


@functools.cache
def _template(name: str) -> Any:
    import jinja2  # only when a page is written

    env = jinja2.Environment(loader=jinja2.PackageLoader("diffkit.reporting", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(name)


def experiment_page(title: str, summary: list[str], figures: list[dict[str, str]],
                    out: Path, numbers: str, command: str) -> str:
    """The page of an experiment: its generated summary, then each figure (``name``,
    ``title``, ``caption``; the PNG ``out/name.png`` embedded), the numbers file and the
    machine.

    >>> html = experiment_page("<T>", ["s"], [{"name": "f", "title": "t", "caption": "c"}],
    ...                        Path("."), "n.json", "cmd")
    >>> "&lt;T&gt;" in html and "n.json" in html and "<li>s</li>" in html
    True
    """
    shown = []
    for fig in figures:
        image, width = _image(out / f"{fig['name']}.png")
        shown.append({**fig, "png": f"{fig['name']}.png", "image": image, "width": width})
    return _template("experiment.html").render(
        title=title, summary=summary, figures=shown, numbers=numbers, command=command,
        machine=machine())


def page(spec: dict[str, Any], data: dict[str, list[Record]], command: str,
         results: Path, chosen: list[Record] = (), solved: list[Record] = (),
         mapped: list[Record] = ()) -> str:
    """The HTML report, self-contained: its figures are embedded (PNG as data URLs, read
    from the folder of ``results``), so the one file shows everything; every
    user-supplied text is escaped. ``chosen``: the "which method" rows, if any; ``solved``:
    the solvers figure's rows, if any (or ``data["solvers"]``); ``mapped``: the accuracy
    atlas's (or ``data["atlas"]``); ``data["gradbench"]``: the GradBench section's."""
    data = dict(data)
    solved, mapped = data.pop("solvers", solved), data.pop("atlas", mapped)
    benched = data.pop("gradbench", [])
    failed: dict[str, int] = {}
    ident = ("sweep", "cell", "function", "backend", "method", "n", "m", "depth", "steps")
    cells = {tuple(r.get(k) for k in ident): r for rows in data.values() for r in rows}
    for r in cells.values():  # a step sweep's failure counts once per method
        if r.get("status", "ok") != "ok":
            failed[r["status"]] = failed.get(r["status"], 0) + 1
    figures = []
    for fig, rows in data.items():
        info, trows = INFO[fig], table_rows(fig, rows)
        text, mixed = where(rows)
        image, width = _image(results.parent / f"{fig}.png")
        figures.append({"name": fig, "title": info.title, "explains": info.explains,
                        "where": text, "mixed": mixed, "rows": len(trows), "image": image,
                        "width": width, "table": table(info.columns, trows)})
    chosen_table = None if not chosen else {
        "title": which.TITLE, "explains": which.EXPLAINS,
        "table": table(which.COLUMNS, [which.display(r) for r in chosen])}
    return _template("report.html").render(
        title=spec["title"], description=spec["description"], summary=summary(data),
        generated=datetime.datetime.now().isoformat(timespec="seconds"), command=command,
        limits=spec["limits"], machine=machine(), results=results.name,
        unfinished=", ".join(f"{n} {s}" for s, n in sorted(failed.items())) or "none",
        figures=figures, which=chosen_table, solvers=_solvers(solved, results.parent),
        atlas=atlas.section(list(mapped), _image, results.parent),
        gradbench=gradbench.section(benched, _image, results.parent))


def _solvers(solved: list[Record], folder: Path) -> dict[str, Any] | None:
    """The solvers section of a report (its figure is ``solvers.png``), if it has rows."""
    if not solved:
        return None
    image, width = _image(folder / "solvers.png")
    return {"title": solvers.TITLE, "explains": solvers.EXPLAINS, "image": image,
            "width": width, "table": table(solvers.COLUMNS, [solvers.display(r)
                                                             for r in solved])}
