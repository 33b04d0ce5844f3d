"""``diffkit list``: the catalog functions and the backends."""

from __future__ import annotations

import json

import click

from .output import emit, format_option, output_option, render

COLUMNS = ("name", "group", "kind", "dim", "scalable", "depth", "closed_form", "domain",
           "description")


@click.command("list")
@format_option
@output_option
def list_(fmt: str, output: str | None) -> None:
    """List the catalog functions (with their metadata) and the registered backends.

    \b
    Examples:
      diffkit list
      diffkit list --format json
    """
    import diffkit as dk
    from diffkit.bench import catalog

    functions = [e.metadata() for e in catalog.ENTRIES]
    backends = [{"backend": name, "options": _options(name)} for name in dk.backends()]
    if fmt == "json":
        emit(json.dumps({"functions": functions, "backends": backends}, indent=2), output)
        return
    emit(render(functions, fmt, COLUMNS, title="catalog") + "\n\n"
         + render(backends, fmt, ("backend", "options"), title="backends"), output)


def _options(name: str) -> str:
    import diffkit as dk

    try:
        b = dk.backend(name)
    except Exception as exc:  # a plug-in that cannot load: say so, keep listing
        return f"unavailable: {str(exc).splitlines()[0]}"
    return ", ".join(f"{k}={v}" for k, v in b.options.items()) or "—"


list = list_  # noqa: A001  (the command is called "list")
