"""A numpy-like namespace whose functions every diffkit backend can differentiate.

Write functions against it exactly as against numpy::

    import diffkit.numpy as dnp

    def f(x):
        return dnp.sum(dnp.sin(x) ** 2) / x.size

Called on plain numbers or arrays, these are numpy (results are ordinary numpy
values); called inside ``dk.grad``, ``dk.jvp``... they record or propagate
derivatives. Functions here are thin: they normalise arguments (``axis``, shapes,
indices) and call a primitive from :mod:`diffkit.primitives`, or compose primitives.
"""

from __future__ import annotations

import functools as _functools
import inspect as _inspect
from typing import Any as _Any

import numpy as _np

from . import primitives as _p
from .core import Box as _Box, DiffkitError as _DiffkitError, bind as _bind, primal as _primal
from .nplib import base as _base, contract as _contract, fft, linalg  # noqa: F401
from .nplib import math as _math, shaping as _shaping, stats as _stats
from .nplib import convolve as _convolve, numpy2 as _numpy2
from .nplib import building as _building, nanfunctions as _nanfunctions, polynomial as _polynomial
from .nplib import quantiles as _quantiles, sampled as _sampled, value_only as _value_only
from .nplib import rearranging as _rearranging
from .nplib.base import *  # noqa: F403
from .nplib.contract import *  # noqa: F403
from .nplib.convolve import *  # noqa: F403
from .nplib.math import *  # noqa: F403
from .nplib.shaping import *  # noqa: F403
from .nplib.stats import *  # noqa: F403
from .nplib.numpy2 import *  # noqa: F403
from .nplib.building import *  # noqa: F403
from .nplib.nanfunctions import *  # noqa: F403
from .nplib.polynomial import *  # noqa: F403
from .nplib.quantiles import *  # noqa: F403
from .nplib.sampled import *  # noqa: F403
from .nplib.value_only import *  # noqa: F403
from .nplib.rearranging import *  # noqa: F403
from .primitives.compare import COMPARISONS as _MASKS
from .primitives.compare import mask as _mask

# --------------------------------------------------------------------------- numpy protocol

_UFUNCS = {prim.ufunc: prim for prim in _p.table().values() if prim.ufunc is not None}
_UFUNCS[_np.matmul] = matmul
_COMPARISONS = {_np.less, _np.less_equal, _np.greater, _np.greater_equal, _np.equal,
                _np.not_equal, _np.isfinite, _np.isnan, _np.isinf}
_FUNCTIONS = {"sum", "prod", "max", "min", "amax", "amin", "mean", "where", "clip", "dot",
              "matmul", "reshape", "ravel", "transpose", "concatenate", "stack", "expand_dims",
              "broadcast_to"}
_SHAPE_QUERIES = {"shape", "ndim", "size", "result_type", "zeros_like", "ones_like", "allclose",
                  "isclose"}


def _unsupported(what: str, name: str) -> _DiffkitError:
    """One line: what is missing, and where the functions that do exist are listed."""
    return _DiffkitError(
        f"{what} does not support values being differentiated: diffkit.numpy has no {name}; "
        f"write it with the {len(__all__)} functions of dir(diffkit.numpy) "
        "(docs/numpy-coverage.md)")


def _dispatch_ufunc(self: _Box, ufunc: _np.ufunc, method: str, *inputs: _Any,
                    **kwargs: _Any) -> _Any:
    """``np.sin(box)`` and ``ndarray + box`` land here (``Box.__array_ufunc__``)."""
    if method == "__call__" and not kwargs:
        if ufunc in _UFUNCS:
            return _UFUNCS[ufunc](*inputs)
        if ufunc in _MASKS:
            return _mask(ufunc, *inputs)
        if ufunc in _COMPARISONS:
            return ufunc(*(_primal(i) for i in inputs))
    raise _unsupported(f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"),
                       ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}")


# numpy arguments that change nothing at these values (dropped before calling diffkit.numpy)
_NEUTRAL = {"out": None, "where": True, "casting": "same_kind", "subok": False, "order": "C",
            "copy": None, "dtype": None}


def _dispatch_function(self: _Box, func: _Any, types: _Any, args: tuple, kwargs: dict) -> _Any:
    """``np.sum(box)`` and friends land here (``Box.__array_function__``); anything
    unsupported is a clear error.

    The call is read with numpy's own signature (so ``np.sum(x, 0, None, None, True)``
    and ``np.clip(x, a_min=0)`` mean what numpy says), then passed on by name.
    """
    name = func.__name__
    if name in _SHAPE_QUERIES:
        return func(*(_primal(a) for a in args), **kwargs)
    if func.__module__ == "numpy.linalg" and name in linalg.__all__:
        return getattr(linalg, name)(*args, **kwargs)
    if func.__module__ == "numpy.fft" and name in fft.__all__:
        return getattr(fft, name)(*args, **kwargs)
    if name not in _FUNCTIONS:
        raise _unsupported(f"{func.__module__}.{name}()", name)
    ours = globals()[{"amax": "max", "amin": "min"}.get(name, name)]
    theirs = _signature(func)
    try:
        bound = theirs.bind(*args, **kwargs)
    except TypeError as exc:
        raise _DiffkitError(f"numpy.{name}(): {exc}") from None
    positional, named = [], {}
    for key, value in bound.arguments.items():
        param = theirs.parameters[key]
        if param.kind is param.VAR_KEYWORD:  # (np.clip's **kwargs)
            named.update(value)
        elif param.kind is param.VAR_POSITIONAL:  # (np.einsum's *operands)
            positional.extend(value)
        elif param.kind is param.POSITIONAL_ONLY or param.default is param.empty:
            positional.append(value)
        else:
            named[key] = value
    accepted = _signature(ours).parameters
    for key, value in list(named.items()):
        if key not in accepted:
            if not (key in _NEUTRAL and _same(value, _NEUTRAL[key])):
                raise _DiffkitError(f"numpy.{name}(): the argument {key}={value!r:.30} is not "
                                   "supported on values being differentiated; leave it out")
            del named[key]
    return ours(*positional, **named)


