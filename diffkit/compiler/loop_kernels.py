"""A loop body's program as one machine-code loop: no Python between its steps.

A ``scan`` equation (:mod:`diffkit.transforms.scan_equation`) runs its body's program once
per step. Called from Python, each step pays the calls of its kernels and numpy lines
(~10-30 µs for a small body): for GradBench's LSTM that is most of the time. Here the
body's fusion plan becomes one LLVM function that loops over the steps itself:

* each kernel is the LLVM route's own (:mod:`.llvm_kernels`), its loops called directly
  with data pointers;
* the lines between kernels are written in IR too: a scalar formula of the lowering
  registry (``log(s + 2.0)`` on a kernel's sum), a reshape or a block of an array on its
  first axis (``x[1]``, ``x[1:]``: the same memory), a concatenation of vectors (copies);
* every value lives in memory allocated once per call (a 0-d value in 8 bytes); a step's
  ``x`` is a pointer into ``xs`` at the step; its ``y`` is copied into the output at the
  step; the new carries are copied over the old ones (through a second set of buffers
  when one is held in another's memory, carries that trade places: each is read before
  any is written).

A while loop (:mod:`diffkit.transforms.while_equation`) is the same function with a test:
its predicate's steps, a branch on the boolean, its body's steps (:func:`while_kernel`).

Scope: float64 values and masks, and plans whose every step is such a kernel or line
(kernels on the LLVM route, whose boolean scalars the loop passes as 0.0 or 1.0; no
matrix-vector pairs); anything else keeps the loop in Python (:func:`loop_kernel` and
:func:`while_kernel` return None). The loop's own IR holds the kernels' addresses in
this process, so it is compiled per process (milliseconds; the kernels come from the disk
cache as usual).
"""

from __future__ import annotations

import ctypes
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import primitives as P
from ..ir.graph import Const, Eqn, Graph, Var
from ..primitives.lowering import OPS, ScalarExpr
from . import formulas, vector_math
from .fusion import Kernel
from .kernel_cache import cache_dir
from .kernel_ir import Instr, KernelIR, KernelTooLarge, build
from .llvm_kernels import (DATA, ITEMS, Emitter, double_literal, llvm_route, loops_address,
                           machine)

F64, BOOL = np.dtype(np.float64), np.dtype(np.bool_)


@dataclass
class Slot:
    """One item of the tuple the loop reads: what Python passes there at each call."""

    kind: str          # "carry", "next", "x", "const", "array", "scratch", "out"
    index: int = 0     # which carry / x / const
    value: Any = None  # the constant array, or the scratch buffer's shape


class LoopKernel:
    """The compiled loop: ``k(carries, xs, consts, out)`` runs every step and writes the
    packed output (final carries, each y stacked) into ``out``."""

    def __init__(self, address: int, slots: list[Slot], carry_spans: list[tuple[int, int]],
                 shapes: list[tuple[int, ...]]) -> None:
        self.fn = ctypes.CFUNCTYPE(None, ctypes.py_object)(address)
        self.slots, self.carry_spans, self.shapes = slots, carry_spans, shapes

    def __call__(self, carries: Sequence[Any], xs: Sequence[Any], consts: Sequence[Any],
                 out: np.ndarray) -> None:
        # copies (renewed in place), in C order whatever the value's layout (numpy's
        # default keeps it: a broadcast carry's copy came out in Fortran order)
        cur = [np.array(c, F64, order="C").reshape(s) for c, s in zip(carries, self.shapes)]
        items = []
        for s in self.slots:
            if s.kind == "carry":
                items.append(cur[s.index])
            elif s.kind == "next":
                items.append(np.empty_like(cur[s.index]))
            elif s.kind == "x":
                items.append(np.ascontiguousarray(xs[s.index], F64))
            elif s.kind == "const":
                items.append(np.ascontiguousarray(consts[s.index], F64))
            elif s.kind == "array":
                items.append(s.value)
            elif s.kind == "scratch":
                items.append(np.empty(*s.value))
            else:
                items.append(out)
        self.fn(tuple(items))
        for (a, b), c in zip(self.carry_spans, cur):
            out[a:b] = c.reshape(-1)


