"""Input and output checks shared by the transforms and the backends.

Each failure is one :class:`~diffkit.core.DiffkitError` line that names what was
wrong and what to do instead.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import numpy as np

from .core import Box, DiffkitError, primal, shape
from .primitives import is_complex


def as_input(x: Any, where: str) -> Any:
    """A value to differentiate at: float or complex numbers/arrays (ints become float64).

    >>> as_input(2, "x"), as_input([1 + 2j], "x")
    (np.float64(2.0), array([1.+2.j]))
    """
    if isinstance(x, Box):
        return x
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists, or another library's traced array
        if _traced_elsewhere(x):
            return x
        raise DiffkitError(f"{where} must be a real number or array; {exc}") from None
    kind = arr.dtype.kind
    if kind not in "biufc":
        raise DiffkitError(
            f"{where} must be a real number or array (or a complex one), got "
            f"{type(x).__name__} {x!r:.40}; pass floats or numpy arrays")
    if kind not in "fc":
        arr = arr.astype(np.float64)
    return arr[()] if arr.ndim == 0 else arr


def _traced_elsewhere(x: Any) -> bool:
    """A float array of another library that has no numpy value yet: a tracer of that
    library's transform, which a peer backend nested in it differentiates as it is."""
    try:
        return np.dtype(x.dtype).kind in "fc" and isinstance(x.shape, tuple)
    except (AttributeError, TypeError):
        return False


def _kind(y: Any) -> str:
    """The numpy kind of ``y``'s dtype (``"f"``, ``"c"``, ``"b"`` ...; ``"O"`` for anything
    numpy cannot read as an array)."""
    if isinstance(y, Box):
        return np.dtype(y.dtype).kind
    try:
        return np.asarray(y).dtype.kind
    except Exception:
        return np.dtype(y.dtype).kind if _traced_elsewhere(y) else "O"


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
    check_output(y, transform)  # (None, an empty tree, is no scalar either)
    s = shape(y)
    if s != ():
        raise DiffkitError(
            f"{transform} requires the function to return a scalar, but it returned shape {s}; "
            "use dk.jacobian or dk.vjp for non-scalar outputs (or reduce it, e.g. dnp.sum)")
    check_output_dtype(y, transform)


_HOLOMORPHIC: ContextVar[bool] = ContextVar("holomorphic", default=False)


class holomorphic:
    """Inside: the transform being run was given ``holomorphic=on`` (as JAX's ``grad``,
    ``jacfwd``, ``jacrev``); the output checks of the backends read it. (A class, not a
    generator: every call of a transformed function enters it.)"""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        self.token = _HOLOMORPHIC.set(self.on)

    def __exit__(self, *exc: object) -> None:
        _HOLOMORPHIC.reset(self.token)


def check_output_dtype(y: Any, transform: str) -> None:
    """JAX's rule for a reverse-mode output: real, unless ``holomorphic=True`` (then complex).

    >>> check_output_dtype(1j, "grad")
    Traceback (most recent call last):
    ...
    diffkit.core.DiffkitError: grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got complex128. For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions involving complex outputs, use dk.vjp directly.
    """
    name = np.dtype(y.dtype if hasattr(y, "dtype") else np.result_type(y)).name
    if _HOLOMORPHIC.get():
        if not is_complex(y):
            raise DiffkitError(f"{transform} with holomorphic=True requires outputs with complex "
                               f"dtype, but got {name}.")
    elif is_complex(y):
        raise DiffkitError(
            f"{transform} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {name}. For holomorphic differentiation, pass "
            "holomorphic=True. For differentiation of non-holomorphic functions involving "
            "complex outputs, use dk.vjp directly.")


def check_complex_inputs(leaves: list[Any], transform: str, holomorphic: bool,
                         forward: bool = False) -> None:
    """JAX's rule for inputs: complex with ``holomorphic=True``; with forward mode
    (``jacfwd``) real otherwise (a complex input of a non-holomorphic function has two
    real directions per entry: use ``dk.jvp``).

    >>> check_complex_inputs([1.0], "grad", holomorphic=True)
    Traceback (most recent call last):
    ...
    diffkit.core.DiffkitError: grad with holomorphic=True requires inputs with complex dtype, but got float64.
    """
    if not (holomorphic or forward):
        return  # reverse mode of a real function takes real and complex inputs alike
    for v in leaves:
        name = np.dtype(v.dtype if isinstance(v, Box) else np.result_type(v)).name
        if holomorphic and not is_complex(v):
            raise DiffkitError(f"{transform} with holomorphic=True requires inputs with complex "
                               f"dtype, but got {name}.")
        if forward and not holomorphic and is_complex(v):
            raise DiffkitError(
                f"{transform} requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.floating), but got {name}. For holomorphic differentiation, pass "
                "holomorphic=True. For differentiation of non-holomorphic functions involving "
                "complex inputs or integer inputs, use dk.jvp directly.")



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
    if dtype.kind == "c" and g.dtype.kind != "c":  # (the adjoint of a complex x through real(x))
        return g.astype(dtype)
    if type(g) is np.ndarray and (g.base is not None or not g.flags.writeable):
        return g.copy()
    return g
