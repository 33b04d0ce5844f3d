"""Backend options on the command line: one syntax, ``name[key=value,key=value]``.

>>> split_backends("symbolic, numeric[method=central,order=4],reverse")
['symbolic', 'numeric:method=central:order=4', 'reverse']
>>> shown("numeric:order=4"), shown("numeric")
('numeric[method=central,order=4]', 'numeric')
"""

from __future__ import annotations

import re

import click

SYNTAX = ('options in brackets: numeric[method=central,order=4], '
          'numeric[method=richardson]')
_ONE = re.compile(r"\s*([\w.-]+)\s*(?:\[([^\[\]]*)\])?\s*")


def split_backends(text: str) -> list[str]:
    """``a,b[k=v,k2=v2]`` -> the library's specs ``["a", "b:k=v:k2=v2"]``.

    (The older ``b:k=v`` form is still read, one option per ``:``.)
    """
    out, pos = [], 0
    while pos < len(text):
        end = _next_comma(text, pos)
        item = text[pos:end].strip()
        pos = end + 1
        if not item:
            continue
        m = _ONE.fullmatch(item)
        if m is None:
            if ":" in item and "[" not in item:
                out.append(item)  # name:key=value
                continue
            raise click.BadParameter(f"cannot read {item!r}; write a name, with {SYNTAX}",
                                     param_hint="--backends")
        name, opts = m.group(1), m.group(2)
        parts = [p.strip() for p in (opts or "").split(",") if p.strip()]
        out.append(":".join([name, *parts]))
    if not out:
        raise click.BadParameter("name at least one backend", param_hint="--backends")
    return out


def _next_comma(text: str, pos: int) -> int:
    depth = 0
    for i in range(pos, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if text[i] == "," and depth <= 0:
            return i
    return len(text)


def shown(label: str) -> str:
    """A configured backend's label with its full option set (those set), as typed;
    a backend with its defaults is just its name."""
    from diffkit.backends import backend_from_spec

    if ":" not in label:
        return label
    try:
        b = backend_from_spec(label)
    except Exception:  # a label from an old results file or an unloadable plug-in
        return label
    opts = [f"{k}={v}" for k, v in b.options.items() if v is not None]
    return f"{b.name}[{','.join(opts)}]" if opts else b.name
