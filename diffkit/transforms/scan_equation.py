"""``scan`` as one equation of a traced graph: a loop the compiled backend keeps a loop.

In a graph being traced (``backend="compiled"``, ``dk.jit``), :func:`diffkit.scan` and a
:func:`diffkit.fori_loop` of known bounds trace their body once, into a graph of its own,
and record one equation ``scan(carries, xs, consts, body=…)``. The values of the
enclosing graph (or of outer transforms) the body reads become its last inputs, the
*consts* (closure conversion, as JAX converts a loop body's closures). Build time no
longer grows with the number of steps. At run time the body is built once, fused like
any program, and a loop calls it once per step (:func:`run`).

The rules are written with ``scan`` itself, so they differentiate again (a Hessian of a
loop is a loop):

* forward mode: one scan of the body's JVP, carrying (carry, tangent), which gives the
  loop's own value too (``Primitive.jvp_pair``);
* reverse mode: a scan that also stacks the carry entering each step, then a scan from
  the last step to the first over the body's pullback, carrying the carry's adjoint and
  summing the consts' adjoints; each step's inner values are recomputed from its saved
  carry, so the memory is the carries', not every step's values;
* ``vmap`` of a graph holding one: one scan of the body traced on whole batches.

An equation of the IR has one output, so this one's is one flat array: the final
carries' entries, then each ``y`` stacked over the steps, in order (:meth:`Body.unpack`
takes them back out as slices); every one of them has one dtype, else the loop is
unrolled as before.

>>> import numpy as np, diffkit as dk
>>> cumsum = dk.jit(lambda xs: dk.scan(lambda c, x: (c + x, c + x), 0.0, xs)[1])
>>> cumsum(np.arange(1.0, 5.0))
array([ 1.,  3.,  6., 10.])
>>> [e.prim.name for e in dk.make_graph(cumsum)(np.ones(1000)).eqns][:1]
['scan']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..compiler.autodiff import linearize
from ..compiler.driver import fusion_plan
from ..compiler.kernel_ir import KernelTooLarge
from ..compiler.loop_kernels import LoopKernel, loop_kernel
from ..compiler.passes import optimize
from ..compiler.program import Program, build, options
from ..core import Box, Each, Primitive, new_level, shape
from ..interpreters.batching import Batched, BatchInterpreter, unbatch
from ..interpreters.forward import Dual, ForwardInterpreter
from ..ir.graph import Const, Graph, Var
from ..ir.tracer import evaluate, trace_types

Type = tuple[tuple[int, ...], np.dtype]


def type_of(a: Any) -> Type:
    """Shape and dtype of a graph atom or a value."""
    if isinstance(a, (Var, Const, Box, np.ndarray, np.generic)):
        return tuple(a.shape), np.dtype(a.dtype)
    return (), np.result_type(a)


def spans(types: Sequence[Type]) -> list[tuple[int, int]]:
    """Where each part of these types sits in a packed (flat) output."""
    out, at = [], 0
    for s, _ in types:
        out.append((at, at + int(np.prod(s, dtype=np.int64))))
        at = out[-1][1]
    return out


def unpacked(packed: Any, types: Sequence[Type]) -> list[Any]:
    """The parts of a packed output (or of its adjoint), as slices with their shapes."""
    return [packed[a:b].reshape(s) for (a, b), (s, _) in zip(spans(types), types)]


def floats(types: Sequence[Type]) -> list[bool]:
    """Which of these types carry derivatives (floats, complex)."""
    return [d.kind in "fc" for _, d in types]


@dataclass(eq=False)
class Body:
    """A loop body: ``graph`` maps ``(carries, x slices, consts)`` to ``(carries, ys)``;
    ``carries`` and ``xs`` count its first inputs, the rest are consts. ``length`` steps,
    from the last to the first with ``reverse``. Compared by identity (a parameter)."""

    graph: Graph
    carries: int
    xs: int
    length: int
    reverse: bool
    build: dict[str, bool] = field(default_factory=options, repr=False)  # fuse, parallel
    derived: dict[str, Any] = field(default_factory=dict, repr=False)
    memo: tuple | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return (f"<body of {len(self.graph)} equations, {self.length} steps"
                f"{', reversed' if self.reverse else ''}>")

    # ------------------------------------------------------------------ layout
    @property
    def inputs(self) -> list[Type]:
        return [type_of(v) for v in self.graph.inputs]

    @property
    def outputs(self) -> list[Type]:
        """The types of the packed output's parts: carries, then each y stacked."""
        outs = [type_of(a) for a in self.graph.outputs]
        return outs[:self.carries] + [((self.length, *s), d) for s, d in outs[self.carries:]]

    @property
    def dtype(self) -> np.dtype:
        return self.outputs[0][1] if self.outputs else np.dtype(np.float64)

    def spans(self) -> list[tuple[int, int]]:
        """Where each part sits in the packed output."""
        return spans(self.outputs)

    @property
    def size(self) -> int:
        """The packed output's length."""
        return self.spans()[-1][1]

    def unpack(self, packed: Any) -> list[Any]:
        return unpacked(packed, self.outputs)

    def differentiable(self) -> list[bool]:
        """Which inputs carry derivatives."""
        return floats(self.inputs)

    def float_inputs(self) -> tuple[list[int], list[int], list[int]]:
        """The positions of the float carries, consts and xs: what the reverse sweep
        carries, sums and stacks adjoints for."""
        m, n, diff = self.carries, self.xs, self.differentiable()
        return ([j for j in range(m) if diff[j]],
                [j for j in range(m + n, len(diff)) if diff[j]],
                [j for j in range(m, m + n) if diff[j]])

    # ------------------------------------------------------------------ running
    def program(self) -> Program:
        """The body built once, as the program holding the loop is (fused or not, in
        parallel or not): what a loop in Python calls per step."""
        if "program" not in self.derived:
            hollow = [np.zeros(s, d) for s, d in self.inputs]
            self.derived["program"] = build(lambda *a: evaluate(self.graph, a), hollow,
                                            names=[v.name or f"x{k}" for k, v in
                                                   enumerate(self.graph.inputs)],
                                            **self.build)
        return self.derived["program"]

    def loop(self) -> LoopKernel | None:
        """The whole loop in machine code (:mod:`diffkit.compiler.loop_kernels`), where
        the body's fused program is in its scope; else None (a Python loop calls the
        body's program per step)."""
        if "loop" not in self.derived:
            self.derived["loop"] = None
            if self.build["fuse"] and not self.build["parallel"]:
                graph = optimize(self.graph)[0]
                try:
                    plan = fusion_plan(graph)
                except (KernelTooLarge, RecursionError):
                    plan = None
                if plan is not None:
                    self.derived["loop"] = loop_kernel(plan, self.carries, self.xs,
                                                       self.length, self.reverse, self.spans())
        return self.derived["loop"]

    def prefix_of(self, other: Any) -> bool:
        """``other`` is this loop that also saves its carries: this one's output starts
        it (the passes compute the two once, :func:`diffkit.compiler.passes.cse`)."""
        return other is self.derived.get("saving")

    def derive(self, kind: str, make: Callable[[], Body]) -> Body:
        if kind not in self.derived:
            self.derived[kind] = make()
        return self.derived[kind]


