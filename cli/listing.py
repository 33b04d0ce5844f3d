"""``diffkit list``: the catalog functions, GradBench's evals and the backends."""

from __future__ import annotations

import json

import click

from .output import color, emit, format_option, output_option, render

COLUMNS = ("name", "group", "kind", "dim", "scalable", "depth", "closed_form", "domain",
           "description")
OPTIONAL = ("domain", "group", "closed_form", "scalable", "depth")  # left out last first


@click.command("list")
@click.argument("what", type=click.Choice(["functions", "backends"]), required=False)
@format_option
@output_option
def list_(what: str | None, fmt: str, output: str | None) -> None:
    """List the catalog functions (with their metadata), GradBench's evals (group
    "GradBench evals": compare one with --size, its description naming the sizes) and
    the registered backends, or only WHAT (functions or backends). A CSV holds one table:
    name WHAT with --format csv.

    \b
    Examples:
      diffkit list
      diffkit list functions --format csv
      diffkit list --format json
    """
    import diffkit as dk
    from diffkit.bench import catalog
    from diffkit.gradbench import workloads

    if fmt == "csv" and what is None:
        raise click.UsageError("a CSV holds one table: diffkit list functions --format csv, "
                               "or diffkit list backends --format csv")
    functions = [e.metadata() for e in catalog.ENTRIES] + [
        workloads.metadata(name) for name in workloads.names()] if what != "backends" else []
    backends = [{"backend": name, "options": _options(name)} for name in dk.backends()] \
        if what != "functions" else []
    if fmt == "json":
        data = {"functions": functions, "backends": backends}
        emit(json.dumps(data if what is None else data[what], indent=2), output)
        return
    parts = []
    if what != "backends":
        parts.append(render(functions, fmt, COLUMNS, title="catalog", wrap=("description",),
                            optional=OPTIONAL, colored=color(output)))
    if what != "functions":
        parts.append(render(backends, fmt, ("backend", "options"), title="backends",
                            wrap=("options",)))
    emit("\n\n".join(parts), output)


def _options(name: str) -> str:
    import diffkit as dk

    try:
        b = dk.backend(name)
    except Exception as exc:  # a plug-in that cannot load: say so, keep listing
        return f"unavailable: {str(exc).splitlines()[0]}"
    return ", ".join(f"{k}={v}" for k, v in b.options.items()) or "—"


list = list_  # noqa: A001  (the command is called "list")
