"""``diffkit.scipy.signal``: n-D ``convolve`` and ``correlate`` with SciPy's modes, written
with the primitives (windows read by indexing, contracted with the kernel: see
:mod:`diffkit.nplib.convolve`), so they are differentiable in both inputs by every backend.

>>> import numpy as np
>>> convolve(np.ones((2, 2)), np.ones((2, 2))).tolist()
[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

from ..core import DiffkitError, ndim, shape
from ..nplib.convolve import crop, full_convolution, tensor_convolution
from ..nplib.math import conj
from ..nplib.shaping import flip


def _checked(name: str, in1: Any, in2: Any, mode: str) -> None:
    if ndim(in1) != ndim(in2):
        raise DiffkitError(f"{name}: in1 and in2 must have the same number of axes, got shapes "
                           f"{shape(in1)} and {shape(in2)}")
    if 0 in shape(in1) or 0 in shape(in2):
        raise DiffkitError(f"{name}: in1 and in2 must not be empty, got shapes {shape(in1)} and "
                           f"{shape(in2)}")
    if mode == "valid":
        bigger = [a >= b for a, b in zip(shape(in1), shape(in2))]
        smaller = [a <= b for a, b in zip(shape(in1), shape(in2))]
        if not (all(bigger) or all(smaller)):
            raise DiffkitError(f"{name}: in 'valid' mode one input must be at least as large as "
                               f"the other in every axis, got shapes {shape(in1)} and {shape(in2)}")


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto", *,
             axes: Any = None, dot_axes: Any = None) -> Any:
    """SciPy's ``convolve``: ``sum_j in1[k - j] in2[j]`` over every axis; ``same`` is
    centred on ``in1``. (``method`` is accepted for SciPy's signature; the sum is direct.)

    ``axes`` and ``dot_axes`` (autograd's extension) convolve along some pairs of axes,
    sum along others and take the outer product along the rest
    (:func:`~diffkit.nplib.convolve.tensor_convolution`).
    """
    if axes is not None or dot_axes is not None:
        return tensor_convolution(in1, in2, axes, dot_axes, mode)
    _checked("convolve", in1, in2, mode)
    if ndim(in1) == 0:
        return in1 * in2
    return crop(full_convolution(in1, in2), shape(in1), shape(in2), mode)


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """SciPy's ``correlate``: ``sum_n in1[n + k] conj(in2[n])`` over every axis.

    >>> import numpy as np
    >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.5]), "valid").tolist()
    [2.0, 3.5]
    """
    _checked("correlate", in1, in2, mode)
    if ndim(in1) == 0:
        return in1 * conj(in2)
    return crop(full_convolution(in1, flip(conj(in2))), shape(in1), shape(in2), mode)


__all__ = ["convolve", "correlate"]