def packable(types: Sequence[Type]) -> bool:
    """One dtype for every part, as the packed output needs."""
    return len({d for _, d in types}) <= 1


def run(*operands: Any, body: Body) -> np.ndarray:
    """The loop itself on plain arrays: in machine code (:meth:`Body.loop`), else the
    body's program called once per step."""
    native, m, n = body.loop(), body.carries, body.xs
    if native is not None:
        out = np.empty(body.size, body.dtype)
        native(operands[:m], operands[m:m + n], operands[m + n:], out)
        return out
    prog = body.program()
    step = prog.fn if prog.vm is None and not prog.scalar else prog  # (no rebuild per step)
    carry = list(operands[:m])
    xs, consts = operands[m:m + n], operands[m + n:]
    out = np.empty(body.size, body.dtype)
    parts = body.unpack(out)
    steps = range(body.length - 1, -1, -1) if body.reverse else range(body.length)
    for t in steps:
        res = step(*carry, *[x[t] for x in xs], *consts)
        carry = res[:m]
        for part, y in zip(parts[m:], res[m:]):
            part[t] = y
    for part, c in zip(parts[:m], carry):
        part[...] = c
    return out


# --------------------------------------------------------------------------- forward mode


def jvp_body(body: Body) -> Body:
    """(carries, their tangents, xs, theirs, consts, theirs) -> (carries, tangents, ys,
    tangents): the body pushed forward, a tangent for each float value."""
    m, n, ins, diff = body.carries, body.xs, body.inputs, body.differentiable()
    groups = [range(0, m), range(m, m + n), range(m + n, len(ins))]
    order = [k for g in groups for k in (*g, *(j for j in g if diff[j]))]
    out_diff = floats(body.outputs)

    def pushed(*args: Any) -> list[Any]:
        primals: list[Any] = [None] * len(ins)
        tangents: list[Any] = [None] * len(ins)
        seen: set[int] = set()
        for k, a in zip(order, args):
            if k in seen:
                tangents[k] = a
            else:
                primals[k] = a
                seen.add(k)
        with new_level(ForwardInterpreter) as fi:
            outs = evaluate(body.graph, [Dual(fi, p, t) if t is not None else p
                                         for p, t in zip(primals, tangents)])
            values, dots = [], []
            for o, d in zip(outs, out_diff):
                mine = type(o) is Dual and o._interp is fi
                values.append(o.value if mine else o)
                if d:
                    dots.append(o.tangent if mine else np.zeros(*type_of(o)))
        dot_of = iter(dots)
        carry_dots = [next(dot_of) for d in out_diff[:m] if d]
        y_dots = list(dot_of)
        return [*values[:m], *carry_dots, *values[m:], *y_dots]

    graph = trace_types(pushed, [ins[k] for k in order], [f"in{k}" for k in range(len(order))])
    carries = m + sum(diff[:m])
    return Body(graph, carries, n + sum(diff[m:m + n]), body.length, body.reverse, body.build)


