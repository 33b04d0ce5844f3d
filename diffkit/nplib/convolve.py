"""Convolution and correlation: numpy's 1-D ``convolve``/``correlate``, and the n-D form
behind ``diffkit.scipy.signal``.

A full convolution is a contraction of windows: the first input, zero-padded by the second
input's size less one on each side, is read through one index array per axis (``k + j``,
a ``getitem``), and the windows are contracted with the flipped second input (a
``tensordot``). Its derivatives are those of indexing (a scatter-add) and of a contraction,
so every backend and every order runs it. ``same`` and ``valid`` crop the full result, with
numpy's or SciPy's conventions; correlation is convolution with the second input flipped
and conjugated. (Direct, not by FFT: exact, and sized for the kernels models use.)

>>> convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])).tolist()
[0.0, 1.0, 2.5, 4.0, 1.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, ndim, shape
from .base import getitem, transpose
from .math import conj
from .contract import tensordot
from .shaping import flip, pad

MODES = ("full", "same", "valid")


def full_convolution(a: Any, v: Any, lead: int = 0, dots: int = 0) -> Any:
    """The full n-D convolution of ``a`` and ``v`` (same number of axes): shape ``n + m - 1``
    per axis.

    With ``lead`` and ``dots``, ``a`` is shaped ``(lead axes, dot axes, convolved axes)``
    and ``v`` ``(dot axes, convolved axes, other axes)``: the dot axes are summed over, and
    the result is shaped ``(lead axes, convolved axes, other axes)``.
    """
    fixed = lead + dots
    n = shape(a)[fixed:]
    m = shape(v)[dots:dots + len(n)]
    padded = pad(a, [(0, 0)] * fixed + [(k - 1, k - 1) for k in m])
    rank = len(n)
    idx = []
    for axis, (na, mv) in enumerate(zip(n, m)):
        out_at = [1] * (2 * rank)
        out_at[axis] = na + mv - 1
        window_at = [1] * (2 * rank)
        window_at[rank + axis] = mv
        idx.append(np.arange(na + mv - 1).reshape(out_at) + np.arange(mv).reshape(window_at))
    windows = getitem(padded, (slice(None),) * fixed + tuple(idx))  # [.., k, j] = padded[k + j]
    summed = list(range(lead, fixed)) + list(range(fixed + rank, fixed + 2 * rank))
    return tensordot(windows, flip(v, tuple(range(dots, dots + rank))),
                     axes=(summed, list(range(dots + rank))))


def tensor_convolution(a: Any, b: Any, axes: Any = None, dot_axes: Any = None,
                       mode: str = "full") -> Any:
    """autograd's generalized convolution: ``a`` and ``b`` convolved along the pairs of
    ``axes`` (all, by default), summed along the pairs of ``dot_axes``, and an outer product
    along the others; the result's axes are ``a``'s others, ``b``'s others, then one per
    convolved pair (``same``: centred on ``a``).

    >>> a, b = np.arange(6.0).reshape(2, 3), np.array([[1.0, 0.5], [0.0, 1.0]])
    >>> tensor_convolution(a, b, axes=([1], [1]), mode="valid").tolist()
    [[[1.0, 2.5], [0.0, 1.0]], [[5.5, 7.0], [3.0, 4.0]]]
    """
    axes = [list(range(ndim(a)))] * 2 if axes is None else [list(axs) for axs in axes]
    dot_axes = [[], []] if dot_axes is None else [list(axs) for axs in dot_axes]
    if len(axes) != 2 or len(dot_axes) != 2 or len(axes[0]) != len(axes[1]) or \
            len(dot_axes[0]) != len(dot_axes[1]):
        raise DiffkitError("convolve: axes and dot_axes are pairs of equally long lists of "
                           f"axes, one for each input, got axes={axes}, dot_axes={dot_axes}")
    (conv_a, conv_b), (dot_a, dot_b) = axes, dot_axes
    others_a = [k for k in range(ndim(a)) if k not in conv_a + dot_a]
    others_b = [k for k in range(ndim(b)) if k not in conv_b + dot_b]
    if any(shape(a)[i] != shape(b)[j] for i, j in zip(dot_a, dot_b)):
        raise DiffkitError(f"convolve: the dot_axes {dot_axes} have different lengths in the "
                           f"inputs' shapes {shape(a)} and {shape(b)}")
    n, m = [shape(a)[k] for k in conv_a], [shape(b)[k] for k in conv_b]
    if mode == "valid" and not (all(x >= y for x, y in zip(n, m)) or
                                all(x <= y for x, y in zip(n, m))):
        raise DiffkitError("convolve: in 'valid' mode one input must be at least as large as "
                           f"the other along every convolved axis, got {n} and {m}")
    full = full_convolution(transpose(a, others_a + dot_a + conv_a),
                            transpose(b, dot_b + conv_b + others_b), len(others_a), len(dot_a))
    lead, r = len(others_a), len(conv_a)  # full: (a's others, convolved, b's others)
    full = transpose(full, list(range(lead)) + list(range(lead + r, ndim(full)))
                     + list(range(lead, lead + r)))
    kept = shape(full)[:ndim(full) - r]
    return crop(full, kept + tuple(n), (1,) * len(kept) + tuple(m), mode)


def crop(full: Any, n: tuple[int, ...], m: tuple[int, ...], mode: str, numpy_same: bool = False) -> Any:
    """The ``mode`` part of a full convolution of inputs shaped ``n`` and ``m``: ``same`` is
    centred on ``n`` (SciPy) or on the longer input (``numpy_same``); ``valid`` keeps the
    entries where one input covers the other whole."""
    if mode not in MODES:
        raise DiffkitError(f"convolve: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "full":
        return full
    idx = []
    for na, mv, k in zip(n, m, shape(full)):
        if mode == "valid":
            start, size = min(na, mv) - 1, abs(na - mv) + 1
        elif numpy_same:
            start, size = (min(na, mv) - 1) // 2, max(na, mv)
        else:
            start, size = (k - na) // 2, na
        idx.append(slice(start, start + size))
    return getitem(full, tuple(idx))


def _vectors(name: str, a: Any, v: Any) -> None:
    if ndim(a) != 1 or ndim(v) != 1 or not shape(a)[0] or not shape(v)[0]:
        raise DiffkitError(f"{name}: a and v must be non-empty 1-d arrays, got shapes "
                           f"{shape(a)} and {shape(v)} (for n-d use diffkit.scipy.signal)")


def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    """numpy's ``convolve``: ``sum_j a[k - j] v[j]`` of two 1-d arrays; ``same`` has the
    longer input's length."""
    _vectors("convolve", a, v)
    return crop(full_convolution(a, v), shape(a), shape(v), mode, numpy_same=True)


def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """numpy's ``correlate``: ``sum_n a[n + k] conj(v[n])`` of two 1-d arrays.

    >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]), "full").tolist()
    [0.5, 2.0, 3.5, 3.0, 0.0]
    """
    _vectors("correlate", a, v)
    if shape(v)[0] > shape(a)[0]:  # numpy swaps them, and reverses and conjugates the result
        return conj(flip(correlate(v, a, mode)))
    return crop(full_convolution(a, flip(conj(v))), shape(a), shape(v), mode, numpy_same=True)


__all__ = ["convolve", "correlate"]
