"""The compiler's IR: a static graph, a typed list of equations over the primitive table.

Every primitive call the tracer (:mod:`diffkit.ir.tracer`) meets becomes one
equation ``v3 = mul(v1, v2)`` of a :class:`Graph`; plain numbers and arrays become literals
and constants. The result reads like a Wengert list (or a jaxpr) and is what the passes
optimize, the autodiff transforms and the code generator turns into a Python function.

>>> import numpy as np, diffkit.numpy as dnp
>>> from diffkit.ir.tracer import trace_graph
>>> print(trace_graph(lambda x: dnp.sin(x) * 2.0, (np.zeros(3),)))
graph (x: f64[3]) -> f64[3]
  v1: f64[3] = sin(x)
  v2: f64[3] = mul(v1, 2.0)
  return v2
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import Primitive

# --------------------------------------------------------------------------- the IR


@dataclass(eq=False)
class Var:
    """A value of the graph: its shape and dtype; ``name`` for inputs, ``adjoint_of``
    when it holds the complete adjoint of another variable (printed ``v1_bar``)."""

    n: int
    shape: tuple[int, ...]
    dtype: np.dtype
    name: str | None = None
    adjoint_of: Var | None = None

    def type(self) -> str:
        """``f64[3,2]``, as a jaxpr writes it."""
        kind = {"f": "f", "i": "i", "u": "u", "b": "bool", "c": "c"}[self.dtype.kind]
        bits = "" if kind == "bool" else str(8 * self.dtype.itemsize)
        return f"{kind}{bits}[{','.join(map(str, self.shape))}]"


@dataclass(eq=False)
class Const:
    """An array constant the function closed over (kept out of the source text)."""

    value: Any

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.value)

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(self.value)


Atom = Any  # Var | Const | a Python number (a literal, written into the code)


@dataclass(eq=False)
class Eqn:
    """One line: ``out = prim(*inputs, **params)``."""

    prim: Primitive
    inputs: tuple[Atom, ...]
    out: Var
    params: dict = field(default_factory=dict)


@dataclass(eq=False)
class Graph:
    """Inputs, equations in evaluation order, outputs (and how to rebuild their tree)."""

    inputs: list[Var]
    eqns: list[Eqn]
    outputs: list[Atom]
    rebuild: Callable[[list[Any]], Any] = lambda leaves: leaves
    #: values of an outer transform the function closes over (closure conversion): the
    #: last ``len(captured)`` inputs stand for them, and a replay reads them there
    captured: list[Any] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.eqns)

    def names(self) -> dict[Var, str]:
        """Readable names: inputs by their names, then v1, v2 ... in order; adjoints v3_bar."""
        names: dict[Var, str] = {v: v.name or f"x{i}" for i, v in enumerate(self.inputs)}
        taken = set(names.values())
        k = 0
        for e in self.eqns:
            base = e.out.adjoint_of
            name = f"{names[base]}_bar" if base is not None and base in names else None
            if name is None or name in taken:
                k += 1
                name = f"v{k}"
                while name in taken:
                    k += 1
                    name = f"v{k}"
            names[e.out] = name
            taken.add(name)
        return names

    def lines(self) -> list[str]:
        names = self.names()
        consts: dict[int, str] = {}

        def atom(a: Atom) -> str:
            if isinstance(a, Var):
                return names[a]
            if isinstance(a, Const):
                if np.size(a.value) <= 4:
                    return repr(np.asarray(a.value).tolist())
                return consts.setdefault(id(a), f"c{len(consts) + 1}")
            return repr(a)

        head = ", ".join(f"{names[v]}: {v.type()}" for v in self.inputs)
        outs = ", ".join(v.type() if isinstance(v, Var) else "const" for v in self.outputs)
        rows = [f"graph ({head}) -> {outs}"]
        for e in self.eqns:
            args = [atom(a) for a in e.inputs] + [f"{k}={_short(v)}" for k, v in e.params.items()]
            rows.append(f"  {names[e.out]}: {e.out.type()} = {e.prim.name}({', '.join(args)})")
        rows.append(f"  return {', '.join(atom(a) for a in self.outputs)}")
        return rows

    def __str__(self) -> str:
        return "\n".join(self.lines())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"<{v.dtype}[{','.join(map(str, v.shape))}] array>" if v.size > 4 else repr(v.tolist())
    return repr(v)
