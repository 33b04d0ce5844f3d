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

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from ..core import DiffkitError, namespace, primal
from ..transforms.functional import grad, jvp, value_and_grad
from ..transforms.loops import fori_loop, one_loop

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


class Indices:
    """An integer array (observations' cameras, correspondences) as a *static* value:
    hashable by its contents, so that a compiled backend bakes it into its program as a
    constant (its programs take float arrays as inputs; a gather by an index array that
    is an input is not something it traces).

    >>> Indices(np.array([0, 2])) == Indices([0, 2]), Indices([0, 2]) == Indices([0, 1])
    (True, False)
    """

    __slots__ = ("array", "_key")

    def __init__(self, array: Any) -> None:
        self.array = np.array(array, dtype=np.intp)
        self.array.flags.writeable = False
        self._key = (self.array.shape, hashlib.sha256(self.array.tobytes()).digest())

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Indices) and self._key == other._key


# ------------------------------------------------------------------ nested: particle, saddle

ETA, STOP, PATIENCE = 1e-5, 1e-5, 10       # GradBench's descent (cpp/gradbench/gd.hpp)
DESCENT_LIMIT = 100_000                    # iterations of a descent on values (never traced)


class Unfinished(DiffkitError):
    """A bounded loop of a traced-or-not function ran out of iterations."""


def value_and_gradient(f: Callable[..., Any], mode: str, backend: Backend,
                       has_aux: bool = False) -> Callable[..., tuple]:
    """``(x, *data) -> (f, ∇ₓf)`` for f(x, *data) of a vector x (``(f, ∇ₓf, aux)`` when
    f returns ``(value, aux)``), by ``backend``'s reverse transform (mode ``"r"``:
    :func:`~diffkit.value_and_grad`, one VJP) or its forward transform (``"f"``:
    :func:`~diffkit.jvp` along each unit vector of x, as GradBench's tools take a
    gradient in forward mode). ``data`` are passed to the transform, not closed over: a
    compiled backend's program (or the graph it is traced into) takes them as inputs.

    >>> import diffkit as dk
    >>> f = lambda x, a: dnp.sum(a * x * x)
    >>> [value_and_gradient(f, m, dk.backend("reverse"))(np.ones(2), 3.0)[1].tolist()
    ...  for m in "fr"]
    [[6.0, 6.0], [6.0, 6.0]]
    """
    if mode == "r":
        vg = value_and_grad(f, argnums=0, backend=backend, has_aux=has_aux)
        if not has_aux:
            return vg

        def reverse(x: Any, *data: Any) -> tuple:
            (value, aux), gradient = vg(x, *data)
            return value, gradient, aux

        return reverse

    def forward(x: Any, *data: Any) -> tuple:
        still = tuple(dnp.zeros_like(d) for d in data)
        outs = [jvp(f, (x, *data), (unit, *still), backend=backend)
                for unit in np.eye(x.shape[0])]
        gradient = dnp.stack([t[0] if has_aux else t for _, t in outs])
        value = outs[0][0]
        return (value[0], gradient, value[1]) if has_aux else (value, gradient)

    return forward


def settled(flag: Any) -> bool:
    """True when ``flag`` is known to be true: a value (under any transform but a graph
    being traced, whose values are not known yet, and JAX's, whose tracers are not asked
    theirs) that is true. A bounded loop stops early on it; a traced one runs all its
    iterations (a finished state being a fixed point of the step, the result is the same)."""
    value = primal(flag)
    return not getattr(value, "abstract", False) and namespace() is None and bool(value)


def argmin(vg: Callable[..., tuple], x: Any, data: tuple, limit: int) -> tuple[Any, Any]:
    """GradBench's gradient descent on f from x (``vg(x, *data) = (f, ∇f)``), at most
    ``limit`` iterations: ``(the point, whether the descent stopped)``.

    Its iterations as gd.hpp has them: stop when ‖∇f‖ ≤ 10⁻⁵; double the step η after
    10 accepted steps; stop when the candidate x − η∇f is within 10⁻⁵ of x; accept it if
    f decreases there, else halve η. Each is :func:`descend`, written without branches,
    so that a compiled backend traces it as an eager one runs it: there the iterations are
    one ``dk.fori_loop`` of all ``limit`` of them (a finished state is a fixed point).

    >>> import diffkit as dk
    >>> vg = value_and_gradient(lambda x: dnp.sum(x * x), "r", dk.backend("reverse"))
    >>> x, done = argmin(vg, np.array([1.0, 1.0]), (), 1000)
    >>> bool(done), bool(np.all(np.abs(x) < 1e-4))
    (True, True)
    """
    value, gradient = vg(x, *data)
    state = (x, value, gradient, ETA, 0.0, False)
    if one_loop():  # one loop in the graph, every iteration run (a finished state is fixed)
        def step(i: Any, s: tuple) -> tuple:
            *moved, done = descend(vg, data, *s[:-1], s[-1] > 0.5)
            return (*moved, dnp.where(done, 1.0, 0.0))
        *state, done = fori_loop(0, limit, step, (*state[:-1], 0.0))
        return state[0], done > 0.5
    for _ in range(limit):
        if settled(state[-1]):
            break
        state = descend(vg, data, *state)
    return state[0], state[-1]