def _jvp(tangents: list[Any], *operands: Any, body: Body) -> tuple[Any, Any]:
    """The loop and its tangent, as one scan of the body's JVP (its carries' values and
    ys are the loop's own: the loop is not run apart)."""
    jb = body.derive("jvp", lambda: jvp_body(body))
    m, n, diff = body.carries, body.xs, body.differentiable()
    groups = [range(0, m), range(m, m + n), range(m + n, len(operands))]
    args = [a for g in groups for a in (*(operands[k] for k in g),
                                        *(tangents[k] for k in g if diff[k]))]
    packed = scan_p(*args, body=jb)
    out_diff = floats(body.outputs)
    mc = sum(out_diff[:m])
    sp, q = jb.spans(), len(out_diff) - m  # (the JVP's: carries, their dots, ys, theirs)
    y = dnp.concatenate([packed[:sp[m - 1][1]], packed[sp[m + mc][0]:sp[m + mc + q - 1][1]]]) \
        if mc and q else packed[:body.size]
    if not all(out_diff):
        return y, np.zeros(shape(y), np.result_type(y))
    parts = jb.unpack(packed)
    dots = parts[m:m + mc] + parts[m + mc + (len(out_diff) - m):]
    return y, dnp.concatenate([dnp.ravel(d) for d in dots]) if dots else \
        np.zeros(0, body.dtype)


# --------------------------------------------------------------------------- reverse mode


def _saving(body: Body) -> Body:
    """The body that also gives, as ys, the carries entering each step."""
    g = body.graph
    graph = Graph(g.inputs, g.eqns, [*g.outputs, *g.inputs[:body.carries]], g.rebuild)
    return Body(graph, body.carries, body.xs, body.length, body.reverse, body.build)


def _pullback_body(body: Body) -> Body:
    """(adjoints of the float carries, sums of the float consts' adjoints; xs, the carries
    entering the step, the adjoints of the float ys; consts) -> (the carries' adjoints
    one step back, the sums; the float xs' adjoints)."""
    m, n, ins = body.carries, body.xs, body.inputs
    y_types = [type_of(a) for a in body.graph.outputs[m:]]  # one step's ys
    y_diff = floats(y_types)
    fc, fk, fx = body.float_inputs()
    types = ([ins[j] for j in fc] + [ins[j] for j in fk] + ins[m:m + n] + ins[:m]
             + [t for t, d in zip(y_types, y_diff) if d] + ins[m + n:])

    def pulled(*args: Any) -> list[Any]:
        it = iter(args)
        carry_bars = [next(it) for _ in fc]
        sums = [next(it) for _ in fk]
        xs = [next(it) for _ in range(n)]
        carries = [next(it) for _ in range(m)]
        y_bars = [next(it) if d else None for d in y_diff]
        consts = list(it)
        _, pull = linearize(body.graph, [*carries, *xs, *consts])
        bar_of = dict(zip(fc, carry_bars))
        bars = pull([bar_of.get(j) for j in range(m)] + y_bars)
        return ([bars[j] for j in fc] + [s + bars[j] for s, j in zip(sums, fk)]
                + [bars[j] for j in fx])

    graph = trace_types(pulled, types, [f"in{j}" for j in range(len(types))])
    return Body(graph, len(fc) + len(fk), n + m + sum(y_diff), body.length,
                not body.reverse, body.build)


