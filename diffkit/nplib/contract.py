"""Contractions: einsum in every form numpy accepts, and tensordot, inner, outer, kron,
vdot and n-d dot written as einsums (one primitive, whose rules are einsums again).

>>> float(einsum("i,i", np.array([1.0, 2.0]), np.array([3.0, 4.0])))
11.0
>>> einsum("...ij->...ji", np.ones((2, 3, 4))).shape
(2, 4, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from string import ascii_letters
from typing import Any

import numpy as np

from .. import primitives as _p
from ..core import DiffkitError, bind, ndim, shape
from .base import matmul, reshape


def _letters(sublist: Sequence[Any]) -> str:
    """numpy's sublist form ([0, 1], [Ellipsis, 2]) as subscripts."""
    return "".join("..." if s is Ellipsis else ascii_letters[s] for s in sublist)


def _explicit(subscripts: str, shapes: list[tuple[int, ...]]) -> str:
    """Subscripts with an output and no ellipsis: ``"...ij,jk"`` -> ``"abij,jk->abik"``."""
    subscripts = subscripts.replace(" ", "")
    ins_text, arrow, out = subscripts.partition("->")
    ins = ins_text.split(",")
    if len(ins) != len(shapes):
        raise DiffkitError(f"einsum: the subscripts name {len(ins)} operands but "
                           f"{len(shapes)} were given")
    spare = [c for c in ascii_letters if c not in subscripts]
    widest = 0
    for k, (s, sh) in enumerate(zip(ins, shapes)):
        named = len(s.replace("...", ""))
        if "..." in s:
            widest = max(widest, len(sh) - named)
        elif named != len(sh):
            raise DiffkitError(f"einsum: operand {k} has {len(sh)} axes but subscripts {s!r}")
    lead = "".join(spare[:widest])
    filled = [s.replace("...", lead[widest - (len(sh) - len(s.replace('...', ''))):])
              for s, sh in zip(ins, shapes)]
    if arrow:
        out = out.replace("...", lead)
    else:  # numpy's implicit output: the ellipsis, then the indices used once, sorted
        joined = "".join(s.replace("...", "") for s in ins)
        out = lead + "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    return ",".join(filled) + "->" + out


def einsum(*operands: Any, optimize: Any = None) -> Any:
    """Einstein summation, as ``numpy.einsum`` (subscripts string or sublist form)."""
    if operands and isinstance(operands[0], str):
        subscripts, xs = operands[0], list(operands[1:])
    else:  # einsum(a, [0, 1], b, [1, 2], [0, 2])
        pairs = list(operands)
        out = _letters(pairs.pop()) if len(pairs) % 2 else None
        xs = pairs[0::2]
        subscripts = ",".join(_letters(s) for s in pairs[1::2]) + ("" if out is None else "->" + out)
    return bind(_p.einsum, *xs, subs=_explicit(subscripts, [shape(x) for x in xs]))


def _normalise(axes: Any, n: int) -> list[int]:
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    return [a % n for a in axes]


def tensordot(a: Any, b: Any, axes: int | Sequence[Any] = 2) -> Any:
    """Sum products over the last ``axes`` axes of ``a`` and the first of ``b`` (or the
    pairs of axes given)."""
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(ndim(a) - axes, ndim(a))), list(range(int(axes)))
    else:
        ax_a, ax_b = _normalise(axes[0], ndim(a)), _normalise(axes[1], ndim(b))
    sa = list(ascii_letters[:ndim(a)])
    sb = list(ascii_letters[ndim(a):ndim(a) + ndim(b)])
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for k, c in enumerate(sa) if k not in ax_a] + [c for k, c in enumerate(sb) if k not in ax_b]
    return bind(_p.einsum, a, b, subs="".join(sa) + "," + "".join(sb) + "->" + "".join(out))


def inner(a: Any, b: Any) -> Any:
    """Sum over the last axes of ``a`` and ``b``."""
    if ndim(a) == 0 or ndim(b) == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


def outer(a: Any, b: Any) -> Any:
    return bind(_p.einsum, reshape(a, -1), reshape(b, -1), subs="i,j->ij")


def vdot(a: Any, b: Any) -> Any:
    """The dot product of the flattened arrays, ``a`` conjugated when complex (as numpy)."""
    a = bind(_p.conj, a) if _p.is_complex(a) else a
    return bind(_p.einsum, reshape(a, -1), reshape(b, -1), subs="i,i->")


def kron(a: Any, b: Any) -> Any:
    """Kronecker product: blocks a[i, j] * b."""
    d = max(ndim(a), ndim(b))
    a = reshape(a, (1,) * (d - ndim(a)) + shape(a))
    b = reshape(b, (1,) * (d - ndim(b)) + shape(b))
    la, lb = ascii_letters[:d], ascii_letters[d:2 * d]
    blocks = bind(_p.einsum, a, b, subs=f"{la},{lb}->" + "".join(x + y for x, y in zip(la, lb)))
    return reshape(blocks, tuple(m * n for m, n in zip(shape(a), shape(b))))


def dot(x: Any, y: Any) -> Any:
    """numpy's dot: scalar product, matrix product up to 2-d, and for n-d a sum over the
    last axis of ``x`` and the second-to-last of ``y``."""
    if ndim(x) == 0 or ndim(y) == 0:
        return x * y
    if ndim(x) <= 2 and ndim(y) <= 2:
        return matmul(x, y)
    return tensordot(x, y, axes=([-1], [-2 if ndim(y) > 1 else -1]))


__all__ = ["einsum", "tensordot", "inner", "outer", "vdot", "kron", "dot"]
