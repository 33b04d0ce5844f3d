"""autograd.numpy: diffkit.numpy, with numpy's other names behind it."""
import numpy as _np
from numpy import *  # noqa: F403 (dtypes, constants and what diffkit.numpy lacks)

import diffkit.numpy as _dnp
from diffkit.numpy import *  # noqa: F403

import importlib as _importlib  # noqa: E402

for _name in [n for n in dir(_dnp) if not n.startswith("_")]:
    globals()[_name] = getattr(_dnp, _name)

# (these submodules, not diffkit's, which the loop above put under the same names)
fft, linalg, random = (_importlib.import_module(f"{__name__}.{m}")
                       for m in ("fft", "linalg", "random"))


def _stacking(reduce):
    """autograd's numpy takes a list of values being differentiated as one array (diffkit,
    as JAX, takes a list as a container): the stand-in stacks it first."""
    def call(x, *args, **kwargs):
        if isinstance(x, (list, tuple)):
            x = _dnp.stack(x)
        return reduce(x, *args, **kwargs)
    call.__name__ = reduce.__name__
    return call


for _name in ("mean", "var", "std", "sum", "prod", "max", "min", "average"):
    globals()[_name] = _stacking(getattr(_dnp, _name))


def __getattr__(name):
    return getattr(_np, name)


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """autograd's complement of diagonal: D (..., n) on the diagonal of (..., n, n)."""
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise NotImplementedError("make_diagonal supports offset=0, axis1=-1, axis2=-2 only")
    return D[..., None] * _np.eye(_np.shape(D)[-1])