def _adjoints(y_bar: Any, operands: Sequence[Any], body: Body) -> list[Any]:
    m, n, diff = body.carries, body.xs, body.differentiable()
    saving = body.derive("saving", lambda: _saving(body))
    entering = saving.unpack(scan_p(*operands, body=saving))[len(body.outputs):]
    back = body.derive("pullback", lambda: _pullback_body(body))
    bars = body.unpack(y_bar)
    y_diff = floats(body.outputs[m:])
    fc, fk, fx = body.float_inputs()
    args = ([bars[j] for j in fc] + [np.zeros(*body.inputs[j]) for j in fk]
            + list(operands[m:m + n]) + entering
            + [b for b, d in zip(bars[m:], y_diff) if d] + list(operands[m + n:]))
    parts = back.unpack(scan_p(*args, body=back))
    found = dict(zip(fc + fk + fx, parts))
    return [found.get(j) if diff[j] else None for j in range(len(operands))]


def _vjp(i: int, y_bar: Any, y: Any, *operands: Any, body: Body) -> Any:
    """The adjoint of operand ``i``: every operand's is computed once per ``y_bar`` (the
    rule is asked once per operand with the same values)."""
    memo = body.memo
    if memo is None or memo[0] is not y_bar or len(memo[1]) != len(operands) \
            or any(a is not b for a, b in zip(memo[1], operands)):
        body.memo = memo = (y_bar, operands, _adjoints(y_bar, operands, body))
    bar = memo[2][i]
    return bar if bar is not None else np.zeros(*type_of(operands[i]))


# --------------------------------------------------------------------------- vmap


def batched_graph(graph: Graph, flags: Sequence[bool], size: int, wide: Sequence[bool]
                  ) -> tuple[Graph, list[bool]]:
    """``graph`` on ``size`` examples at once: its inputs flagged carry the batch axis in
    front; so do the outputs it makes batched and those flagged ``wide`` (repeated where
    they are the same for every example). Also which outputs carry it."""
    out: list[bool] = []
    types = [((size, *s), d) if f else (s, d) for (s, d), f in
             zip((type_of(v) for v in graph.inputs), flags)]

    def batched(*ins: Any) -> list[Any]:
        with new_level(lambda level: BatchInterpreter(level, size)) as bi:
            outs = evaluate(graph, [Batched(bi, a) if f else a for a, f in zip(ins, flags)])
            out[:] = [type(o) is Batched and o._interp is bi for o in outs]
            return [unbatch(o, bi) if b or w else o for o, b, w in zip(outs, out, wide)]

    names = [v.name or f"x{k}" for k, v in enumerate(graph.inputs)]
    traced = trace_types(batched, types, names)
    return traced, [b or w for b, w in zip(out, wide)]


def _batched_body(body: Body, flags: list[bool], size: int) -> tuple[Body, list[bool]]:
    """The body on ``size`` examples at once, and which of its outputs carry the batch
    axis: a carry flagged always does."""
    m = body.carries
    wide = flags[:m] + [False] * (len(body.graph.outputs) - m)
    graph, out = batched_graph(body.graph, flags, size, wide)
    return Body(graph, m, body.xs, body.length, body.reverse, body.build), out


def rows(parts: Sequence[Any], batched: Sequence[bool], size: int) -> Any:
    """A batched loop's packed result back per example, ``(size, packed)``: each part's
    batch axis (in front) kept, a part the same for every example repeated."""
    return dnp.concatenate([
        dnp.reshape(p, (size, -1)) if b else
        dnp.broadcast_to(dnp.reshape(p, (1, -1)), (size, int(np.prod(shape(p)))))
        for p, b in zip(parts, batched)], axis=1)


def _batch(args: list[Any], batched: tuple[bool, ...], size: int, *, body: Body) -> Any:
    """vmap of a loop: one loop of the body on the whole batch (as JAX batches a scan):
    a carry is batched from the start when the body makes it so at any step (found by
    tracing the batched body until the carries' batching stays the same), xs step along
    their second axis, and the packed results come back per example."""
    m, n, flags = body.carries, body.xs, list(batched)
    while True:
        wide, out = _batched_body(body, flags, size)
        if out[:m] == flags[:m]:
            break
        flags[:m] = [f or o for f, o in zip(flags[:m], out[:m])]
    operands = [dnp.broadcast_to(a, (size, *shape(a))) if f and not b else
                dnp.moveaxis(a, 0, 1) if b and m <= k < m + n else a
                for k, (a, b, f) in enumerate(zip(args, batched, flags))]
    parts = wide.unpack(scan_p(*operands, body=wide))
    return rows([dnp.moveaxis(p, 0, 1) if k >= m and b else p  # (ys: steps, then batch)
                 for k, (p, b) in enumerate(zip(parts, out))], out, size)


scan_p = Primitive("scan", run, jvp_pair=_jvp, vjp=Each(_vjp),
                   abstract=lambda *operands, body: ((body.size,), body.dtype))
scan_p.batch = _batch
