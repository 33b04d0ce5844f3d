"""``diffkit.numpy.fft``: numpy's discrete Fourier transforms, differentiable.

``fft``/``ifft`` (complex to complex), ``rfft`` (real to half spectrum) and ``irfft``
(half spectrum to real), each in its 1-d, 2-d and n-d form, with numpy's ``n``/``s``
(crop or pad with zeros), ``axis``/``axes`` and ``norm`` ("backward", "ortho",
"forward"). The outputs of ``fft`` and ``rfft`` are complex: take a real loss of them
with ``abs``, ``real``, ``imag`` or ``angle`` (or transform back with ``irfft``).
Derivatives follow JAX's convention for complex values (docs/complex.md); ``fft`` and
``ifft`` take complex inputs being differentiated too, ``rfft`` real ones only (as JAX).

>>> import diffkit as dk  # Parseval: sum |fft(x)|^2 = n sum x^2, whose gradient is 2 n x
>>> dk.grad(lambda x: dk.numpy.sum(abs(fft(x)) ** 2))(np.array([1.0, 2.0, 0.0, -1.0]))
array([ 8., 16.,  0., -8.])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.fft import fftfreq, rfftfreq  # noqa: F401

from .. import primitives as _p
from ..core import Box, DiffkitError, bind, namespace, ndim, shape
from .base import concatenate, getitem, zeros
from .shaping import roll


def _plain(a: Any) -> bool:
    """Plain numpy values: numpy's own transforms, to the last bit."""
    return not isinstance(a, Box) and namespace() is None


def _resize(x: Any, axis: int, n: int) -> Any:
    """``x`` cropped or padded with zeros to length ``n`` along ``axis``, as numpy's ``n``."""
    have = shape(x)[axis]
    if n < 1:
        raise DiffkitError(f"fft: invalid number of data points ({n}); give n >= 1")
    if n < have:
        return getitem(x, (Ellipsis, slice(0, n)) + (slice(None),) * (-axis - 1))
    if n > have:
        s = list(shape(x))
        s[axis] = n - have
        return concatenate([x, zeros(tuple(s))], axis=axis)
    return x


def _scale(y: Any, n: int, norm: str | None, inverse: bool) -> Any:
    """numpy's ``norm=`` on the unnormalized transforms (the inverses already divide by n)."""
    if norm in (None, "backward"):
        return y
    if norm == "ortho":
        return y * (np.sqrt(n) if inverse else 1.0 / np.sqrt(n))
    if norm == "forward":
        return y * (float(n) if inverse else 1.0 / n)
    raise DiffkitError(f"fft: norm={norm!r} is not one of 'backward', 'ortho', 'forward'")


def _axes(a: Any, s: Sequence[int] | None, axes: Sequence[int] | None) -> tuple[list[int], list[int]]:
    """Negative axes and their lengths, numpy's defaults: the last len(s) axes, or all."""
    n = ndim(a)
    if axes is None:
        axes = range(-(len(s) if s is not None else n), 0)
    axes = [a_ - n if a_ >= 0 else a_ for a_ in axes]
    if any(not -n <= a_ < 0 for a_ in axes) or len(set(axes)) != len(axes):
        raise DiffkitError(f"fft: axes {list(axes)} are out of range or repeated for an array "
                           f"of dimension {n}")
    if s is not None and len(s) != len(axes):
        raise DiffkitError("fft: s and axes must have the same length")
    return axes, list(s) if s is not None else [shape(a)[a_] for a_ in axes]


def _real_input(a: Any, name: str) -> None:
    if _p.is_complex(a):
        raise DiffkitError(f"fft.{name} needs a real input; use fft.{name[1:]} for complex values")


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Any:
    """The n-d discrete Fourier transform."""
    if _plain(a):
        return np.fft.fftn(a, s, axes, norm)
    return _complex_n(a, s, axes, norm, inverse=False)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """The n-d inverse discrete Fourier transform."""
    if _plain(a):
        return np.fft.ifftn(a, s, axes, norm)
    return _complex_n(a, s, axes, norm, inverse=True)


def _complex_n(a: Any, s: Sequence[int] | None, axes: Sequence[int] | None, norm: str | None,
               inverse: bool) -> Any:
    """fftn / ifftn of a traced value: resized to ``s`` on ``axes``, then one primitive."""
    axes, s = _axes(a, s, axes)
    for axis, n in zip(axes, s):
        a = _resize(a, axis, n)
    prim = _p.ifft if inverse else _p.fft
    return _scale(bind(prim, a, axes=tuple(axes)), int(np.prod(s)), norm, inverse=inverse)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """The n-d transform of a real input; the last axis keeps frequencies 0 .. n // 2."""
    if _plain(a):
        return np.fft.rfftn(a, s, axes, norm)
    _real_input(a, "rfftn")
    axes, s = _axes(a, s, axes)
    for axis, n in zip(axes, s):
        a = _resize(a, axis, n)
    y = bind(_p.rfft, a, axis=axes[-1])
    if len(axes) > 1:
        y = bind(_p.fft, y, axes=tuple(axes[:-1]))
    return _scale(y, int(np.prod(s)), norm, inverse=False)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Any:
    """The inverse of :func:`rfftn`: a real output, ``s[-1]`` long on the last axis
    (default ``2 (m - 1)`` for m input frequencies)."""
    if _plain(a):
        return np.fft.irfftn(a, s, axes, norm)
    given = s is not None
    axes, s = _axes(a, s, axes)
    if not given:
        s[-1] = 2 * (s[-1] - 1)
    for axis, n in zip(axes[:-1], s[:-1]):
        a = _resize(a, axis, n)
    if len(axes) > 1:
        a = bind(_p.ifft, a, axes=tuple(axes[:-1]))
    a = _resize(a, axes[-1], s[-1] // 2 + 1)
    return _scale(bind(_p.irfft, a, axis=axes[-1], n=s[-1]), int(np.prod(s)), norm, inverse=True)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The discrete Fourier transform along ``axis`` (cropped or padded to ``n``)."""
    return np.fft.fft(a, n, axis, norm) if _plain(a) else fftn(a, _one(n), [axis], norm)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return np.fft.ifft(a, n, axis, norm) if _plain(a) else ifftn(a, _one(n), [axis], norm)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return np.fft.rfft(a, n, axis, norm) if _plain(a) else rfftn(a, _one(n), [axis], norm)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return np.fft.irfft(a, n, axis, norm) if _plain(a) else irfftn(a, _one(n), [axis], norm)


def _one(n: int | None) -> list[int] | None:
    return None if n is None else [n]


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Any:
    return fftn(a, s, axes, norm)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    return ifftn(a, s, axes, norm)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    return rfftn(a, s, axes, norm)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Any:
    return irfftn(a, s, axes, norm)


def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Frequency 0 to the middle: a roll by n // 2 along ``axes`` (all by default)."""
    axes = tuple(range(ndim(x))) if axes is None else np.atleast_1d(axes).tolist()
    return roll(x, [shape(x)[a] // 2 for a in axes], axes)


def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    axes = tuple(range(ndim(x))) if axes is None else np.atleast_1d(axes).tolist()
    return roll(x, [-(shape(x)[a] // 2) for a in axes], axes)


__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq"]
