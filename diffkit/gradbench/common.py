"""What every GradBench eval module declares, and GradBench's way of comparing outputs.

An eval (:class:`Eval`) is GradBench's module of that name: its functions, its input sizes
(named as GradBench's eval describes them in its ``evaluate`` messages: ``"n=2500"`` for
``lse``, ``"2_5_1000"`` for ``gmm``), the input GradBench generates for a size (same
procedure, same seed), how a JSON input becomes arrays, how each function is run by a
diffkit backend, and an independent reference: the output computed by a gradient derived
by hand in plain numpy, as GradBench's ``manual`` tool does.

GradBench validates an output against its reference number by number with ADBench's
relative difference ``|a − e| / max(1, |a| + |e|)`` and a tolerance of 1e-4
(:func:`mismatches`).

>>> mismatches({"a": [1.0, 2.0]}, {"a": [1.0, 2.0001]})
[]
>>> mismatches([1.0, 2.0], [1.0, 2.1])
['[1]: expected 2.0, got 2.1']
>>> mismatches({"a": 1.0}, {"b": 1.0})
['a: missing from the output', 'b: not expected in the output']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import Backend
from ..core import DiffkitError
from ..transforms.functional import grad

TOLERANCE = 1e-4  # GradBench's (python/gradbench/gradbench/comparison.py)

# prepared input: (static values, arrays). Static values are the ints and options a compiled
# backend bakes into its program (a size, a step count); the arrays are its inputs.
Prepared = tuple[tuple, tuple]
# a function as a backend runs it: (static, *arrays) -> the raw result
Runner = Callable[..., Any]


class InputError(DiffkitError):
    """An evaluate message's input is not what the eval's protocol says it is."""


@dataclass(frozen=True)
class Eval:
    """One GradBench eval as diffkit implements it.

    ``sizes`` are GradBench's default workloads in the order it sends them; ``inputs(size)``
    is the input GradBench sends for that size (without ``min_runs`` / ``min_seconds``).
    ``prepare(input)`` turns a JSON input into ``(static, arrays)`` (not timed);
    ``build(function, backend)`` gives the function as ``backend`` runs it, called as
    ``run(static, *arrays)`` (built once per backend and function: a compiled backend keeps
    its programs); ``output(function, result)`` is the JSON output; ``reference(function,
    input)`` the JSON output of the hand-derived numpy implementation.
    """

    name: str
    functions: tuple[str, ...]
    sizes: tuple[str, ...]
    inputs: Callable[[str], dict[str, Any]]
    prepare: Callable[[dict[str, Any]], Prepared]
    build: Callable[[str, Backend], Runner]
    output: Callable[[str, Any], Any]
    reference: Callable[[str, dict[str, Any]], Any]
    summary: str = ""

    def input(self, size: str) -> dict[str, Any]:
        """GradBench's input for ``size``, or a DiffkitError naming the sizes there are."""
        if size not in self.sizes:
            raise DiffkitError(f"unknown size {size!r} for {self.name}; its sizes are "
                               f"{', '.join(self.sizes)}")
        return self.inputs(size)

    def check_function(self, function: str) -> None:
        if function not in self.functions:
            raise DiffkitError(f"{self.name} has no function {function!r}; its functions are "
                               f"{', '.join(self.functions)}")

    def validate(self, function: str, input: dict[str, Any], output: Any,
                 tolerance: float = TOLERANCE) -> list[str]:
        """GradBench's analysis of ``output``: the mismatches against the reference."""
        return mismatches(self.reference(function, input), output, tolerance)


def difference(actual: float, expected: float) -> float:
    """ADBench's relative difference, as GradBench compares numbers."""
    return abs(actual - expected) / max(1.0, abs(actual) + abs(expected))


