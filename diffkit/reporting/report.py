"""Reports: a TOML spec in; sweeps through the harness, figures and an HTML page out.

:func:`build` reads the spec (:mod:`.spec`), runs the sweeps (:mod:`.runner`: each cell
isolated, under the spec's timeout and memory limit, appended to ``DIR/results.jsonl`` at
once, so a rerun into the same folder measures only what is missing), draws the figures
(:mod:`.figures`) and writes into ``DIR``: ``index.html`` (:mod:`.page`: figures, tables,
what each figure shows, machine and versions, the command that regenerates it), each
figure as PNG and SVG, ``results.csv`` and a copy of the spec with every default filled
in (``spec.toml``). The ``diffkit`` command runs BLAS on one thread (multi-threaded matrix
products time erratically); from Python, set ``OPENBLAS_NUM_THREADS=1`` before numpy is
imported for the same steadiness.

Regenerate the README gallery (``reports/gallery/*.png``, the standard figures) with::

    diffkit report reports/quick.toml -o reports/gallery --gallery

>>> build({"figures": ["accuracy"], "functions": ["exp"], "limits": {"repeat": 1}},
...       "out/tiny")  # doctest: +SKIP
PosixPath('out/tiny/index.html')
"""

from __future__ import annotations

import csv
import functools
import importlib
import json
import os
import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..bench.harness import EXTRA, FIELDS, read_results
from ..core import DiffkitError
from . import atlas, gradbench, solvers, which
from .figures import draw, rendered
from .page import experiment_page, page
from .runner import Phases, Progress, Record, Runner, plan_of, run_all, run_on
from .spec import EXPERIMENTS, experiment, load_spec, read_toml, to_toml


def run_experiment(raw: dict[str, Any], out_dir: Path, command: str) -> Path:
    """Run the spec's declared experiment into ``out_dir`` (``command`` regenerates it);
    returns its page, ``index.html``."""
    module, function = EXPERIMENTS[experiment(raw)].split(":")
    return getattr(importlib.import_module(module), function)(raw, out_dir, command)


def two_panels() -> tuple[Any, tuple[Any, Any]]:
    """A one-figure experiment's figure: two panels side by side (11.5 × 4.6 in)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, 2, figsize=(11.5, 4.6))


def finished(fig: Any, axes: tuple[Any, ...], title: str) -> Any:
    """Grids, legends and the title on a :func:`two_panels` figure, laid out."""
    for ax in axes:
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig


def write_experiment(out: Path, figure: Any, png: str, numbers: tuple[str, Any], title: str,
                     caption: str, summary: list[str], command: str) -> Path:
    """A one-figure experiment's files in ``out``: the figure as ``png`` (110 dpi, then
    closed), ``numbers`` = (file name, data) as JSON, ``captions.md`` and ``index.html``
    (opening with ``summary``, made from the measurements); returns the page's path."""
    import matplotlib.pyplot as plt

    figure.savefig(out / png, dpi=110)
    plt.close(figure)
    (out / numbers[0]).write_text(json.dumps(numbers[1], indent=1))
    alt = Path(png).stem.replace("_", " ")
    (out / "captions.md").write_text(f"# {title}\n\n![{alt}]({png})\n\n{caption}\n",
                                     encoding="utf-8")
    figures = [{"name": Path(png).stem, "title": title, "caption": caption}]
    (out / "index.html").write_text(experiment_page(title, summary, figures, out, numbers[0],
                                                    command))
    return out / "index.html"





def _made(spec: dict[str, Any], run: Runner, out: Path, svg: bool, progress: Progress | None,
          cluster: Any = None, phases: Phases | None = None) -> dict[str, list[Record]]:
    """Every missing cell of the spec measured and every figure written into ``out``;
    the records per figure. On a cluster each figure is drawn on a worker as soon as its
    cells are in, while the others still run (drawing is a quarter of a quick report's
    serial time)."""
    def write(fig: str, files: dict[str, bytes]) -> None:
        for suffix, blob in files.items():
            (out / fig).with_suffix(suffix).write_bytes(blob)

    if cluster is None:
        data = run_all(spec, run, progress)
        for fig in spec["figures"]:
            write(fig, rendered(fig, data[fig], spec[fig], svg))
    else:
        from ..bench.cluster import using

        with using(cluster) as c:
            if phases:
                phases.mark("starting the cluster")
            drawn: dict[str, Callable[[], dict[str, bytes]]] = {}
            data = run_on(c, spec, run, progress, lambda fig, rows: fig in spec["figures"] and
                          drawn.setdefault(fig, c.start(functools.partial(
                              rendered, fig, rows, spec[fig], svg))), phases)
            for fig, files in drawn.items():
                write(fig, files())
            if phases:
                phases.mark("figures still drawing after the last cell")
    if data.get("solvers"):  # (its own figure: a row of panels per function)
        solvers.draw(data["solvers"], out)
    atlas.draw(data.get("atlas", []), out)  # (a figure per function)
    gradbench.draw(data.get("gradbench", []), out)  # (a figure per eval)
    if phases:
        phases.mark("cells and figures" if cluster is None else "the solvers figure and "
                    "stopping the cluster")
    return data


