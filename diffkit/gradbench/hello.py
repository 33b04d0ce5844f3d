"""GradBench's ``hello``: the protocol's smoke test, f(x) = x² and its derivative.

Functions: ``square`` (x²) and ``double`` (the gradient of ``square``, 2x). The input is a
bare number (no ``min_runs`` / ``min_seconds``: one run); GradBench's eval starts at
x = 1 and feeds each output back: square(1) = 1, double(1) = 2, square(2) = 4, … The one
size here, ``x=1``, is that start.

>>> square(3.0), double_by_hand(3.0)
(9.0, 6.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import Backend
from .common import Eval, InputError, Prepared, Runner, gradient_runner, primal_runner, to_json

SIZES = ("x=1",)


def square(x: Any) -> Any:
    return x * x


def double_by_hand(x: float) -> float:
    return 2.0 * x


def inputs(size: str) -> float:
    return 1.0


def prepare(input: Any) -> Prepared:
    if isinstance(input, bool) or not isinstance(input, (int, float)):
        raise InputError(f"the input must be a number, got {type(input).__name__}")
    return (), (np.float64(input),)


def build(function: str, backend: Backend) -> Runner:
    return primal_runner(square, backend) if function == "square" else \
        gradient_runner(square, backend)


def output(function: str, result: Any) -> Any:
    return to_json(result)


def reference(function: str, input: Any) -> Any:
    x = float(prepare(input)[1][0])
    return x * x if function == "square" else double_by_hand(x)


EVAL = Eval("hello", ("square", "double"), SIZES, inputs, prepare, build, output, reference,
            "the protocol's smoke test: x² and 2x")
