"""diffkit: symbolic, numeric, forward- and reverse-mode differentiation, side by side.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> f = lambda x: dnp.sum(dnp.sin(x) * x)
>>> dk.grad(f)(np.array([0.0, 1.0]))          # reverse mode (default)
array([0.        , 1.38177329])
>>> dk.grad(f, backend="forward")(np.array([0.0, 1.0]))
array([0.        , 1.38177329])
"""

import importlib as _importlib

from . import numpy  # noqa: F401  (diffkit.numpy, the expression API)
from .backends import Backend, NotApplicable, backend, backends
from .core import DiffkitError
from .interpreters.batching import vmap
from .interpreters.tensor import Tensor, as_tensor, from_numpy, gradients, no_grad, tensor
from .transforms.checkpoint import checkpoint, checkpoint_loop
from .transforms.control import cond, switch
from .transforms.custom import Function, custom_jvp, custom_vjp
from .transforms.functional import (derivative, grad, hessian, hvp, jacfwd, jacobian, jacrev,
                                    jvp, stop_gradient, value_and_grad, vjp)
from .transforms.gradcheck import check_grads
from .transforms.loops import fori_loop, scan, while_loop
from .transforms.mode import get_mode, set_mode
from .transforms.odeint import odeint
from .transforms.record import record
from .transforms.solvers import custom_root, fixed_point, root
from .views.drawing import graph
from .views.wengert import trace

# imported when first used, as torch.nn is: sympy, the harness and training stay unloaded
_LAZY_NAMES = {"closed_form": "diffkit.interpreters.symbolic",
               "compare": "diffkit.bench.harness", "advise": "diffkit.bench.advise",
               "jit": "diffkit.compiler.jit", "make_graph": "diffkit.compiler.jit",
               # (scipy.sparse is imported on first use of a sparse derivative)
               **dict.fromkeys(("jacobian_sparsity", "hessian_sparsity", "sparse_jacobian",
                                "sparse_hessian"), "diffkit.transforms.sparse"),
               **dict.fromkeys(("jet", "derivatives"), "diffkit.transforms.taylor")}
_LAZY_MODULES = {"nn", "optim", "data"}


def __getattr__(name: str):
    if name in _LAZY_NAMES:
        return getattr(_importlib.import_module(_LAZY_NAMES[name]), name)
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"diffkit.{name}")
    raise AttributeError(f"module 'diffkit' has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = ["Backend", "DiffkitError", "Function", "NotApplicable", "Tensor", "advise", "as_tensor",
           "backend", "backends", "check_grads", "checkpoint", "checkpoint_loop", "closed_form",
           "compare", "cond", "custom_jvp", "custom_root", "custom_vjp", "data", "derivative",
           "derivatives", "fixed_point", "fori_loop", "from_numpy", "get_mode", "grad",
           "gradients", "graph", "hessian", "hessian_sparsity", "hvp", "jacfwd", "jacobian",
           "jacobian_sparsity", "jacrev", "jet", "jit", "jvp", "make_graph", "nn", "no_grad",
           "odeint", "optim", "record", "root", "scan", "set_mode", "sparse_hessian",
           "sparse_jacobian", "stop_gradient", "switch", "tensor", "trace", "value_and_grad",
           "vjp", "vmap", "while_loop"]
