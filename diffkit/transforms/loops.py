"""Loops with JAX's names and meaning: ``scan``, ``fori_loop``, ``while_loop``.

On the eager backends a loop is a Python loop over the boxes: forward mode carries the
tangents along, reverse mode records every iteration that ran on its tape (memory grows
with their number; ``dk.checkpoint_loop`` trades it for recomputation), Taylor mode
carries its series. Under ``vmap`` a count known to every example is one loop over the
whole batch; a ``while_loop`` whose predicate differs per example runs until every
example has stopped, and an example that stopped keeps its carry (the body runs on the
whole batch, a select keeps the old carry where the predicate is false, and the body
reads through the predicate's gate, so no derivative leaks through a discarded step).

Under ``backend="compiled"`` (and ``dk.jit``) ``scan`` and a ``fori_loop`` whose bounds
are known when tracing are one ``scan`` equation (:mod:`.scan_equation`): the body traced
and compiled once, a loop calling it per step, whatever the number of steps. They unroll
(one copy of the body per step, as before) where the body cannot be traced on its own: it
indexes with ``fori_loop``'s ``i`` or branches on it, or its carries and ys mix dtypes. A
``while_loop`` whose predicate is traced is one ``while_loop`` equation
(:mod:`.while_equation`), differentiable in forward mode; reverse mode through it is
refused in one line naming ``dk.fori_loop``, as JAX refuses it.

Reverse mode through ``while_loop`` works here: the tape holds the iterations that
actually ran, so the gradient is that of the unrolled loop. JAX refuses it
(``jax.grad`` of ``lax.while_loop``: "Reverse-mode differentiation does not work for
lax.while_loop"), as XLA needs a static bound on memory; its forward mode works.

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> cumsum = lambda xs: dk.scan(lambda c, x: (c + x, c + x), 0.0, xs)[1]
>>> cumsum(np.array([1.0, 2.0, 3.0]))
array([1., 3., 6.])
>>> power = lambda a: dk.fori_loop(0, 3, lambda i, v: v * a, 1.0)
>>> float(dk.grad(power)(2.0)), float(dk.grad(power, backend="compiled")(2.0))
(12.0, 12.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import Box, DiffkitError, NotApplicable, in_batch, namespace, primal, shape
from ..compiler.passes import equation_key
from ..ir.graph import Eqn, Graph, Var
from ..ir.tracer import GraphTracer, trace_types, tracing
from ..pytree import Tree, flatten, structure, tree_map
from .control import (FORMULA, ONE, PER_EXAMPLE, TRACED, TreeType, gated, kind_of,
                      need_functions, need_integer, need_scalar, paths, spelled, type_of)
from .scan_equation import Body, packable, scan_p
from .scan_equation import type_of as type_of_value
from .while_equation import Cycle, check_test, while_p

_CARRY = "the carry must keep init's structure, shapes and dtypes from step to step"


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None,
         length: int | None = None, reverse: bool = False) -> tuple[Any, Any]:
    """``(carry, ys)``: ``carry, y = f(carry, x)`` for each ``x`` along the leading axis of
    ``xs`` (``jax.lax.scan``), the ``y`` stacked. ``xs`` and ``ys`` may be trees (each leaf
    scanned / stacked along axis 0), ``None`` with ``length`` steps; ``reverse`` runs from
    the last entry to the first, ``ys[t]`` still belonging to ``xs[t]``.

    >>> import numpy as np, diffkit as dk
    >>> step = lambda x, b: (0.5 * x + b, x)      # x_{t+1} = a x_t + b_t, ys: x_0 … x_{T-1}
    >>> dk.scan(step, 1.0, np.array([1.0, 0.0, 2.0]))
    (np.float64(2.375), array([1.  , 1.5 , 0.75]))
    """
    need_functions("dk.scan", {"f": f})
    lax = _peer_loops()
    if lax is not None:
        return lax.scan(f, init, xs, length=length, reverse=reverse)
    leaves, rebuild = flatten(xs)
    n = _steps(xs, leaves, length)
    native = _native(f, init, leaves, rebuild, n, reverse)
    if native is not None:
        return native
    carry, ys, carry_type, y_type = init, [], TreeType.of(init), None
    for t in range(n - 1, -1, -1) if reverse else range(n):
        out = f(carry, rebuild([leaf[t] for leaf in leaves]))
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise DiffkitError(f"dk.scan: f must return a pair (carry, y), got "
                               f"{type(out).__name__}; return (carry, None) for no y")
        carry, y = out
        carry_type.check("dk.scan", "f's carry", carry, "init", _CARRY)
        if y_type is None:
            y_type = TreeType.of(y)
        else:
            y_type.check("dk.scan", f"f's y at step {t}", y, "its first y",
                         "f must return a y of the same structure, shapes and dtypes every step")
        ys.append(y)
    if not ys:  # no step: the ys are empty, shaped like the y f would give (JAX traces f)
        with np.errstate(all="ignore"):
            y = f(init, rebuild([np.zeros(shape(v)[1:], type_of(v)[1]) for v in leaves]))[1]
        return init, tree_map(lambda v: np.zeros((0, *type_of(v)[0]), type_of(v)[1] or float), y)
    if reverse:
        ys.reverse()
    columns = zip(*(flatten(y)[0] for y in ys))
    return carry, flatten(ys[0])[1]([dnp.stack(list(c)) for c in columns])


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)`` (``jax.lax.fori_loop``).

    With bounds known (Python ints, or ints under any derivative), ``i`` is a Python int
    and the loop runs everywhere, the compiled backend unrolling it; bounds that differ per
    example (``vmap``) make it a :func:`while_loop` on ``(i, val)``, as in JAX.

    >>> import diffkit as dk
    >>> factorial = lambda n: dk.fori_loop(1, n + 1, lambda i, v: v * i, 1)
    >>> factorial(5)
    120
    """
    need_functions("dk.fori_loop", {"body_fun": body_fun})
    for name, bound in (("lower", lower), ("upper", upper)):
        need_scalar(f"dk.fori_loop: {name}", bound, "give one integer")
        need_integer(f"dk.fori_loop: {name}", bound)
    lax = _peer_loops()
    if lax is not None:
        return lax.fori_loop(lower, upper, body_fun, init_val)
    kinds, carry_type = {kind_of(lower), kind_of(upper)}, TreeType.of(init_val)
    if kinds == {ONE}:
        lo, hi = int(primal(lower)), int(primal(upper))
        native = _native(lambda v, i: (body_fun(i, v), None), init_val, [np.arange(lo, hi)],
                         lambda steps: steps[0], hi - lo, False)
        if native is not None:
            return native[0]
        val = init_val
        for i in range(lo, hi):
            val = body_fun(i, val)
            carry_type.check("dk.fori_loop", "body_fun's result", val, "init_val", _CARRY)
        return val
    if not kinds <= {ONE, PER_EXAMPLE}:
        raise NotApplicable(
            "dk.fori_loop: its bounds are traced values, but a graph traced once for all values "
            "has no loop of a value-dependent count yet: make them Python ints (static_argnums "
            "for an argument), or use an eager backend (forward, reverse)")

    def body(c: tuple) -> tuple:
        val = body_fun(c[0], c[1])
        carry_type.check("dk.fori_loop", "body_fun's result", val, "init_val", _CARRY)
        return c[0] + 1, val

    return _while("dk.fori_loop", lambda c: c[0] < upper, body, (lower, init_val))[1]


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """``val = body_fun(val)`` while ``cond_fun(val)`` (``jax.lax.while_loop``); the carry
    keeps its structure, shapes and dtypes, ``cond_fun`` returns a boolean scalar.

    Under ``vmap`` with a predicate per example it runs until every example stops; those
    that stopped keep their carry. Differentiable in forward and (unlike JAX) reverse mode
    on the eager backends; n/a under the compiled backend when the predicate is traced.

    >>> import diffkit as dk
    >>> newton = lambda a: dk.while_loop(lambda x: abs(x * x - a) > 1e-12 * a,
    ...                                  lambda x: 0.5 * (x + a / x), a)
    >>> round(float(newton(2.0)), 12), round(float(dk.jvp(newton, (4.0,), (1.0,))[1]), 12)
    (1.414213562373, 0.25)
    """
    need_functions("dk.while_loop", {"cond_fun": cond_fun, "body_fun": body_fun})
    return _while("dk.while_loop", cond_fun, body_fun, init_val)