def mismatches(expected: Any, actual: Any, tolerance: float = TOLERANCE,
               path: str = "") -> list[str]:
    """Where JSON value ``actual`` differs from ``expected``: lists element by element (equal
    lengths), objects key by key, numbers within ``tolerance`` by :func:`difference`
    (an int and a float compare as numbers), anything else by equality."""
    number = (int, float)
    if isinstance(expected, number) and isinstance(actual, number) \
            and not isinstance(expected, bool) and not isinstance(actual, bool):
        if not difference(float(actual), float(expected)) <= tolerance:  # (NaN fails)
            return [f"{path}: expected {expected}, got {actual}"]
        return []
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(set(expected) | set(actual)):
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                found.append(f"{where}: missing from the output")
            elif key not in expected:
                found.append(f"{where}: not expected in the output")
            else:
                found += mismatches(expected[key], actual[key], tolerance, where)
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} entries, got {len(actual)}"]
        return [m for i, (e, a) in enumerate(zip(expected, actual))
                for m in mismatches(e, a, tolerance, f"{path}[{i}]")]
    if type(expected) is not type(actual):
        return [f"{path}: expected a {type(expected).__name__}, got a {type(actual).__name__}"]
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


# --------------------------------------------------------------------------- input helpers


def field(input: Any, name: str) -> Any:
    if not isinstance(input, dict):
        raise InputError(f"the input must be a JSON object, got {type(input).__name__}")
    if name not in input:
        raise InputError(f"the input has no field {name!r}")
    return input[name]


def floats(input: dict[str, Any], name: str, ndim: int) -> np.ndarray:
    """Field ``name`` as a float array of ``ndim`` dimensions (a rectangular nested list)."""
    value = field(input, name)
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"field {name!r} must be a{' nested' * (ndim > 1)} list of numbers"
                         ) from None
    if arr.ndim != ndim and not (ndim == 2 and arr.size == 0 and arr.ndim in (1, 2)):
        raise InputError(f"field {name!r} must have {ndim} dimension(s), got shape {arr.shape}")
    return arr.reshape(len(value), -1) if ndim == 2 and arr.ndim != 2 else arr


def integer(input: dict[str, Any], name: str, least: int = 0) -> int:
    value = field(input, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) \
            or value < least:
        raise InputError(f"field {name!r} must be an integer >= {least}, got {value!r}")
    return int(value)


def number(input: dict[str, Any], name: str) -> float:
    value = field(input, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"field {name!r} must be a number, got {value!r}")
    return float(value)


def to_json(value: Any) -> Any:
    """A result as JSON data: an array as (nested) lists of floats, a scalar as a float."""
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def legacy_draws(seed: int, sizes: list[tuple[Any, Callable]], upto: Any) -> Any:
    """What GradBench's ``np.random.seed(seed)`` then one draw per workload in order gives
    for workload ``upto``: ``sizes`` lists (workload, draw(random_state)) in GradBench's
    order; the draws before ``upto`` are replayed so that its numbers are the same."""
    rs = np.random.RandomState(seed)
    for size, draw in sizes:
        value = draw(rs)
        if size == upto:
            return value
    raise DiffkitError(f"no workload {upto!r}")


# --------------------------------------------------------------------------- runners


def primal_runner(fun: Callable[..., Any], backend: Backend) -> Runner:
    """``fun(*arrays, *static)`` as ``backend`` runs a whole call: as it is (numpy through
    :mod:`diffkit.numpy`), or one program per static values and shapes (compiled)."""
    return backend.stage(lambda static, *arrays: fun(*arrays, *static))


def gradient_runner(fun: Callable[..., Any], backend: Backend,
                    argnums: int | tuple[int, ...] = 0) -> Runner:
    """The gradient of ``fun(*arrays, *static)`` w.r.t. ``argnums`` by ``backend``
    (``dk.grad``: a compiled backend builds one program per static values and shapes)."""
    g = grad(fun, argnums=argnums, backend=backend)
    return lambda static, *arrays: g(*arrays, *static)
