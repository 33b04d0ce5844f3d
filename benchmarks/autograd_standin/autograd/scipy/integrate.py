"""autograd.scipy.integrate: diffkit's odeint with SciPy's signature, scipy.integrate behind it."""
import importlib

import scipy.integrate as _behind

globals().update({k: getattr(_behind, k) for k in dir(_behind) if not k.startswith("__")})
try:
    _first = importlib.import_module("diffkit.transforms.scipy_odeint")
except ImportError:
    _first = None
if _first is not None:
    globals().update({k: getattr(_first, k) for k in getattr(_first, "__all__", dir(_first))
                      if not k.startswith("_")})