def _while(what: str, cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    val, carry_type = init_val, TreeType.of(init_val)
    while True:
        pred = cond_fun(val)
        if kind_of(pred) == TRACED:  # (the iterations before ran on values: unrolled)
            native = _native_while(cond_fun, body_fun, val)
            if native is not None:
                return native
        per_example = _predicate(what, pred) == PER_EXAMPLE
        if not np.any(primal(pred)):  # false (for every example)
            return val
        if per_example:  # (a step an example discards may divide by 0 there)
            with np.errstate(all="ignore"):
                new = body_fun(gated(pred, val))
        else:
            new = body_fun(val)
        carry_type.check(what, "body_fun's result", new, "init_val", _CARRY)
        if per_example:  # examples that stopped keep their carry
            old, rebuild = flatten(val)[0], flatten(new)[1]
            new = rebuild([dnp.where(pred, a, b) for a, b in zip(flatten(new)[0], old)])
        val = new


def one_loop() -> bool:
    """Whether a ``dk.fori_loop`` here is one loop of a program, run whole, rather than
    Python's loop over its steps: a graph is being traced (``compiled``, ``dk.jit``), or
    the primitives compute on JAX's arrays (``jax.lax``'s loop). A program whose loop may
    stop early writes it as a bounded ``fori_loop`` whose finished state is a fixed point
    there, and as a Python loop that stops elsewhere."""
    return tracing() or _peer_loops() is not None


def _peer_loops() -> Any:
    """``jax.lax`` while the primitives compute on JAX's arrays (``diffkit.core.using``):
    there a loop is JAX's own, compiled once by ``jax.jit``; None otherwise."""
    xp = namespace()
    if xp is None or getattr(xp, "__name__", "") != "jax.numpy":
        return None
    import jax  # (a peer: present whenever its arrays are)

    return jax.lax


def _native(f: Callable[[Any, Any], Any], init: Any, leaves: list[Any],
            rebuild: Callable[[list[Any]], Any], n: int, reverse: bool) -> tuple | None:
    """``(carry, ys)`` of the loop as one ``scan`` equation of the graph being traced
    (:mod:`.scan_equation`), or None where it unrolls instead: nothing traced, no step,
    a ``vmap`` batch, no carry nor y, parts of several dtypes, or a body the trace cannot
    take on its own (e.g. one that indexes with ``i``); the unrolled loop then says what
    is wrong, if anything is."""
    if not n or not tracing():
        return None
    carry_leaves, carry_tree = flatten(init)
    m = len(carry_leaves)
    types = [type_of_value(v) for v in carry_leaves] + [
        (type_of_value(v)[0][1:], type_of_value(v)[1]) for v in leaves]
    y_tree: list[Callable] = []

    def flat(*args: Any) -> list[Any]:
        out = f(carry_tree(list(args[:m])), rebuild(list(args[m:])))
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise DiffkitError("f must return a pair")
        carry, y = out
        if structure(carry) != structure(init):
            raise DiffkitError("the carry changed its structure")
        y_leaves, y_tree[:] = flatten(y)[0], [flatten(y)[1]]
        return [*flatten(carry)[0], *y_leaves]

    for _ in range(2):  # a Python number's carry takes the dtype the body gives it
        try:
            graph = trace_types(flat, types, [f"carry{k}" for k in range(m)]
                                + [f"x{k}" for k in range(len(leaves))])
        except DiffkitError:
            return None
        given = [type_of_value(a) for a in graph.outputs[:m]]
        if given == types[:m]:
            break
        if [s for s, _ in given] != [s for s, _ in types[:m]] or any(
                isinstance(v, Box) and t != g for v, t, g in zip(carry_leaves, types, given)):
            return None
        types[:m] = given
    else:
        return None
    if any(in_batch(v) for v in [*carry_leaves, *leaves, *graph.captured]):
        return None
    graph, captured = _read_once(graph, m + len(leaves))
    body = Body(graph, m, len(leaves), n, reverse)
    if not body.outputs or not packable(body.outputs):
        return None
    carries = [v if isinstance(v, Box) else np.asarray(v, t[1])
               for v, t in zip(carry_leaves, types)]
    parts = body.unpack(scan_p(*carries, *leaves, *captured, body=body))
    return carry_tree(parts[:m]), y_tree[0](parts[m:])


def _native_while(cond_fun: Callable, body_fun: Callable, init: Any) -> Any:
    """The loop as one ``while`` equation of the graph being traced
    (:mod:`.while_equation`), or None where the predicate's one-line error stands: a carry
    that changes, parts of several dtypes, a ``vmap`` batch, a function the trace cannot
    take on its own."""
    leaves, tree = flatten(init)
    m = len(leaves)
    types = [type_of_value(v) for v in leaves]
    names = [f"carry{k}" for k in range(m)]

    def step(*args: Any) -> list[Any]:
        out = body_fun(tree(list(args)))
        if structure(out) != structure(init):
            raise DiffkitError("the carry changed its structure")
        return flatten(out)[0]

    try:
        test = trace_types(lambda *a: [cond_fun(tree(list(a)))], types, names)
        body = trace_types(step, types, names)
    except DiffkitError:
        return None
    if not m or [type_of_value(a) for a in body.outputs] != types or not packable(types) \
            or any(in_batch(v) for v in [*leaves, *test.captured, *body.captured]):
        return None
    check_test(test)
    test, test_reads = _read_once(test, m)
    body, body_reads = _read_once(body, m)
    loop = Cycle(test, body, m)
    carries = [v if isinstance(v, Box) else np.asarray(v, t[1]) for v, t in zip(leaves, types)]
    return tree(loop.unpack(while_p(*carries, *test_reads, *body_reads, loop=loop)))


def _read_once(graph: Graph, given: int) -> tuple[Graph, list[Any]]:
    """The traced body with its captured values as plain inputs, those the enclosing graph
    computes twice the same way (``x[1:]`` taken at each use in the body: an operation on
    outer values alone is recorded outside) read through one input: one operand, one
    adjoint to carry back."""
    captured = list(graph.captured)
    wanted = {b.var: b for b in captured if type(b) is GraphTracer}
    made: dict[Var, Eqn] = {}
    for interp in {b._interp for b in wanted.values()}:
        for e in reversed(interp.eqns):
            if e.out in wanted:
                made[e.out] = e
                if len(made) == len(wanted):
                    break
    seen: dict[tuple, Var] = {}
    same: dict[Var, Var] = {}
    inputs, kept = list(graph.inputs[:given]), []
    for var, box in zip(graph.inputs[given:], captured):
        e = made.get(box.var) if type(box) is GraphTracer else None
        key = None if e is None else (id(box._interp), equation_key(e))
        if key is not None and key in seen:
            same[var] = seen[key]
            continue
        if key is not None:
            seen[key] = var
        inputs.append(var)
        kept.append(box)
    if same:
        for e in graph.eqns:
            e.inputs = tuple(same.get(a, a) if type(a) is Var else a for a in e.inputs)
    outputs = [same.get(a, a) if type(a) is Var else a for a in graph.outputs]
    return Graph(inputs, graph.eqns, outputs), kept


def _predicate(what: str, pred: Any) -> str:
    """What ``cond_fun``'s result is: one bool, or one per example; else one line."""
    kind = kind_of(pred)
    if kind == TRACED:
        raise NotApplicable(
            f"{what}: cond_fun's result is a traced value, and a graph traced once for all "
            "values has no loop of a value-dependent count yet: for a fixed number of steps use "
            "dk.fori_loop(lower, upper, body_fun, init_val), or use an eager backend (forward, "
            "reverse)")
    if kind == FORMULA:
        raise NotApplicable(
            f"{what}: the symbolic backend needs a closed form, but the number of iterations "
            "depends on the value; use dk.fori_loop(lower, upper, body_fun, init_val) for a "
            "fixed count, or the forward, reverse or numeric backend")
    need_scalar(f"{what}: cond_fun's result", pred, "return one bool")
    dtype = np.asarray(primal(pred)).dtype
    if dtype != bool:
        raise DiffkitError(f"{what}: cond_fun must return a boolean scalar, got "
                           f"{spelled((), dtype)}; compare, e.g. x > 0")
    return kind


def _steps(xs: Tree, leaves: list[Any], length: int | None) -> int:
    """The number of steps: the common leading length of the leaves of ``xs``, or ``length``."""
    if length is not None and (type(length) is bool or not isinstance(length, (int, np.integer))
                               or length < 0):
        raise DiffkitError(f"dk.scan: length must be a number of steps (an int >= 0), got "
                           f"{length!r}")
    sizes = []
    for path, leaf in zip(paths(xs, "xs"), leaves):
        if shape(leaf) == ():
            raise DiffkitError(f"dk.scan: {path} has shape () and no leading axis to scan over; "
                               "xs holds arrays whose first axis is the steps")
        sizes.append(f"{path} has {shape(leaf)[0]}")
    lengths = {shape(leaf)[0] for leaf in leaves}
    if len(lengths) > 1:
        raise DiffkitError(f"dk.scan: the leaves of xs differ in length along axis 0 "
                           f"({', '.join(sizes)}); every leaf needs one entry per step")
    if length is not None and lengths and length not in lengths:
        raise DiffkitError(f"dk.scan: length={length} but {sizes[0]} entries along axis 0; "
                           "give the length of xs, or leave length out")
    if not lengths and length is None:
        raise DiffkitError("dk.scan: with no xs, give length (the number of steps)")
    return int(length) if length is not None else lengths.pop()