def loop_kernel(plan: Any, carries: int, xs: int, length: int, reverse: bool,
                spans: list[tuple[int, int]]) -> LoopKernel | None:
    """The body's fusion ``plan`` as one compiled loop over ``length`` steps (``spans``:
    where each output sits in the packed output), or None where a step is out of scope."""
    try:
        return _Loop(plan, carries, xs, length, reverse, spans).compile()
    except (_OutOfScope, KernelTooLarge, ImportError):  # (no llvmlite: no LLVM route)
        return None


def while_kernel(cond: Any, body: Any, carries: int, spans: list[tuple[int, int]]
                 ) -> LoopKernel | None:
    """A while loop's two fusion plans as one compiled loop: ``cond``'s steps, its boolean
    tested, ``body``'s steps, until the test fails; None where a step is out of scope."""
    try:
        return _While(cond, carries, 0, 0, False, spans).compile_while(body)
    except (_OutOfScope, KernelTooLarge, ImportError):  # (no llvmlite: no LLVM route)
        return None


class _OutOfScope(Exception):
    pass


def _leading(shape: tuple[int, ...], idx: Any) -> int | None:
    """Where ``x[idx]`` starts in ``x``'s C-contiguous memory when it is one block of it (an
    integer or a slice of step 1 on the first axis: ``x[1]``, ``x[1:]``), else None."""
    if not shape or not isinstance(idx, tuple) or len(idx) != 1:
        return None
    (i,), row = idx, int(np.prod(shape[1:]))
    if isinstance(i, (int, np.integer)) and not isinstance(i, bool) and -shape[0] <= i < shape[0]:
        return (int(i) % shape[0]) * row
    if isinstance(i, slice) and i.step in (None, 1):
        return i.indices(shape[0])[0] * row
    return None


