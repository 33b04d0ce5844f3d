"""diffkit: symbolic, numeric, forward- and reverse-mode differentiation, side by side.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> f = lambda x: dnp.sum(dnp.sin(x) * x)
>>> dk.grad(f)([0.0, 1.0])          # reverse mode (default)
array([0.        , 1.38177329])
>>> dk.grad(f, backend="forward")([0.0, 1.0])
array([0.        , 1.38177329])
"""

import importlib

from . import numpy  # noqa: F401  (diffkit.numpy, the expression API)
from .backends import Backend, NotApplicable, backend, backends
from .backends.record import record
from .backends.tensor import Tensor, as_tensor, from_numpy, gradients, no_grad, tensor
from .batching import vmap
from .checkpoint import checkpoint, checkpoint_loop
from .core import DiffkitError
from .custom import Function, custom_jvp, custom_vjp
from .gradcheck import check_grads
from .graph import graph
from .mode import get_mode, set_mode
from .transforms import (derivative, grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp,
                         stop_gradient, value_and_grad, vjp)
from .wengert import trace

# imported when first used, as torch.nn is: sympy, the harness and training stay unloaded
_LAZY_NAMES = {"derive": "diffkit.backends.symbolic", "compare": "diffkit.bench.harness",
               "advise": "diffkit.bench.advise", "jit": "diffkit.backends.compiled.jit",
               "make_graph": "diffkit.backends.compiled.jit"}
_LAZY_MODULES = {"nn", "optim", "data"}


def __getattr__(name: str):
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"diffkit.{name}")
    raise AttributeError(f"module 'diffkit' has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = ["Backend", "DiffkitError", "Function", "NotApplicable", "Tensor", "advise", "as_tensor",
           "backend", "backends", "check_grads", "checkpoint", "checkpoint_loop", "compare",
           "custom_jvp", "custom_vjp", "data", "derivative", "derive", "from_numpy", "get_mode",
           "grad", "gradients", "graph", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jit",
           "jvp", "make_graph", "nn", "no_grad", "optim", "record", "set_mode", "stop_gradient",
           "tensor", "trace", "value_and_grad", "vjp", "vmap"]
