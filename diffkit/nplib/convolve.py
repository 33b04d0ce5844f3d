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
from .base import getitem
from .math import conj
from .contract import tensordot
from .shaping import flip, pad

MODES = ("full", "same", "valid")


def full_convolution(a: Any, v: Any) -> Any:
    """The full n-D convolution of ``a`` and ``v`` (same number of axes): shape ``n + m - 1``
    per axis."""
    n, m = shape(a), shape(v)
    padded = pad(a, [(k - 1, k - 1) for k in m])
    rank = len(n)
    idx = []
    for axis, (na, mv) in enumerate(zip(n, m)):
        out_at = [1] * (2 * rank)
        out_at[axis] = na + mv - 1
        window_at = [1] * (2 * rank)
        window_at[rank + axis] = mv
        idx.append(np.arange(na + mv - 1).reshape(out_at) + np.arange(mv).reshape(window_at))
    windows = getitem(padded, tuple(idx))  # windows[k, j] = padded[k + j]
    return tensordot(windows, flip(v), axes=rank)


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
