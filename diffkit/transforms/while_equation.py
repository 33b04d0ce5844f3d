"""``while`` as one equation of a traced graph: a loop that stops on a value, compiled.

In a graph being traced (``backend="compiled"``, ``dk.jit``), :func:`diffkit.while_loop`
whose predicate is a traced value traces ``cond_fun`` and ``body_fun`` once each, into
graphs of their own (the outer values they read become their last inputs, as for
``scan``), and records one equation ``while_loop(carries, consts, loop=…)``. At run time the
two are one machine-code loop (:func:`diffkit.compiler.loop_kernels.while_kernel`: the
predicate's steps, a test, the body's steps), or, out of its scope, a Python loop calling
their programs.

Forward mode is one ``while`` of the body's JVP, carrying (carry, tangent), the predicate
reading the carry alone. Reverse mode is refused, in one line, as JAX refuses it: the
number of iterations is not known when tracing, so nothing bounds the memory of a reverse
sweep. ``dk.fori_loop`` (a count known when tracing) and the eager reverse backend (whose
tape holds the iterations that ran) differentiate a loop in reverse. ``vmap`` of a graph
holding one is one loop over the batch, while any example's test holds, each example
keeping its carry once its own test fails.

>>> import diffkit as dk
>>> newton = lambda a: dk.while_loop(lambda x: abs(x * x - a) > 1e-12 * a,
...                                  lambda x: 0.5 * (x + a / x), a)
>>> round(float(dk.jit(newton)(2.0)), 12)
1.414213562373
>>> round(float(dk.jvp(newton, (4.0,), (1.0,), backend="compiled")[1]), 12)  # 1/(2 sqrt 4)
0.25
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..compiler.driver import fusion_plan
from ..compiler.kernel_ir import KernelTooLarge
from ..compiler.loop_kernels import LoopKernel, while_kernel
from ..compiler.passes import optimize
from ..compiler.program import Program, build, options
from ..core import DiffkitError, Each, NotApplicable, Primitive, shape
from ..ir.graph import Graph
from ..ir.tracer import evaluate, trace_types
from .scan_equation import Body, batched_graph, floats, jvp_body, rows, spans, type_of, \
    unpacked


@dataclass(eq=False)
class Cycle:
    """A while loop's two graphs: ``cond`` maps ``(carries, its consts)`` to one boolean,
    ``body`` maps ``(carries, its consts)`` to the carries; ``carries`` counts their
    first inputs. Compared by identity (a parameter)."""

    cond: Graph
    body: Graph
    carries: int
    build: dict[str, bool] = field(default_factory=options, repr=False)  # fuse, parallel
    derived: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"<while: test of {len(self.cond)} equations, body of {len(self.body)}>"

    @property
    def carry_types(self) -> list[tuple[tuple[int, ...], np.dtype]]:
        return [type_of(v) for v in self.cond.inputs[:self.carries]]

    @property
    def cond_consts(self) -> int:
        return len(self.cond.inputs) - self.carries

    def spans(self) -> list[tuple[int, int]]:
        return spans(self.carry_types)

    @property
    def size(self) -> int:
        """The packed carries' length."""
        return self.spans()[-1][1]

    def unpack(self, packed: Any) -> list[Any]:
        return unpacked(packed, self.carry_types)

    def programs(self) -> tuple[Program, Program]:
        """The test and the body built once, as the program holding the loop is."""
        if "programs" not in self.derived:
            self.derived["programs"] = tuple(
                build(lambda *a, g=g: evaluate(g, a), [np.zeros(*type_of(v)) for v in g.inputs],
                      **self.build) for g in (self.cond, self.body))
        return self.derived["programs"]

    def loop(self) -> LoopKernel | None:
        """The whole loop in machine code, where both graphs are in its scope."""
        if "loop" not in self.derived:
            self.derived["loop"] = None
            if self.build["fuse"] and not self.build["parallel"]:
                try:
                    plans = [fusion_plan(optimize(g)[0]) for g in (self.cond, self.body)]
                except (KernelTooLarge, RecursionError):
                    plans = None
                if plans is not None:
                    self.derived["loop"] = while_kernel(*plans, self.carries, self.spans())
        return self.derived["loop"]


def run(*operands: Any, loop: Cycle) -> np.ndarray:
    """The loop on plain arrays: in machine code, else the two programs called in turn."""
    m, k = loop.carries, loop.cond_consts
    out = np.empty(loop.size, loop.carry_types[0][1])
    native = loop.loop()
    if native is not None:
        native(operands[:m], (), operands[m:], out)
        return out
    test, step = loop.programs()
    carry, cond_consts, body_consts = list(operands[:m]), operands[m:m + k], operands[m + k:]
    while bool(test(*carry, *cond_consts)[0]):
        carry = step(*carry, *body_consts)
    for part, c in zip(loop.unpack(out), carry):
        part[...] = c
    return out