def descend(vg: Callable[..., tuple], data: tuple, x: Any, value: Any, gradient: Any,
            eta: Any, streak: Any, done: Any) -> tuple:
    """One iteration of :func:`argmin` by ``dnp.where`` (``streak``: steps accepted since
    η last changed). A finished state comes back unchanged (at once, when the stop is
    known: the candidate is then not evaluated, as gd.hpp does not). (gd.hpp doubles η in
    an iteration of its own, which leaves x alone; here it is folded into the next one.)"""
    stop = dnp.where(done, True, dnp.sqrt(dnp.sum(gradient * gradient)) <= STOP)
    doubled = streak == PATIENCE
    step = dnp.where(doubled, 2.0 * eta, eta)
    since = dnp.where(doubled, 0.0, streak)
    candidate = x - step * gradient
    stop = dnp.where(stop, True, dnp.sqrt(dnp.sum((x - candidate) * (x - candidate))) <= STOP)
    if settled(stop):  # known to stop (not traced): no need to evaluate the candidate
        return x, value, gradient, eta, streak, stop
    new_value, new_gradient = vg(candidate, *data)
    better = new_value < value
    take = dnp.where(stop, False, better)
    return (dnp.where(take, candidate, x), dnp.where(take, new_value, value),
            dnp.where(take, new_gradient, gradient),
            dnp.where(stop, eta, dnp.where(better, step, step / 2.0)),
            dnp.where(stop, streak, dnp.where(better, since + 1.0, 0.0)), stop)


def finished(vg: Callable[..., tuple]) -> Callable[..., tuple]:
    """``vg`` of a function whose aux says whether its bounded loop finished, as a plain
    ``(value, gradient)``: :class:`Unfinished` when it did not."""
    def checked(x: Any, *data: Any) -> tuple:
        value, gradient, done = vg(x, *data)
        if not done:
            raise Unfinished("a bounded loop ran out of iterations")
        return value, gradient

    return checked


def descent(vg: Callable[..., tuple], x: Any, data: tuple = ()) -> Any:
    """:func:`argmin` on values (the outermost descent: nothing differentiates it)."""
    x, done = argmin(vg, x, data, DESCENT_LIMIT)
    if not done:
        raise DiffkitError(f"the descent did not stop within {DESCENT_LIMIT} iterations")
    return x


def bounded_runner(solve: Callable[[int], Runner], limit: int, cap: int, what: str) -> Runner:
    """A runner whose function holds a bounded loop: ``solve(limit)`` is the function with
    that bound (built once per bound, so a compiled backend keeps its programs). A call
    that runs out (:class:`Unfinished`) is made again with twice the bound, up to
    ``cap``; the bound reached is kept for the next calls."""
    built: dict[int, Runner] = {}
    bound = [limit]

    def run(static: tuple, *arrays: Any) -> Any:
        while True:
            if bound[0] not in built:
                built[bound[0]] = solve(bound[0])
            try:
                return built[bound[0]](static, *arrays)
            except Unfinished:
                if 2 * bound[0] > cap:
                    raise DiffkitError(f"{what} did not finish within {bound[0]} "
                                       "iterations") from None
                bound[0] *= 2

    return run


def argmin_by_hand(f: Callable[[np.ndarray], float], g: Callable[[np.ndarray], np.ndarray],
                   x: np.ndarray) -> np.ndarray:
    """gd.hpp's loop as it is written, in plain numpy: the references' descent."""
    fx, gx, eta, streak = f(x), g(x), ETA, 0
    while True:
        if np.sqrt(np.sum(gx * gx)) <= STOP:
            return x
        if streak == PATIENCE:
            eta, streak = 2 * eta, 0
            continue
        candidate = x - eta * gx
        if np.sqrt(np.sum((x - candidate) ** 2)) <= STOP:
            return x
        f_candidate = f(candidate)
        if f_candidate < fx:
            x, fx, gx, streak = candidate, f_candidate, g(candidate), streak + 1
        else:
            eta, streak = eta / 2, 0
