"""Sparse Jacobians and Hessians: detect the pattern, colour it, compress, decompress.

``dk.jacobian`` of f: Rⁿ → Rᵐ costs n forward passes (or m reverse ones) whatever its
structure. A tridiagonal Jacobian has three non-zeros per row: its columns fall into
three groups that share no row, so three forward passes (one per group, the seed the sum
of the group's unit vectors) hold every non-zero, each in exactly one place. Here:

1. the pattern comes from the sparsity interpreter (:mod:`diffkit.interpreters.sparsity`,
   global: valid for every x), once per input shape, like a jit cache;
2. it is coloured (:mod:`diffkit.transforms.coloring`): columns for forward mode, rows for
   reverse mode, whichever needs fewer colours (``mode=None``), a star colouring of the
   Hessian for Hessian-vector products;
3. each call does one pass per colour and decompresses into a ``scipy.sparse`` array.

``mode="cpr"`` (or ``backend="numeric"``) groups the columns of finite differences the
same way (Curtis, Powell and Reid): two evaluations of f per group, central.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> jac = dk.sparse_jacobian(lambda x: x[1:] * x[:-1])
>>> jac(np.arange(1.0, 5.0)).toarray().tolist()
[[2.0, 1.0, 0.0, 0.0], [0.0, 3.0, 2.0, 0.0], [0.0, 0.0, 4.0, 3.0]]
>>> jac.plan(np.ones(4)).colors, jac.plan(np.ones(4)).mode
(2, 'forward')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import numpy as dnp
from ..backends import Backend, as_backend
from ..backends import finite_diff as fd
from ..checks import as_input
from ..core import DiffkitError, primal, shape
from ..interpreters.sparsity import hessian_pattern, jacobian_pattern
from . import coloring

MODES = ("forward", "reverse", "cpr")


def jacobian_sparsity(f: Callable, *, local: bool = False) -> Callable[[Any], sp.csr_array]:
    """The Jacobian's pattern: a boolean ``scipy.sparse`` array of shape
    ``(f(x).size, x.size)``, True where an output entry may depend on an input entry.

    Global (for every x) by default; ``local=True`` follows ``where`` / ``maximum`` the
    way they go at this x (a pattern valid near x). No derivative is computed.

    >>> import numpy as np, diffkit as dk
    >>> dk.jacobian_sparsity(lambda x: x[1:] - x[:-1])(np.zeros(3)).toarray()
    array([[ True,  True, False],
           [False,  True,  True]])
    """
    return lambda x: jacobian_pattern(f, x, local)


def hessian_sparsity(f: Callable, *, local: bool = False) -> Callable[[Any], sp.csr_array]:
    """The Hessian's pattern of scalar ``f``: boolean ``(x.size, x.size)``, global by
    default, local at x with ``local=True`` (as :func:`jacobian_sparsity`).

    >>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
    >>> dk.hessian_sparsity(lambda x: dnp.sum(x[1:] * x[:-1]))(np.zeros(3)).toarray().astype(int)
    array([[0, 1, 0],
           [1, 0, 1],
           [0, 1, 0]])
    """
    return lambda x: hessian_pattern(f, x, local)


@dataclass(frozen=True)
class Plan:
    """What a sparse derivative computes for one input shape: the pattern, the colour of
    each column (or row), the mode, how many colours, and the passes a call makes."""

    pattern: sp.csr_array
    color: np.ndarray
    mode: str
    colors: int
    passes: int


class _Sparse:
    """A sparse derivative of ``f``: one plan per input shape and dtype, kept."""

    def __init__(self, f: Callable, backend: str | Backend | None, order: str) -> None:
        self.f, self.order = f, order
        self.backend = None if backend is None else as_backend(backend)
        self.plans: dict[tuple, Plan] = {}

    def plan(self, x: Any) -> Plan:
        """The plan for ``x``'s shape and dtype (made on first use)."""
        x = as_input(x, f"{type(self).__name__.lower()}: the argument")
        key = (shape(x), np.result_type(x).str)
        if key not in self.plans:
            self.plans[key] = self._make_plan(x)
        return self.plans[key]

    def _make_plan(self, x: Any) -> Plan:
        raise NotImplementedError


