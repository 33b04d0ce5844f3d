"""The catalog: named test functions the harness, the CLI and the reports run on.

Each entry is a plain Python function over :mod:`diffkit.numpy` plus what a comparison
needs to know about it: which derivative it asks for (``kind``), its input dimension
(fixed, or scalable with ``n``), a depth parameter where it has one, a default point,
its domain, and whether it has a closed form (no value-dependent control flow).

>>> f, x = get("rosenbrock").make(n=3)
>>> float(f(x))
0.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from . import numpy as dnp
from .core import DiffkitError


@dataclass(frozen=True)
class Entry:
    """One catalog function.

    ``fn(x, **params)`` is the function; ``point(n)`` gives the default evaluation point
    (an array of ``n`` entries when ``n`` is not None, else a float or fixed array);
    ``params`` are keyword parameters passed to ``fn`` (``depth`` among them when the
    function has one).
    """

    name: str
    fn: Callable[..., Any]
    kind: str                       # derivative | grad | jacobian
    description: str
    point: Callable[[int | None], Any]
    domain: str = "all reals"
    closed_form: bool = True
    n: int | None = None            # default dimension when scalable, else None
    depth: int | None = None        # default depth when the function has one
    group: str = ""

    @property
    def scalable(self) -> bool:
        return self.n is not None

    def make(self, n: int | None = None, depth: int | None = None) -> tuple[Callable, Any]:
        """The function with its parameters bound, and its default point."""
        if n is not None and not self.scalable:
            raise DiffkitError(f"{self.name} has a fixed input dimension; --dim does not apply")
        if depth is not None and self.depth is None:
            raise DiffkitError(f"{self.name} has no depth parameter; --depth does not apply")
        kwargs = {"depth": depth or self.depth} if self.depth is not None else {}
        f = partial(self.fn, **kwargs) if kwargs else self.fn
        return f, self.point(n or self.n)

    def metadata(self) -> dict[str, Any]:
        """Plain data describing the entry (for ``diffkit list``)."""
        x = self.point(self.n)
        return {"name": self.name, "group": self.group, "kind": self.kind,
                "dim": self.n if self.scalable else int(np.size(x)),
                "scalable": self.scalable, "depth": self.depth, "domain": self.domain,
                "closed_form": self.closed_form, "description": self.description}


def _rosenbrock(x: Any) -> Any:
    return dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _logistic_map(x: Any, depth: int) -> Any:
    for _ in range(depth):
        x = 4.0 * x * (1.0 - x)
    return x


ENTRIES: list[Entry] = [
    Entry("rosenbrock", _rosenbrock, "grad", "Rosenbrock's banana valley, sum over n-1 pairs",
          point=lambda n: np.full(n, 1.0) if n else np.full(2, 1.0), n=2, group="optimization"),
    Entry("logistic_map", _logistic_map, "derivative",
          "the logistic map l_{k+1} = 4 l_k (1 - l_k) iterated depth times: expression swell",
          point=lambda n: 0.3, domain="[0, 1]", depth=4, group="AD classics"),
]


def names() -> list[str]:
    return [e.name for e in ENTRIES]


def get(name: str) -> Entry:
    """The entry called ``name``; an unknown name is a clear error listing similar ones."""
    for e in ENTRIES:
        if e.name == name:
            return e
    import difflib

    close = difflib.get_close_matches(name, names(), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `diffkit list`"
    raise DiffkitError(f"unknown catalog function {name!r}{hint}")
