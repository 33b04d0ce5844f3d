"""GradBench's evals as workloads of the comparison harness (``diffkit compare gmm --size …``).

Each eval differentiates one scalar function of its first input (gmm's parameters
``(alpha, mu, q, l)``, lse's ``x``, kmeans's centroids …) with the rest of its input as
data. A :class:`Workload` (one a line in :data:`WORKLOADS`; an eval without one is not a
workload) names that function and the gradient the eval's module derives by hand;
:func:`instance` makes of an eval at a size (GradBench's names, the smallest by default)
what the harness measures: ``f`` of one flat parameter vector (the first input's leaves,
raveled and concatenated), the point GradBench generates, and the hand-derived gradient,
the reference of the error column.

The data become the arrays of whichever library computes diffkit.numpy's primitives when
``f`` runs (:func:`native`), so that a peer (JAX, PyTorch, autograd) runs the same program
on its own arrays: PyTorch's tensors do not meet numpy arrays in Python's operators.

>>> p = instance("lse")
>>> p.name, p.size, p.x.shape
('lse', 'n=2500', (2500,))
>>> import numpy as np
>>> bool(np.allclose(p.exact(p.x), np.exp(p.x) / np.sum(np.exp(p.x))))
True
>>> instance("det", "4")
Traceback (most recent call last):
...
diffkit.core.DiffkitError: unknown size '4' for det; its sizes are 5, 6, 7, 8, 9, 10, 11
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import DiffkitError, namespace
from ..pytree import flatten
from . import det, gmm, hello, kmeans, llsq, lse, lstm, ode
from .common import Eval

GROUP = "GradBench evals"


@dataclass(frozen=True)
class Workload:
    """What an eval differentiates: ``fun(*arrays, *static)``, a scalar, with respect to
    ``arrays[0]`` (a pytree), ``(static, arrays)`` being the eval's prepared input;
    ``by_hand(*arrays, *static)`` its gradient in the same structure, derived by hand in
    plain numpy (the eval's reference for its gradient function)."""

    eval: Eval
    fun: Callable[..., Any]
    by_hand: Callable[..., Any]


def kmeans_gradient(C: np.ndarray, P: np.ndarray) -> np.ndarray:
    """∇cost by hand: Jⱼ = Σ_{i∈Sⱼ} 2 (Cⱼ − Pᵢ) = 2 (|Sⱼ| Cⱼ − Σ_{i∈Sⱼ} Pᵢ), Sⱼ the points
    nearest to Cⱼ (``dir`` is this J over the Hessian's diagonal 2|Sⱼ|).

    >>> kmeans_gradient(np.array([[1.0, 1.0]]), np.array([[0.0, 0.0], [2.0, 0.0]])).tolist()
    [[0.0, 4.0]]
    """
    which = kmeans.nearest(C, P)[0]
    sums = np.zeros_like(C)
    np.add.at(sums, which, P)
    return 2.0 * (np.bincount(which, minlength=len(C))[:, None] * C - sums)


#: per eval, the function its gradient function differentiates (kmeans: the cost, whose
#: gradient J its ``dir`` divides by the Hessian's diagonal)
WORKLOADS: dict[str, Workload] = {w.eval.name: w for w in (
    Workload(hello.EVAL, hello.square, hello.double_by_hand),
    Workload(lse.EVAL, lse.lse, lse.gradient_by_hand),
    Workload(llsq.EVAL, llsq.llsq, llsq.gradient_by_hand),
    Workload(gmm.EVAL, gmm.objective, gmm.jacobian_by_hand),
    Workload(kmeans.EVAL, kmeans.cost, kmeans_gradient),
    Workload(ode.EVAL, ode.last, ode.gradient_by_hand),
    Workload(det.EVAL, det.det, det.gradient_by_hand),
    Workload(lstm.EVAL, lstm.loss, lambda p, state, seq: lstm.jacobian_by_hand(*p, state, seq)),
)}


def names() -> list[str]:
    """The evals that are workloads, in GradBench's order of its table.

    >>> names()[:3]
    ['hello', 'lse', 'llsq']
    """
    return list(WORKLOADS)


def workload(name: str) -> Workload:
    """The workload of eval ``name``; an unknown name is one line naming the evals."""
    if name in WORKLOADS:
        return WORKLOADS[name]
    close = difflib.get_close_matches(name, names(), n=2)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise DiffkitError(f"unknown GradBench eval {name!r}; its evals: {', '.join(names())}{hint}")


def native(data: tuple) -> tuple:
    """``data`` as arrays of the library computing diffkit.numpy's primitives now: as they
    are on numpy, else converted by its namespace's ``asarray`` (a peer's, inside
    :func:`diffkit.core.using`).

    >>> from diffkit.core import using
    >>> class Lists:
    ...     asarray = staticmethod(lambda a: a.tolist())
    >>> with using(Lists):
    ...     native((np.ones(2),))
    ([1.0, 1.0],)
    """
    xp = namespace()
    return data if xp is None else tuple(xp.asarray(d) for d in data)


@dataclass(frozen=True)
class Instance:
    """An eval at one size as the harness measures it: ``f(v)`` the eval's scalar of the
    flat parameter vector ``v``, ``x`` GradBench's point, ``exact(v)`` the hand-derived
    gradient at ``v`` (flat, as ``v``)."""

    name: str
    size: str
    f: Callable[[Any], Any]
    x: np.ndarray
    exact: Callable[[Any], np.ndarray]


def instance(name: str, size: str | None = None) -> Instance:
    """Eval ``name`` at ``size`` (GradBench's name for it; default the smallest), with the
    input GradBench generates for it."""
    w = workload(name)
    size = w.eval.sizes[0] if size is None else size
    static, arrays = w.eval.prepare(w.eval.input(size))
    leaves, rebuild = flatten(arrays[0])
    shapes = [np.shape(leaf) for leaf in leaves]
    ends = np.cumsum([int(np.prod(s)) for s in shapes]).tolist()
    data = arrays[1:]

    def params(v: Any) -> Any:
        return rebuild([dnp.reshape(v[end - int(np.prod(s)):end], s)
                        for s, end in zip(shapes, ends)])

    def f(v: Any) -> Any:
        return w.fun(params(v), *native(data), *static)

    def exact(v: Any) -> np.ndarray:
        tree = w.by_hand(params(np.asarray(v, dtype=float)), *data, *static)
        return np.concatenate([np.ravel(g) for g in flatten(tree)[0]])

    x = np.concatenate([np.ravel(np.asarray(leaf, dtype=float)) for leaf in leaves])
    return Instance(name, size, f, x, exact)


def metadata(name: str) -> dict[str, Any]:
    """Eval ``name`` as a row of ``diffkit list`` (the catalog's columns)."""
    w = workload(name)
    sizes = w.eval.sizes
    shown = sizes[0] if len(sizes) == 1 else f"{sizes[0]} … {sizes[-1]}"
    return {"name": name, "group": GROUP, "kind": "grad", "dim": instance(name).x.size,
            "scalable": False, "depth": None, "domain": "all reals",
            "closed_form": False, "description": f"{w.eval.summary} (--size {shown})"}