def build(spec: str | os.PathLike | dict[str, Any], out_dir: str | os.PathLike,
          progress: Progress | None = None, cluster: Any = None,
          phases: Phases | None = None) -> Path:
    """Run the spec's sweeps (resuming from ``out_dir/results.jsonl``), draw its figures
    and write the report; returns the path of ``index.html``. With ``cluster``
    (``"local:N"``, ``"tcp://host:port"`` or an open :class:`~diffkit.bench.cluster.Cluster`)
    the cells run as tasks on Dask workers (:mod:`diffkit.bench.cluster`). ``phases``
    (a :class:`~diffkit.reporting.runner.Phases`) is told where the time went.

    >>> build("reports/quick.toml", "out/quick")  # doctest: +SKIP
    PosixPath('out/quick/index.html')
    """
    raw = spec if isinstance(spec, dict) else read_toml(spec)
    if cluster is not None:
        _cluster_check(cluster, raw)
    out = Path(out_dir)
    here = None if isinstance(spec, dict) else Path(spec)
    command = (f"diffkit report {shlex.quote(str(here or out / 'spec.toml'))} "
               f"-o {shlex.quote(str(out))}")
    if experiment(raw):  # e.g. a training experiment, not harness cells
        return run_experiment(raw, out, command)
    s = load_spec(raw)
    out.mkdir(parents=True, exist_ok=True)
    run = Runner(out / "results.jsonl", s["limits"])
    data = _made(s, run, out, True, progress, cluster, phases)
    chosen = which.rows(s["which"], run, progress)
    if phases and s["which"]["functions"]:
        phases.mark("advise (the which table, here)")
    solved, mapped = data.pop("solvers", []), data.pop("atlas", [])
    (out / "spec.toml").write_text(to_toml(s))
    write_csv(read_results(run.path), out / "results.csv")
    index = out / "index.html"
    index.write_text(page(s, data, command, run.path, chosen, solved, mapped))
    if phases:
        phases.mark("the page")
    return index


def gallery(spec: str | os.PathLike | dict[str, Any], out_dir: str | os.PathLike,
            progress: Progress | None = None, cluster: Any = None) -> list[Path]:
    """Only the figures, as PNGs (150 dpi), measured afresh in a temporary folder, and
    their numbers file ``gallery.json`` (per figure: its sweep's plan, its legends and its
    width; every record): the README gallery, which ``tests/test_gallery.py`` holds to
    what the code produces. ``diffkit report reports/quick.toml -o reports/gallery --gallery``
    """
    if cluster is not None:
        _cluster_check(cluster, spec if isinstance(spec, dict) else read_toml(spec))
    s = load_spec(spec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = _made(s, Runner(Path(tmp) / "results.jsonl", s["limits"]), out, False,
                     progress, cluster)
    solved = data.pop("solvers", [])
    data.pop("atlas", None)  # (the atlas has its page, not a gallery figure)
    data.pop("gradbench", None)  # (nor has the GradBench section)
    made = [out / f"{fig}.png" for fig in data] + ([out / "solvers.png"] if solved else [])
    figures = {fig: {"plan": plan_of(s, fig), "legends": legends(draw(fig, rows, s[fig]))}
               for fig, rows in data.items()}
    if solved:
        figures["solvers"] = {"plan": s["solvers"], "legends": legends(solvers.figure(solved))}
        data = {**data, "solvers": solved}
    for fig, entry in figures.items():
        entry["width"] = int.from_bytes((out / f"{fig}.png").read_bytes()[16:20], "big")
    numbers = {"spec": None if isinstance(spec, dict) else str(spec), "figures": figures,
               "records": data}
    (out / "gallery.json").write_text(json.dumps(numbers, indent=1, default=str) + "\n")
    return made


def legends(figure: Any) -> list[list[str]]:
    """The legend entries of each axes of a drawn figure (what a reader sees named)."""
    import matplotlib.pyplot as plt

    out = [[text.get_text() for text in ax.get_legend().get_texts()]
           for ax in figure.axes if ax.get_legend() is not None]
    plt.close(figure)
    return out


def _cluster_check(cluster: Any, raw: dict[str, Any]) -> None:
    from ..bench.cluster import require

    if raw.get("experiment"):
        raise DiffkitError(f"the {raw['experiment']} experiment runs in this process, not as "
                           "cells a cluster could share; run it without --cluster")
    if isinstance(cluster, str):
        require(cluster)


def write_csv(records: list[Record], path: Path) -> None:
    """All records as CSV: ``sweep`` (``cell`` for harness cells), the harness fields,
    then any others; lists as JSON."""
    columns = list(dict.fromkeys(["sweep", *FIELDS, *EXTRA, *(k for r in records for k in r)]))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in records:
            r = {**r, "sweep": r.get("sweep", "cell")}
            w.writerow(["" if r.get(c) is None else json.dumps(r[c])
                        if isinstance(r[c], (list, dict)) else r[c] for c in columns])
