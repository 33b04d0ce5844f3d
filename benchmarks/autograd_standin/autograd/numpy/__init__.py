"""autograd.numpy: diffkit.numpy, with numpy's other names behind it."""
import numpy as _np
from numpy import *  # noqa: F403 (dtypes, constants and what diffkit.numpy lacks)

import diffkit.numpy as _dnp
from diffkit.numpy import *  # noqa: F403

from . import fft, linalg, random  # noqa: E402

numpy_names = [n for n in dir(_dnp) if not n.startswith("_")]
for _name in numpy_names:
    globals()[_name] = getattr(_dnp, _name)
fft, linalg, random = fft, linalg, random  # (not diffkit's submodules: these fall back to numpy)


def __getattr__(name):
    return getattr(_np, name)


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """autograd's complement of diagonal: D (..., n) on the diagonal of (..., n, n)."""
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise NotImplementedError("make_diagonal supports offset=0, axis1=-1, axis2=-2 only")
    return D[..., None] * _np.eye(_np.shape(D)[-1])