class SparseJacobian(_Sparse):
    """``dk.sparse_jacobian(f)``: call it on x; ``.plan(x)`` tells colours and passes."""

    def __init__(self, f: Callable, mode: str | None, backend: str | Backend | None,
                 order: str) -> None:
        if mode is not None and mode not in MODES:
            raise DiffkitError(f"sparse_jacobian: unknown mode {mode!r}; use one of "
                               f"{', '.join(MODES)}, or None to choose by colour counts")
        super().__init__(f, backend, order)
        if mode is None and self.backend is not None and self.backend.name == "numeric":
            mode = "cpr"  # finite differences compute columns only
        if mode == "cpr" and self.backend is not None and self.backend.name != "numeric":
            raise DiffkitError(f"sparse_jacobian: mode='cpr' is finite differences; its backend "
                               f"is 'numeric', not {self.backend.name!r}")
        self.mode = mode

    def _make_plan(self, x: Any) -> Plan:
        pattern = jacobian_pattern(self.f, x)
        columns = coloring.column_coloring(pattern, self.order)
        mode = self.mode
        if mode is None:
            rows = coloring.row_coloring(pattern, self.order)
            mode = "forward" if _count(columns) <= _count(rows) else "reverse"
            color = columns if mode == "forward" else rows
        else:
            color = coloring.row_coloring(pattern, self.order) if mode == "reverse" else columns
        passes = _count(color) * (2 if mode == "cpr" else 1)
        return Plan(pattern, color, mode, _count(color), passes)

    def __call__(self, x: Any) -> sp.csr_array:
        x = as_input(x, "sparse_jacobian: the argument")
        plan = self.plan(x)
        flat = _flat(self.f, shape(x))
        z = np.reshape(x, -1)
        s = coloring.seeds(plan.color)
        if plan.mode == "reverse":
            be = self.backend or as_backend("reverse")
            _, pull = be.vjp(flat, z)
            compressed = _columns(lambda c: pull(s[:, c]), plan, plan.pattern.shape[1]).T
            return coloring.decompress_rows(plan.pattern, plan.color, compressed)
        if plan.mode == "cpr":
            step = None if self.backend is None else self.backend.options["step"]
            h = fd._steps("central", 2, z, step)  # (the numeric backend's steps, per column)
            compressed = _columns(lambda c: (flat(z + h * s[:, c]) - flat(z - h * s[:, c])) / 2.0,
                                  plan)
            scaled = coloring.decompress_columns(plan.pattern, plan.color, compressed)
            return sp.csr_array(scaled @ sp.diags_array(1.0 / h))  # entry (i, j) was J[i, j] h[j]
        be = self.backend or as_backend("forward")
        compressed = _columns(lambda c: be.jvp(flat, z, s[:, c])[1], plan)
        return coloring.decompress_columns(plan.pattern, plan.color, compressed)


class SparseHessian(_Sparse):
    """``dk.sparse_hessian(f)``: call it on x; ``.plan(x)`` tells colours and passes."""

    def _make_plan(self, x: Any) -> Plan:
        pattern = hessian_pattern(self.f, x)
        color = coloring.star_coloring(pattern, self.order)
        return Plan(pattern, color, "star", _count(color), _count(color))

    def __call__(self, x: Any) -> sp.csr_array:
        x = as_input(x, "sparse_hessian: the argument")
        plan = self.plan(x)
        flat = _flat(self.f, shape(x), scalar=True)
        z, s = np.reshape(x, -1), coloring.seeds(plan.color)
        reverse, be = as_backend("reverse"), self.backend or as_backend("forward")

        def gradient(v: Any) -> Any:
            return reverse.value_and_grad(flat, v, False)[2]
        compressed = _columns(lambda c: be.jvp(gradient, z, s[:, c])[1], plan)
        return coloring.decompress_star(plan.pattern, plan.color, compressed)


def sparse_jacobian(f: Callable, mode: str | None = None, *, backend: str | Backend | None = None,
                    order: str = "natural") -> SparseJacobian:
    """The Jacobian of f as a ``scipy.sparse`` array ``(f(x).size, x.size)``, one pass per
    colour of its (global) pattern, found once per input shape and kept.

    ``mode``: ``"forward"`` (groups of columns, one JVP each), ``"reverse"`` (groups of
    rows, one VJP each), ``"cpr"`` (groups of columns by central differences, two
    evaluations each), or None: forward or reverse, whichever needs fewer colours (CPR
    when ``backend`` is numeric). ``backend`` computes the JVPs or VJPs (default: the
    mode's own); ``order``: the colouring's vertex order, ``"natural"`` or
    ``"largest-first"``. ``.plan(x)`` gives the pattern, colours, mode and passes.

    >>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
    >>> dk.sparse_jacobian(dnp.sin, mode="cpr")(np.zeros(3)).toarray().round(9).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    return SparseJacobian(f, mode, backend, order)


def sparse_hessian(f: Callable, *, backend: str | Backend | None = None,
                   order: str = "natural") -> SparseHessian:
    """The Hessian of scalar f as a ``scipy.sparse`` array ``(x.size, x.size)``: a star
    colouring of its (global) pattern, one Hessian-vector product per colour, each the
    ``backend``'s JVP (default forward mode) of the reverse-mode gradient.

    >>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
    >>> h = dk.sparse_hessian(lambda x: dnp.sum(x[1:] ** 2 * x[:-1]))
    >>> h(np.ones(3)).toarray().tolist()
    [[0.0, 2.0, 0.0], [2.0, 2.0, 2.0], [0.0, 2.0, 2.0]]
    """
    return SparseHessian(f, backend, order)


def _columns(column: Callable[[int], Any], plan: Plan, length: int | None = None) -> np.ndarray:
    """The compressed matrix: one column per colour, ``column(c)`` flattened (each of
    ``length`` entries: the pattern's rows by default)."""
    cols = [np.reshape(primal(column(c)), -1) for c in range(plan.colors)]
    rows = plan.pattern.shape[0] if length is None else length
    return np.stack(cols, axis=1) if cols else np.zeros((rows, 0))


def _count(color: np.ndarray) -> int:
    return int(color.max()) + 1 if color.size else 0


def _flat(f: Callable, in_shape: tuple[int, ...], scalar: bool = False) -> Callable[[Any], Any]:
    """``f`` on a flat input, returning a flat output (a sparse matrix is 2-D) or, for a
    Hessian, its scalar."""
    def flat(z: Any) -> Any:
        y = f(dnp.reshape(z, in_shape))
        return y if scalar else dnp.reshape(y, (-1,))
    return flat
