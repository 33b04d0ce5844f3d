"""diffkit: symbolic, numeric, forward- and reverse-mode differentiation, side by side.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> f = lambda x: dnp.sum(dnp.sin(x) * x)
>>> dk.grad(f)([0.0, 1.0])          # reverse mode (default)
array([0.        , 1.38177329])
>>> dk.grad(f, backend="forward")([0.0, 1.0])
array([0.        , 1.38177329])
"""

from . import numpy  # noqa: F401  (diffkit.numpy, the expression API)
from .backends import Backend, backend, backends
from .core import DiffkitError, _install_operators
from .backends.reverse import Tensor, gradients, no_grad, tensor
from .transforms import derivative, grad, hessian, jacobian, jvp, value_and_grad, vjp
from .graph import graph
from .wengert import trace

_install_operators()

_LAZY = {"derive": "diffkit.backends.symbolic", "compare": "diffkit.bench.harness"}  # sympy is imported only when first used


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'diffkit' has no attribute {name!r}")

__version__ = "0.1.0"
__all__ = ["Backend", "DiffkitError", "Tensor", "backend", "backends", "compare", "derive", "derivative", "grad", "graph",
           "gradients", "hessian", "jacobian", "jvp", "no_grad", "tensor", "trace", "value_and_grad", "vjp"]
