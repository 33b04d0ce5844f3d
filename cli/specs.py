"""Backend specs on the command line: the library's one grammar, ``name[key=value,...]``
(:func:`diffkit.backends.parse_spec`), several separated by commas.

>>> split_backends("symbolic, numeric[method=central,order=4],reverse")
['symbolic', 'numeric[method=central,order=4]', 'reverse']
>>> shown("numeric[order=4]"), shown("numeric")
('numeric[method=central,order=4]', 'numeric')
"""

from __future__ import annotations

import click

SYNTAX = ('options in brackets: numeric[method=central,order=4], '
          'numeric[method=richardson]')


def split_backends(text: str) -> list[str]:
    """``a,b[k=v,k2=v2]`` -> ``["a", "b[k=v,k2=v2]"]``, each spec read by the library."""
    from diffkit.backends import parse_spec
    from diffkit.core import DiffkitError

    out, pos = [], 0
    while pos < len(text):
        end = _next_comma(text, pos)
        item = text[pos:end].strip()
        pos = end + 1
        if not item:
            continue
        try:
            parse_spec(item)
        except DiffkitError as exc:
            raise click.BadParameter(str(exc), param_hint="--backends") from None
        out.append(item)
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
    from diffkit.backends import backend

    if "[" not in label and ":" not in label:
        return label
    try:
        b = backend(label)
    except Exception:  # a label from an old results file or an unloadable plug-in
        return label
    opts = [f"{k}={v}" for k, v in b.options.items() if v is not None]
    return f"{b.name}[{','.join(opts)}]" if opts else b.name
