"""Tensor contraction: ``einsum`` with explicit subscripts (``"ij,jk->ik"``).

``einsum`` is linear in each operand, so its JVP puts the tangent in that operand's
place, and its VJP is another einsum: the output's adjoint contracted with the other
operands, back to the operand's own subscripts. Two index patterns need a constant
operand in the VJP: an index only this operand has (``"ij->i"``: the adjoint is spread
over ``j`` with a vector of ones) and a repeated index (``"ii->i"``: the adjoint lands on
the diagonal, through an identity matrix). ``diffkit.numpy`` writes every form numpy
accepts (implicit output, ellipsis) in this explicit form, and builds ``tensordot``,
``inner``, ``outer``, ``kron``, ``vdot`` and n-d ``dot`` on it.

>>> import numpy as np
>>> float(einsum(np.array([1.0, 2.0]), np.array([3.0, 4.0]), subs="i,i->"))
11.0
"""

from __future__ import annotations

import functools
from string import ascii_letters
from typing import Any

import numpy as np

from ..core import Each, Primitive
from ..core import shape as shape_of
from .reductions import sum_to


def _parts(subs: str) -> tuple[list[str], str]:
    ins, out = subs.split("->")
    return ins.split(","), out


def _unused(subs: str) -> list[str]:
    return [c for c in ascii_letters if c not in subs]


@functools.lru_cache(maxsize=256)
def _path(subs: str, shapes: tuple[tuple[int, ...], ...]) -> list | bool:
    """numpy's contraction order (pairs go through BLAS), found once per subscripts and shapes."""
    if len(shapes) < 2:
        return False
    return np.einsum_path(subs, *(np.empty(s) for s in shapes), optimize="greedy")[0]


@functools.lru_cache(maxsize=256)
def _pairwise(subs: str) -> tuple | None:
    """``(tensordot's axes, the transpose to the output)`` when two-operand ``subs`` is one
    plain contraction (no index repeated within a term, every shared index summed, every
    other kept), else None."""
    (a, b), out = _parts(subs)
    shared = [c for c in a if c in b]
    free = [c for c in a + b if c not in shared]
    if len({*a}) < len(a) or len({*b}) < len(b) or sorted(free) != sorted(out):
        return None
    return ([a.index(c) for c in shared], [b.index(c) for c in shared]), tuple(map(free.index, out))


def _einsum(*xs: Any, subs: str) -> Any:
    pair = _pairwise(subs) if len(xs) == 2 else None
    if pair is not None and all(np.asarray(x).dtype.kind in "fc" for x in xs):
        (in_a, in_b), order = pair
        if all(np.shape(xs[0])[i] == np.shape(xs[1])[j] for i, j in zip(in_a, in_b)):
            # one BLAS product through tensordot: numpy's einsum path is several times
            # slower on a convolution's (windows, kernel) contraction
            return np.transpose(np.tensordot(xs[0], xs[1], axes=(in_a, in_b)), order)
    return np.einsum(subs, *xs, optimize=_path(subs, tuple(np.shape(x) for x in xs)))


def _jvp(i: int, x_dot: Any, y: Any, *xs: Any, subs: str) -> Any:
    return einsum(*xs[:i], x_dot, *xs[i + 1:], subs=subs)


def _vjp(i: int, y_bar: Any, y: Any, *xs: Any, subs: str) -> Any:
    ins, out = _parts(subs)
    operands = [y_bar] + [x for k, x in enumerate(xs) if k != i]
    terms = [out] + [s for k, s in enumerate(ins) if k != i]
    present, fresh = set("".join(terms)), iter(_unused(subs))
    target, sizes = list(ins[i]), shape_of(xs[i])
    for pos, c in enumerate(ins[i]):
        if c in ins[i][:pos]:  # repeated index: a diagonal, put back through an identity
            target[pos] = next(fresh)
            operands.append(np.eye(sizes[pos]))
            terms.append(c + target[pos])
        elif c not in present:  # summed over in this operand only: spread with ones
            operands.append(np.ones(sizes[pos]))
            terms.append(c)
            present.add(c)
    x_bar = einsum(*operands, subs=",".join(terms) + "->" + "".join(target))
    return x_bar if shape_of(x_bar) == sizes else sum_to(x_bar, sizes)  # size-1 axes broadcast


def _batch(args: list, batched: tuple, size: int, *, subs: str) -> Any:
    ins, out = _parts(subs)
    b = _unused(subs)[0]  # the batch axis: one more index, kept in the output
    ins = [b + s if bt else s for s, bt in zip(ins, batched)]
    return einsum(*args, subs=",".join(ins) + "->" + b + out)


einsum = Primitive(  # symbolic: numpy's einsum works on arrays of sympy expressions
    "einsum", _einsum,
    jvp=Each(_jvp), vjp=Each(_vjp), saves=("xs",), batch=_batch,
    array_api=lambda xp, *xs, subs: xp.einsum(subs, *xs),
    kind="contraction",
    complex=True,
)