class _Loop:
    """Writes the loop's IR."""

    def __init__(self, plan: Any, carries: int, xs: int, length: int, reverse: bool,
                 spans: list[tuple[int, int]]) -> None:
        self.plan, self.graph = plan, plan.graph
        self.m, self.n, self.length, self.reverse, self.spans = carries, xs, length, reverse, spans
        self.slots: list[Slot] = []
        self.e = Emitter(KernelIR("loop", (), [], [], 0, []))
        self.ptr: dict[Any, str] = {}      # a value -> the IR pointer to its memory
        self.pre: list[str] = []           # before the loop: the tuple's items read

    # ------------------------------------------------------------------ memory
    def item(self, slot: Slot) -> str:
        k = len(self.slots)
        self.slots.append(slot)
        self.pre += [f"  %it{k} = getelementptr i8, ptr %args, i64 {ITEMS + 8 * k}",
                     f"  %ob{k} = load ptr, ptr %it{k}",
                     f"  %at{k} = getelementptr i8, ptr %ob{k}, i64 {DATA}",
                     f"  %p{k} = load ptr, ptr %at{k}"]
        return f"%p{k}"

    def scratch(self, v: Var) -> str:
        if v.dtype not in (F64, BOOL):
            raise _OutOfScope
        self.ptr[v] = self.item(Slot("scratch", value=(tuple(v.shape) or (1,), v.dtype)))
        return self.ptr[v]

    def pointer(self, a: Any) -> str:
        """The memory of an operand: a value of the body, or a constant array."""
        if isinstance(a, Var):
            if a not in self.ptr:
                raise _OutOfScope
            return self.ptr[a]
        if isinstance(a, Const) and np.result_type(a.value) == F64:
            key = ("const", id(a.value))
            if key not in self.ptr:
                value = np.ascontiguousarray(a.value, F64).reshape(np.shape(a.value) or (1,))
                self.ptr[key] = self.item(Slot("array", value=value))
            return self.ptr[key]
        raise _OutOfScope

    def memory(self, a: Any, shape: tuple[int, ...]) -> str:
        """An output's memory: a value's, a constant's, a number's (spread to ``shape``)."""
        if isinstance(a, Var) or isinstance(a, Const) and np.shape(a.value) == shape:
            return self.pointer(a)
        v = a.value if isinstance(a, Const) else a
        if np.result_type(v) not in (F64, np.dtype(int)) or isinstance(v, bool):
            raise _OutOfScope
        return self.pointer(Const(np.broadcast_to(np.asarray(v, F64), shape).copy()))

    def scalar_of(self, a: Any) -> Any:
        """A 0-d operand as the emitter's operand: a slot holding its value, or a number."""
        v = formulas.constant(a)
        if v is not None:
            return v
        slot = self.e.fresh("a")[1:]
        value, ty = self.value(a)
        self.e.store(slot, ty, value)
        return slot

    def value(self, a: Any) -> tuple[str, str]:
        """A 0-d operand's value and LLVM type: a float64's ``double``, a mask's ``i1``."""
        v = formulas.constant(a)
        if isinstance(v, bool):
            return ("true" if v else "false"), "i1"
        if v is not None:
            return double_literal(float(v)), "double"
        if getattr(a, "shape", None) != () or a.dtype not in (F64, BOOL):
            raise _OutOfScope
        if a.dtype == BOOL:
            byte = self.e.emit(f"load i8, ptr {self.pointer(a)}")
            return self.e.emit(f"icmp ne i8 {byte}, 0"), "i1"
        return self.e.emit(f"load double, ptr {self.pointer(a)}"), "double"

    # ------------------------------------------------------------------ the steps
    def kernel(self, k: Kernel) -> None:
        ir = build(self.plan, k)
        if k.matvec is not None or not llvm_route(ir, bool_scalars=True):
            raise _OutOfScope
        for v in k.outputs:
            self.scratch(v)
        for e in k.partials:
            self.scratch(e.out)
        address = loops_address(ir, cache_dir())
        if address is None:
            raise _OutOfScope
        args = []
        for p, a in zip(ir.params, [*ir.atoms, *k.outputs, *(e.out for e in k.partials)]):
            args.append(f"double {self.e.operand(self.scalar_of(a), 'double')}"
                        if p.kind == "scalar" else f"ptr {self.pointer(a)}")
        for e in k.partials:  # sums over axes start at zero
            self.e.body.append(f"  call void @llvm.memset.p0.i64(ptr {self.ptr[e.out]}, i8 0, "
                               f"i64 {8 * int(np.prod(e.out.shape))}, i1 false)")
        if k.reductions:
            sums = self.item(Slot("scratch", value=((len(k.reductions),), F64)))
            args.append(f"ptr {sums}")
            for j, e in enumerate(k.reductions):
                if e.out.dtype != F64:
                    raise _OutOfScope
                self.ptr[e.out] = self.e.emit(f"getelementptr double, ptr {sums}, i64 {j}")
        fn = self.e.emit(f"inttoptr i64 {address} to ptr")
        self.e.body.append(f"  call void {fn}({', '.join(args)})")

    def line(self, e: Eqn) -> None:
        if e.prim is P.reshape and isinstance(e.inputs[0], (Var, Const)):
            self.ptr[e.out] = self.pointer(e.inputs[0])
        elif e.prim is P.getitem and isinstance(e.inputs[0], (Var, Const)) \
                and e.out.dtype == F64 and _leading(e.inputs[0].shape, e.params["idx"]) is not None:
            at = _leading(e.inputs[0].shape, e.params["idx"])
            self.ptr[e.out] = self.e.emit(f"getelementptr double, ptr "
                                          f"{self.pointer(e.inputs[0])}, i64 {at}")
        elif e.prim is P.concatenate and len(e.out.shape) == 1 and e.out.dtype == F64:
            out, at = self.scratch(e.out), 0
            for a in e.inputs:
                size = int(np.prod(a.shape))
                dst = self.e.emit(f"getelementptr double, ptr {out}, i64 {at}")
                self.e.body.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr "
                                   f"{self.pointer(a)}, i64 {8 * size}, i1 false)")
                at += size
        else:
            f = formulas.of(e)
            if f is None or e.out.shape != ():
                raise _OutOfScope
            value, out = self.scalar(f, e.inputs), self.scratch(e.out)
            if e.out.dtype == BOOL:
                byte = self.e.emit(f"zext i1 {self.e.operand(value, 'i1')} to i8")
                self.e.body.append(f"  store i8 {byte}, ptr {out}")
            else:
                self.e.body.append(f"  store double {self.e.operand(value, 'double')}, "
                                   f"ptr {out}")

    def scalar(self, f: ScalarExpr, inputs: Sequence[Any]) -> Any:
        """A formula through the kernels' own instructions: an operand (a slot's name or a
        number) holding its value."""
        if f.op == "arg":
            return self.scalar_of(inputs[f.value])
        if f.op == "const":
            return f.value
        args = tuple(self.scalar(a, inputs) for a in f.args)
        slot = self.e.fresh("s")[1:]
        kind = OPS[f.op].kind
        boolean = kind == "compare" or kind == "select" and self.e.natural(args[1])[1] == "i1"
        self.e.instr(Instr(f.op, slot, args, BOOL if boolean else F64))
        return slot

    # ------------------------------------------------------------------ the loop
    def carries(self, graphs: Sequence[Graph]) -> tuple[list[tuple[int, ...]], list[str]]:
        """The carries' memory, read by the first ``m`` inputs of each graph: their shapes,
        and the second buffers that carries trading places go through."""
        m = self.m
        first = graphs[0].inputs[:m]
        if any(v.dtype != F64 for v in first):
            raise _OutOfScope
        for j in range(m):
            p = self.item(Slot("carry", j))
            for g in graphs:
                self.ptr[g.inputs[j]] = p
        return [tuple(v.shape) for v in first], [self.item(Slot("next", j)) for j in range(m)]

    def consts(self, inputs: Sequence[Var], at: int) -> None:
        for k, v in enumerate(inputs):
            if v.dtype == F64:
                self.ptr[v] = self.item(Slot("const", at + k))

    def run(self, plan: Any) -> None:
        """Every step of ``plan``, in order."""
        self.plan = plan
        for step in plan.steps:
            self.kernel(step) if isinstance(step, Kernel) else self.line(step)

    def renew(self, outputs: Sequence[Any], inputs: Sequence[Var], nexts: list[str],
              shapes: list[tuple[int, ...]]) -> None:
        """The new carries over the old: a new carry held in another carry's memory (two
        that trade places) goes through a second buffer, so that every carry is read
        before any is written."""
        new = [self.memory(a, shape) for a, shape in zip(outputs, shapes)]
        old = [self.ptr[v] for v in inputs]
        trade = any(p in old and p != q for p, q in zip(new, old))
        copy = "  call void @llvm.{}.p0.p0.i64(ptr {}, ptr {}, i64 {}, i1 false)"
        for p, q, nxt, shape in zip(new, old, nexts, shapes):
            if p != q:
                self.e.body.append(copy.format("memmove", nxt if trade else q, p,
                                               8 * int(np.prod(shape))))
        for p, q, nxt, shape in zip(new, old, nexts, shapes):
            if trade and p != q:
                self.e.body.append(copy.format("memcpy", q, nxt, 8 * int(np.prod(shape))))

    def compile(self) -> LoopKernel:
        g: Graph = self.graph
        m, n, e = self.m, self.n, self.e
        shapes, nexts = self.carries([g])
        bases = {v: (self.item(Slot("x", i)), int(np.prod(v.shape)))
                 for i, v in enumerate(g.inputs[m:m + n]) if v.dtype == F64}
        self.consts(g.inputs[m + n:], 0)
        out = self.item(Slot("out"))
        e.body.append("  br label %step")
        e.label("step")
        e.body.append("  %t = phi i64 [0, %entry], [%t.next, %step.end]")
        s = "%t" if not self.reverse else e.emit(f"sub i64 {self.length - 1}, %t")
        for v, (base, size) in bases.items():
            self.ptr[v] = e.emit(f"getelementptr double, ptr {base}, i64 "
                                 f"{e.emit(f'mul i64 {s}, {size}')}")
        self.run(self.plan)
        for a, (lo, hi) in zip(g.outputs[m:], self.spans[m:]):
            size = (hi - lo) // self.length
            at = e.emit(f"add i64 {lo}, {e.emit(f'mul i64 {s}, {size}')}")
            dst = e.emit(f"getelementptr double, ptr {out}, i64 {at}")
            src = self.memory(a, (size,))
            e.body.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr {src}, "
                          f"i64 {8 * size}, i1 false)")
        self.renew(g.outputs[:m], g.inputs[:m], nexts, shapes)
        e.body.append("  br label %step.end")
        e.label("step.end")
        e.body.append("  %t.next = add i64 %t, 1")
        e.body.append(f"  %more = icmp slt i64 %t.next, {self.length}")
        e.body.append("  br i1 %more, label %step, label %done")
        e.label("done")
        return LoopKernel(_compile(self.function()), self.slots, self.spans[:m], shapes)

    def function(self) -> str:
        """The loop's whole IR: ``@LOOP(ptr %args)``, the tuple of its arrays."""
        e = self.e
        slots = [f"  %v.{name} = alloca {ty}" for name, ty in e.slots.items()]
        ir = "\n".join([
            "define void @LOOP(ptr %args) {", "entry:", *slots, *self.pre, *e.body,
            "  ret void", "}",
            "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
            "declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)",
            "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)", *sorted(e.decls)]) + "\n"
        if e.vector:  # (vector_math's functions a scalar line calls: written in this module)
            ir += vector_math.definitions(e.vector)
        return ir


