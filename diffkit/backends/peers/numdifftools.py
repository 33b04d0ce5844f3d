"""The ``numdifftools`` backend: adaptive finite differences with Richardson extrapolation.

numdifftools calls the function on plain numpy arrays (no array namespace needed). It
chooses a sequence of steps and extrapolates, so it is accurate to ~1e-10 or better on
smooth functions, at a few dozen evaluations per input. Options: ``method`` (central,
forward, backward, complex, multicomplex), ``order`` (error order; 2 by default) and
``step`` (None: numdifftools' own step sequence).

>>> import diffkit as dk, diffkit.numpy as dnp                                 # doctest: +SKIP
>>> float(dk.derivative(dnp.sin, backend="numdifftools")(0.0))                 # doctest: +SKIP
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ...core import DiffkitError
from . import PEERS, NumericPeer, to_numpy, ravelled

METHODS = ("central", "forward", "backward", "complex", "multicomplex")
TOOLS = {"grad": "Gradient", "jacobian": "Jacobian", "hessian": "Hessian"}


class NumdifftoolsBackend(NumericPeer):
    """numdifftools: ``Gradient``, ``Jacobian``, ``Hessian``, ``Derivative``."""

    name = "numdifftools"
    requires = PEERS["numdifftools"]
    defaults: ClassVar[dict[str, Any]] = {"method": "central", "order": 2, "step": None}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options["method"] not in METHODS:
            raise DiffkitError(f"numdifftools backend: unknown method "
                               f"{self.options['method']!r}; use one of {', '.join(METHODS)}")

    def _options(self, hessian: bool = False) -> dict[str, Any]:
        o = self.options
        if hessian:  # Hessian has its own methods; central is its default
            return {"step": o["step"]}
        return {"method": o["method"], "order": o["order"], "step": o["step"]}

    def flat(self, kind: str, fun: Callable, x: Any, out_shape: tuple[int, ...]) -> Any:
        tool = getattr(self.lib(), TOOLS[kind])
        x = np.asarray(self.check(x), dtype=float)
        d = tool(ravelled(fun, x.shape), **self._options(kind == "hessian"))(x.ravel())
        return to_numpy(np.reshape(d, out_shape))

    def derivative(self, fun: Callable, x: Any) -> Any:
        nd = self.lib()
        x = np.asarray(self.check(x), dtype=float)
        return to_numpy(nd.Derivative(fun, **self._options())(x))
