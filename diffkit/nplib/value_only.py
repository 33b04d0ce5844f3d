"""numpy functions whose results are booleans, integers or shapes (isnan, searchsorted,
unique, bincount, tril_indices ...): no derivative, so they run on the plain values under
the boxes. Comparisons and the elementwise tests (``isnan``, ``signbit`` ...) also run
under ``vmap``, one decision per example; the others refuse a batched value (decide
outside ``vmap``, or with ``dnp.where``).

>>> import diffkit as dk
>>> dk.grad(lambda x: (x * less(x, 2.0)).sum())(np.array([1.0, 3.0]))
array([1., 0.])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..core import Box, DiffkitError, primal
from ..primitives.compare import mask
from .byvalue import per_example


def _comparison(ufunc: np.ufunc) -> Any:
    @functools.wraps(ufunc)
    def compare(x1: Any, x2: Any) -> Any:
        return mask(ufunc, x1, x2)
    return compare


def _elementwise(fn: Any) -> Any:
    @functools.wraps(fn)
    def test(x: Any) -> Any:
        return per_example(x, lambda v, k: fn(v), fn.__name__)
    return test


def _plain(x: Any, name: str) -> Any:
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v, name) for v in x)
    if isinstance(x, Box) and (x.batched or x.abstract):
        raise DiffkitError(f"{name} of a value under vmap (or in a traced graph) is not "
                           "supported: call it outside, or write it with dnp.where")
    return primal(x)


def _by_value(fn: Any) -> Any:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return fn(*(_plain(a, fn.__name__) for a in args),
                  **{k: _plain(v, fn.__name__) for k, v in kwargs.items()})
    return run


less, less_equal, greater, greater_equal, equal, not_equal = (
    _comparison(u) for u in (np.less, np.less_equal, np.greater, np.greater_equal, np.equal,
                             np.not_equal))
isnan, isfinite, isinf, signbit, isneginf, isposinf, isreal, iscomplex = (
    _elementwise(f) for f in (np.isnan, np.isfinite, np.isinf, np.signbit, np.isneginf,
                              np.isposinf, np.isreal, np.iscomplex))
_PLAIN = ["logical_and", "logical_or", "logical_xor", "logical_not", "searchsorted", "digitize",
          "count_nonzero", "argwhere", "flatnonzero", "isclose", "allclose", "array_equal",
          "array_equiv", "unique", "unique_values", "unique_counts", "unique_inverse",
          "unique_all", "bincount", "histogram", "histogram_bin_edges", "histogram2d",
          "histogramdd", "argpartition", "lexsort", "isin", "shape", "ndim", "size", "tri",
          "identity", "empty", "empty_like", "indices", "tril_indices", "triu_indices",
          "tril_indices_from", "triu_indices_from", "diag_indices", "diag_indices_from",
          "mask_indices", "ix_", "iscomplexobj", "isrealobj", "isscalar", "broadcast_shapes",
          "can_cast", "result_type", "promote_types", "ravel_multi_index", "unravel_index",
          "intersect1d", "union1d", "setdiff1d", "setxor1d", "gcd", "lcm", "spacing", "nextafter",
          "bartlett", "blackman", "hamming", "hanning", "kaiser"]
globals().update({name: _by_value(getattr(np, name)) for name in _PLAIN})

__all__ = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "isnan",
           "isfinite", "isinf", "signbit", "isneginf", "isposinf", "isreal", "iscomplex", *_PLAIN]