class _While(_Loop):
    """Writes a while loop's IR."""

    def compile_while(self, body: Any) -> LoopKernel:
        cg, bg, m, e = self.graph, body.graph, self.m, self.e
        shapes, nexts = self.carries([cg, bg])
        self.consts(cg.inputs[m:], 0)
        self.consts(bg.inputs[m:], len(cg.inputs) - m)
        e.body.append("  br label %test")
        e.label("test")
        self.run(self.plan)
        go, ty = self.value(cg.outputs[0])
        if ty != "i1":
            raise _OutOfScope
        e.body.append(f"  br i1 {go}, label %body, label %done")
        e.label("body")
        self.run(body)
        self.renew(bg.outputs, bg.inputs[:m], nexts, shapes)
        e.body.append("  br label %test")
        e.label("done")
        return LoopKernel(_compile(self.function()), self.slots, self.spans, shapes)


_loops: dict[str, int] = {}


def _compile(ir: str) -> int:
    """The loop's machine code in this process's engine (not cached on disk: its IR holds
    this process's kernel addresses)."""
    llvm, tm, engine = machine()
    symbol = "loop_" + hashlib.sha256(ir.encode()).hexdigest()[:24]
    if symbol not in _loops:
        module = llvm.parse_assembly(ir.replace("@LOOP", "@" + symbol))
        module.triple, module.data_layout = tm.triple, str(tm.target_data)
        module.verify()
        tuning = llvm.create_pipeline_tuning_options(speed_level=2)
        passes = llvm.create_pass_builder(tm, tuning)
        passes.getModulePassManager().run(module, passes)
        engine.add_module(module)
        engine.finalize_object()
        _loops[symbol] = engine.get_function_address(symbol)
    return _loops[symbol]