def _same(value: _Any, neutral: _Any) -> bool:
    return value is neutral or (isinstance(value, (bool, str)) and value == neutral)


@_functools.cache
def _signature(fn: _Any) -> _inspect.Signature:
    return _inspect.signature(fn)


def _install_operators() -> None:
    """Give :class:`Box` numpy's operators, array methods and protocols, via the primitives."""
    def binary(prim: _p.Primitive) -> tuple[_Any, _Any]:
        return (lambda self, o: _bind(prim, self, o)), (lambda self, o: _bind(prim, o, self))

    for name, prim in [("add", _p.add), ("sub", _p.sub), ("mul", _p.mul), ("truediv", _p.div),
                       ("pow", _p.power)]:
        forward, reflected = binary(prim)
        setattr(_Box, f"__{name}__", forward)
        setattr(_Box, f"__r{name}__", reflected)
    _Box.__matmul__ = lambda self, o: matmul(self, o)
    _Box.__rmatmul__ = lambda self, o: matmul(o, self)
    for name, ufunc in [("lt", _np.less), ("le", _np.less_equal), ("gt", _np.greater),
                        ("ge", _np.greater_equal), ("eq", _np.equal), ("ne", _np.not_equal)]:
        setattr(_Box, f"__{name}__", lambda self, o, ufunc=ufunc: _mask(ufunc, self, o))
    _Box.__neg__ = lambda self: _bind(_p.neg, self)
    _Box.__pos__ = lambda self: self
    _Box.__abs__ = lambda self: _bind(_p.abs, self)
    _Box.__getitem__ = lambda self, idx: getitem(self, idx)
    _Box.T = property(lambda self: transpose(self))
    for name in ["sum", "mean", "prod", "max", "min", "dot"]:
        setattr(_Box, name, globals()[name])
    # numpy's method forms: x.reshape(2, 3) as well as x.reshape((2, 3)); x.transpose(1, 0)
    _Box.reshape = lambda self, *s: reshape(self, s[0] if len(s) == 1 else s)
    _Box.transpose = lambda self, *a: transpose(self, (a[0] if len(a) == 1 else a) or None)
    _Box.__array_ufunc__ = _dispatch_ufunc
    _Box.__array_function__ = _dispatch_function


_install_operators()



def _install_methods() -> None:
    """The rest of numpy's array methods and the ``%``, ``//`` and ``divmod`` operators."""
    methods = {"var": var, "std": std, "cumsum": cumsum, "cumprod": cumprod, "clip": clip,
               "squeeze": squeeze, "ravel": ravel, "flatten": ravel, "copy": copy,
               "diagonal": diagonal, "trace": trace, "swapaxes": swapaxes, "repeat": repeat,
               "take": take, "round": round, "astype": lambda self, dtype, *_, **__: _rearranging.astype(self, dtype), "conj": conj,
               "conjugate": conj}
    for name, fn in methods.items():
        setattr(_Box, name, fn)
    _Box.real = property(real)
    _Box.imag = property(imag)
    _Box.__mod__, _Box.__rmod__ = (lambda self, o: mod(self, o)), (lambda self, o: mod(o, self))
    _Box.__floordiv__ = lambda self, o: floor_divide(self, o)
    _Box.__rfloordiv__ = lambda self, o: floor_divide(o, self)
    _Box.__divmod__ = lambda self, o: divmod(self, o)
    _Box.__rdivmod__ = lambda self, o: divmod(o, self)


_install_methods()
_FAMILIES = (_base, _contract, _convolve, _math, _shaping, _stats, _numpy2, _building,
             _nanfunctions, _polynomial, _quantiles, _sampled, _value_only, _rearranging)
_UFUNCS.update({getattr(_np, name): globals()[name]  # np.square(box), np.isnan(box) ...
                for name in (n for m in _FAMILIES for n in m.__all__)
                if isinstance(getattr(_np, name, None), _np.ufunc)
                and getattr(_np, name) not in {*_UFUNCS, *_MASKS, *_COMPARISONS}})
_FUNCTIONS |= {name for m in _FAMILIES for name in m.__all__ if hasattr(_np, name)}
__all__ = sorted({"fft", "linalg", *(name for m in _FAMILIES for name in m.__all__)})


def __dir__() -> list[str]:
    """Only the functions and constants of the namespace (not the helpers it imports)."""
    return list(__all__)


del annotations  # (the __future__ flag, not a function of the namespace)
