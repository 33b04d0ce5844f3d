"""Input and output checks shared by the transforms and the backends.

Each failure is one :class:`~diffkit.core.DiffkitError` line that names what was
wrong and what to do instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Box, DiffkitError, primal, shape
from .primitives import is_complex


def as_input(x: Any, where: str) -> Any:
    """A value to differentiate at: real float numbers/arrays (ints become float64)."""
    if isinstance(x, Box):
        if np.result_type(primal(x)).kind == "c":  # (a graph's abstract value has a dtype only)
            raise _complex_error(where)
        return x
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise DiffkitError(f"{where} must be a real number or array; {exc}") from None
    kind = arr.dtype.kind
    if kind == "c":
        raise _complex_error(where)
    if kind not in "biuf":
        raise DiffkitError(
            f"{where} must be a real number or array, got {type(x).__name__} {x!r:.40}; "
            "pass floats or numpy arrays")
    if kind != "f":
        arr = arr.astype(np.float64)
    return arr[()] if arr.ndim == 0 else arr


def _complex_error(where: str) -> DiffkitError:
    return DiffkitError(
        f"{where} is complex: forward and reverse AD in diffkit differentiate real functions "
        "of real inputs; pass the real and imaginary parts as separate real arguments "
        "(the numeric backend's complex step is the place complex numbers are used)")


def _kind(y: Any) -> str:
    """The numpy kind of ``y``'s dtype (``"f"``, ``"c"``, ``"b"`` ...; ``"O"`` for anything
    numpy cannot read as an array)."""
    if isinstance(y, Box):
        return np.dtype(y.dtype).kind
    try:
        return np.asarray(y).dtype.kind
    except Exception:
        return "O"


def _not_float(y: Any, transform: str) -> DiffkitError | None:
    """The error for an output whose dtype has no derivative (bool, int), as JAX refuses."""
    kind = _kind(y)
    if kind in "biu":
        dtype = np.dtype(y.dtype if isinstance(y, Box) else np.asarray(y).dtype)
        return DiffkitError(
            f"{transform} requires a float output, but the function returned {dtype.name} "
            "(a comparison, a count or np.allclose has no derivative); return a float "
            "(e.g. x.sum(), not x.sum() > 0)")
    return None


def check_scalar(y: Any, transform: str) -> None:
    """``grad`` and friends need a real float scalar output."""
    wrong = _not_float(y, transform)
    if wrong is not None:
        raise wrong
    s = shape(y)
    if s != ():
        raise DiffkitError(
            f"{transform} requires the function to return a scalar, but it returned shape {s}; "
            "use dk.jacobian or dk.vjp for non-scalar outputs (or reduce it, e.g. dnp.sum)")
    if is_complex(y):
        raise DiffkitError(
            f"{transform} requires a real output, but the function returned a complex number; "
            "take a real part of it (dnp.real, dnp.imag, dnp.abs), or use dk.vjp")



def check_output(y: Any, transform: str) -> None:
    """Functions being differentiated must return one float array or number."""
    wrong = _not_float(y, transform)
    if wrong is not None:
        raise wrong
    if isinstance(y, Box):
        return
    if _kind(y) not in "fc":
        raise DiffkitError(
            f"{transform} requires the function to return a real number or array, got "
            f"{type(y).__name__}; return one array (use has_aux=True for extra outputs)")


def split_aux(out: Any) -> tuple[Any, Any]:
    """``(value, aux)`` from the output of a ``has_aux=True`` function."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise DiffkitError("has_aux=True needs the function to return a pair (value, aux), "
                           f"got {type(out).__name__}; return (value, aux) or drop has_aux")
    return out


def like_input(g: Any, x: Any) -> Any:
    """A gradient as the caller should receive it: its own writable array, in x's dtype."""
    if type(g) is not np.ndarray and not isinstance(g, np.generic):
        return g
    dtype = np.result_type(primal(x))
    if dtype.kind == "f" and g.dtype != dtype and g.dtype.kind != "c":  # (complex: an FFT's jacfwd)
        return g.astype(dtype)
    if type(g) is np.ndarray and (g.base is not None or not g.flags.writeable):
        return g.copy()
    return g
