"""The ``scipy`` backend: ``scipy.differentiate`` (SciPy >= 1.15).

Adaptive central differences with Richardson-like refinement until a tolerance is met,
the SciPy way: ``derivative`` (elementwise), ``jacobian`` and ``hessian``. SciPy calls
the function on a whole batch of points at once (extra trailing axes); diffkit's
functions take one point, so the batch is looped over here, and ``stats()`` counts
the evaluations. Options (SciPy's names): ``order`` (8), ``initial_step`` (0.5),
``step_factor`` (2.0), ``maxiter`` (10).

>>> import diffkit as dk, diffkit.numpy as dnp                          # doctest: +SKIP
>>> float(dk.derivative(dnp.sin, backend="scipy")(0.0))                  # doctest: +SKIP
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import PEERS, NumericPeer, to_numpy


def pointwise(fun: Callable[[Any], Any], size: int, counter: list[int]) -> Callable[[Any], Any]:
    """``fun`` of a flat vector of ``size``, applied to each point of a batch ``(size, ...)``."""
    def batch(X: Any) -> Any:
        X = np.asarray(X, dtype=float)
        extra = X.shape[1:]
        cols = X.reshape(size, -1)
        counter[0] += cols.shape[1]
        outs = [np.asarray(fun(cols[:, k]), dtype=float) for k in range(cols.shape[1])]
        out = np.stack(outs, axis=-1)
        return out.reshape(out.shape[:-1] + extra)
    return batch


class ScipyBackend(NumericPeer):
    """SciPy: ``scipy.differentiate.derivative``, ``jacobian``, ``hessian``."""

    name = "scipy"
    requires = PEERS["scipy"]
    defaults: ClassVar[dict[str, Any]] = {"order": 8, "initial_step": 0.5, "step_factor": 2.0, "maxiter": 10}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._fevals: int | None = None

    def _sd(self) -> Any:
        return self.lib()  # scipy.differentiate

    def flat(self, kind: str, fun: Callable, x: Any, out_shape: tuple[int, ...]) -> Any:
        x = np.asarray(self.check(x), dtype=float)
        counter = [0]
        f = pointwise(lambda v: fun(v.reshape(x.shape)), x.size, counter)
        opts = {k: self.options[k] for k in ("order", "maxiter", "initial_step", "step_factor")}
        tool = "hessian" if kind == "hessian" else "jacobian"  # a gradient is a 1-row Jacobian
        res = getattr(self._sd(), tool)(f, x.ravel(), **opts)
        self._fevals = counter[0]
        return to_numpy(np.reshape(res.ddf if tool == "hessian" else res.df, out_shape))

    def derivative(self, fun: Callable, x: Any) -> Any:
        """Elementwise: SciPy's batch of points goes to ``fun`` in one vectorized call."""
        x = np.asarray(self.check(x), dtype=float)
        o = self.options
        opts = {k: o[k] for k in ("order", "maxiter", "initial_step", "step_factor")}
        try:
            res = self._sd().derivative(fun, x, **opts)
        except (ValueError, TypeError):  # branches on a value (if x < 0:): one point a time
            res = self._sd().derivative(np.vectorize(fun, otypes=[float]), x, **opts)
        self._fevals = int(np.max(res.nfev))
        return to_numpy(res.df)

    def stats(self, fun: Callable, x: Any) -> dict[str, Any]:
        return {} if self._fevals is None else {"fevals": self._fevals}