def _jvp(tangents: list[Any], *operands: Any, loop: Cycle) -> tuple[Any, Any]:
    """One ``while`` over (carries, their tangents): the body's JVP, the same test; its
    carries' values are the loop's own (the loop is not run apart)."""
    m, k = loop.carries, loop.cond_consts
    if "jvp" not in loop.derived:
        # the body's JVP, as a scan body's without xs: (carries, tangents, consts, theirs)
        jb = jvp_body(Body(loop.body, m, 0, 1, False, loop.build))
        types = [type_of(v) for v in jb.graph.inputs[:jb.carries]] + [
            type_of(v) for v in loop.cond.inputs[m:]]
        cond = trace_types(lambda *a: evaluate(loop.cond, [*a[:m], *a[jb.carries:]]), types,
                           [f"in{j}" for j in range(len(types))])
        loop.derived["jvp"] = Cycle(cond, jb.graph, jb.carries, loop.build)
    jl = loop.derived["jvp"]
    diff = floats([type_of(a) for a in operands])
    carries = [*operands[:m], *(t for t, d in zip(tangents[:m], diff) if d)]
    body_consts = [(a, t) for a, t, d in zip(operands[m + k:], tangents[m + k:], diff[m + k:])]
    args = [*carries, *operands[m:m + k], *(a for a, _ in body_consts),
            *(t for (_, t), d in zip(body_consts, diff[m + k:]) if d)]
    packed = while_p(*args, loop=jl)
    y = packed[:loop.size]
    if not all(diff[:m]):
        return y, np.zeros(np.shape(y), np.result_type(y))
    return y, packed[loop.size:]


def _vjp(i: int, y_bar: Any, y: Any, *operands: Any, loop: Cycle) -> Any:
    raise NotApplicable(
        "reverse mode through dk.while_loop in a compiled graph: the number of iterations "
        "is not known when tracing, so nothing bounds the memory of the reverse sweep (JAX "
        "refuses it too); use dk.fori_loop(lower, upper, body_fun, init_val) with a fixed "
        "count, forward mode (dk.jvp, dk.jacfwd), or the reverse backend, whose tape holds "
        "the iterations that ran")


def _batch(args: list[Any], batched: tuple[bool, ...], size: int, *, loop: Cycle) -> Any:
    """vmap of a while loop, as JAX batches one: one loop over the batch while any
    example's test holds, its body on the whole batch, an example whose test has failed
    keeping its carry (a select). Where the test differs per example every carry does;
    a carry is batched from the start where the body makes it so (traced until stable)."""
    m, k = loop.carries, loop.cond_consts
    flags = list(batched)
    carry_consts = lambda fl: fl[:m] + fl[m + k:]  # noqa: E731  (the body's inputs)
    while True:
        cond, (per_example,) = batched_graph(loop.cond, flags[:m + k], size, [False])
        body, out = batched_graph(loop.body, carry_consts(flags), size, flags[:m])
        grown = [f or o or per_example for f, o in zip(flags[:m], out)]
        if grown == flags[:m]:
            break
        flags[:m] = grown
    operands = [dnp.broadcast_to(a, (size, *shape(a))) if f and not b else a
                for a, b, f in zip(args, batched, flags)]
    if per_example:  # the body also reads the test's consts, to keep stopped examples
        def gated(*ins: Any) -> list[Any]:
            go = evaluate(cond, ins[:m + k])[0]
            new = evaluate(body, [*ins[:m], *ins[m + k:]])
            return [dnp.where(dnp.reshape(go, (size,) + (1,) * (len(shape(c)) - 1)), n, c)
                    for n, c in zip(new, ins[:m])]
        types = [type_of(v) for v in [*cond.inputs, *body.inputs[m:]]]
        body = trace_types(gated, types, [f"in{j}" for j in range(len(types))])
        def any_goes(*a: Any) -> Any:  # (dnp.any needs values; a sum of a mask does not)
            return dnp.sum(dnp.where(evaluate(cond, a)[0], 1.0, 0.0)) > 0.0
        cond = trace_types(any_goes, [type_of(v) for v in cond.inputs],
                           [f"in{j}" for j in range(m + k)])
        operands = [*operands[:m + k], *operands[m:]]
    wide = Cycle(cond, body, m, loop.build)
    return rows(wide.unpack(while_p(*operands, loop=wide)), flags[:m], size)


while_p = Primitive("while_loop", run, jvp_pair=_jvp, vjp=Each(_vjp),
                    abstract=lambda *operands, loop: ((loop.size,), loop.carry_types[0][1]))
while_p.batch = _batch


def check_test(graph: Graph) -> None:
    """``cond_fun`` gave one boolean scalar, else one line."""
    (out,) = graph.outputs
    s, d = type_of(out)
    if s != () or d != np.dtype(bool):
        raise DiffkitError(f"dk.while_loop: cond_fun must return a boolean scalar, got "
                           f"{d.name}[{','.join(map(str, s))}]; compare, e.g. x > 0")
