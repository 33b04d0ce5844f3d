"""autograd.scipy.linalg: diffkit's where it has one, scipy.linalg behind it."""
import importlib

import scipy.linalg as _behind

globals().update({k: getattr(_behind, k) for k in dir(_behind) if not k.startswith("__")})
try:
    _first = importlib.import_module("diffkit.scipy.linalg")
except ImportError:
    _first = None
if _first is not None:
    globals().update({k: getattr(_first, k) for k in getattr(_first, "__all__", dir(_first))
                      if not k.startswith("_")})
