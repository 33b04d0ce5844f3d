"""autograd.numpy.linalg: diffkit.numpy.linalg, numpy.linalg behind it."""
import numpy.linalg as _nl

import diffkit.numpy as _dnp

globals().update({k: getattr(_nl, k) for k in dir(_nl) if not k.startswith("__")})
globals().update({k: getattr(_dnp.linalg, k) for k in dir(_dnp.linalg) if not k.startswith("__")})

_dot = _dnp.matmul  # (autograd.numpy.linalg's helpers)


def T(x):  # noqa: N802
    return _dnp.swapaxes(x, -1, -2)


def norm(x, *args, **kwargs):  # (a list of values as one array, as in autograd.numpy)
    return _dnp.linalg.norm(_dnp.stack(x) if isinstance(x, (list, tuple)) else x, *args, **kwargs)
