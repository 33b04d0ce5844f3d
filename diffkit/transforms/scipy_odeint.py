"""SciPy's ``odeint`` signature over :func:`diffkit.odeint` (``scipy.integrate.odeint`` for
code written against SciPy, as autograd's ``autograd.scipy.integrate``), so the solution is
differentiable in ``y0``, ``t`` and ``args`` by every way that one offers. (It sits with
the transforms: ``diffkit.scipy`` is a layer below them.)

SciPy's LSODA switches to a stiff method by itself; :func:`diffkit.odeint` integrates with
Dormand–Prince 5(4) at SciPy's tolerances and refuses a stiff problem in one line.
``Dfun`` (LSODA's Jacobian) is not needed and is not called.

>>> import numpy as np
>>> ys = odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0]), args=(2.0,))
>>> ys.shape, round(float(ys[-1, 0]), 7)              # exp(-2)
((2, 1), 0.1353353)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import DiffkitError
from ..nplib.base import reshape
from .odeint import odeint as _odeint


def odeint(func: Callable[..., Any], y0: Any, t: Any, args: tuple = (), Dfun: Any = None,
           col_deriv: int = 0, full_output: int = 0, ml: Any = None, mu: Any = None,
           rtol: float | None = None, atol: float | None = None, tcrit: Any = None,
           h0: float = 0.0, hmax: float = 0.0, hmin: float = 0.0, ixpr: int = 0,
           mxstep: int = 0, mxhnil: int = 0, mxordn: int = 12, mxords: int = 5,
           printmessg: int = 0, tfirst: bool = False) -> Any:
    """y at the times ``t`` of ``dy/dt = func(y, t, *args)`` (``func(t, y, *args)`` with
    ``tfirst``), shaped ``(len(t), len(y0))`` as SciPy's; the options LSODA alone reads
    (``ml``, ``mu``, ``mxordn`` ...) are accepted and have no effect."""
    if full_output:
        raise DiffkitError("odeint: full_output (LSODA's diagnostics) is not available; "
                           "call it without full_output")
    if not isinstance(args, tuple):
        args = (args,)
    rhs = (lambda y, s, *ps: func(s, y, *ps)) if tfirst else func
    return _odeint(rhs, reshape(y0, (-1,)), t, *args,
                   rtol=1.49012e-8 if rtol is None else rtol,
                   atol=1.49012e-8 if atol is None else atol,
                   mxstep=mxstep or np.inf, hmax=hmax or np.inf)


__all__ = ["odeint"]
