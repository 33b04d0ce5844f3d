"""Fused float64 kernels rendered straight to LLVM IR, skipping Numba's front end.

A kernel's typed program (:class:`.kernel_ir.KernelIR`: loads, the lowering registry's
scalar operations, stores, sums, tests on the loop variables) becomes LLVM instructions,
one or a few per operation; llvmlite (Numba's own LLVM layer) optimizes them at ``-O3``
for the host CPU and emits machine code. Numba's typing and Python-side lowering are
gone: Rosenbrock's gradient builds in ~0.05 s instead of ~0.3 s.

Each value is a stack slot (``alloca``) that LLVM promotes to registers, so the emitter
needs no SSA bookkeeping. Floating point is numpy's: no fast-math flag except ``reassoc``
on the sums' ``fadd`` (so a fused sum vectorizes, as Numba's ``fastmath={'reassoc'}``);
``exp``, ``log``, ``log1p`` and ``tanh`` are diffkit's own straight-line IR
(:mod:`.vector_math`, within 1 ULP of the C library's), so their loops vectorize; the
other functions are the C library's as the registry names them (``llvm.sin.f64``,
``tan`` ...), as in Numba. Output pointers are ``noalias``, and a light pass (SROA, CFG
simplification, the loop unroller, which peels off the iterations where an edge's test
changes) runs before -O3: its vectorizer then sees one plain loop (without that pass it
gives up: 3x slower). An innermost loop without such tests is marked to be left whole
by that pass: unrolled first (a 64-step row by ten), the vectorizer left it scalar.
Python calls the kernel through ctypes with one argument, the tuple of its arrays,
numbers and sums' array (ctypes takes at most 1,024 arguments; a kernel can read more
arrays than that: a thousand concatenations summed); a small wrapper reads each item's
data pointer or number out of the tuple (``a.ctypes.data`` would cost microseconds per
array and call) and calls the loops.

Scope (:func:`llvm_route`, decided from the types alone): arrays of float64 or bool,
float64 scalars and values. Any other kernel (float32, integers) is compiled by Numba.
With ``parallel=True`` a kernel that takes long enough
(:func:`.kernel_threads.threads_share`) is compiled once per part of its first axis, and
the parts run at once on the cores (:class:`LLVMKernel`).

Machine code is cached like Numba's ``cache=True``: the object file, named by the hash
of the IR and the CPU, goes to the cache folder the caller names; a second process loads
it into the one MCJIT engine of the process without compiling (``STATS`` counts both).

>>> import diffkit.numpy as dnp
>>> from diffkit.compiler.fusion import fuse
>>> from diffkit.compiler.kernel_ir import build
>>> from diffkit.ir.tracer import trace_graph
>>> plan = fuse(trace_graph(lambda x: dnp.sum(dnp.sin(x) * 2.0), (np.ones(3),)))
>>> for line in kernel_llvm(build(plan, plan.kernels[0]), "k0").splitlines():
...     if "sin" in line or "fadd" in line:
...         print(line)
  %t11 = call double @llvm.sin.f64(double %t10)
  %t16 = fadd reassoc double %t14, %t15
declare double @llvm.sin.f64(double)
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import struct
from collections.abc import Callable, Sequence
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from ..primitives.lowering import OPS
from . import vector_math
from .kernel_ir import Instr, KernelIR, Operand, Param, flattened
from .kernel_threads import split, workers

F64, BOOL = np.dtype(np.float64), np.dtype(np.bool_)
#: rows of a matrix-vector pair's block (.matvec): as many as fit in this many bytes
MATVEC_BLOCK_BYTES = 64 * 1024
MATVEC_ROWS = 4  # rows a pair's products take at once
#: a kernel's loops are cut at their edges' tests while that makes at most this many
#: copies of the body (a 2-D stencil's 3 x 3)
RANGES = 9

#: how often this process compiled a kernel, and loaded one from the disk cache
STATS = {"compiled": 0, "loaded": 0}

ARITH = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
FCMP = {"greater": "ogt", "greater_equal": "oge", "less": "olt", "less_equal": "ole",
        "equal": "oeq", "not_equal": "une"}  # ordered, but != (NaN != NaN, as numpy)
ICMP = {"greater": "ugt", "greater_equal": "uge", "less": "ult", "less_equal": "ule",
        "equal": "eq", "not_equal": "ne"}  # on booleans (True > False)


def _offset(probe: object, value: Any, kind: type, offsets: Sequence[int]) -> int | None:
    """The first of ``offsets`` from the start of the object ``probe`` (CPython: its
    address is ``id``) where a ``kind`` (a ctypes type) holds ``value``, else None."""
    return next((k for k in offsets if kind.from_address(id(probe) + k).value == value), None)


def _layout() -> tuple[int | None, int | None, int | None]:
    """Where CPython and numpy keep what a kernel's wrapper reads, checked on live objects:
    a numpy array's data pointer (``PyArrayObject.data``), a tuple's first item
    (``PyTupleObject.ob_item``), a float's number (``PyFloatObject.ob_fval``); None where
    one is not where the C headers put it (then no LLVM kernels)."""
    array, number = np.zeros(1), 0.1 + 0.2
    return (_offset(array, array.ctypes.data, ctypes.c_void_p, (16, 24, 32)),
            _offset((array,), id(array), ctypes.c_void_p, (24, 32)),
            _offset(number, number, ctypes.c_double, (16, 24)))


DATA, ITEMS, NUMBER = _layout()


def double_literal(v: float) -> str:
    """An exact LLVM literal for a float64 (its bits in hex)."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]


def llvm_route(ir: KernelIR, bool_scalars: bool = False) -> bool:
    """Whether this module renders the kernel (else Numba compiles it): float64 or bool
    arrays, float64 scalars, arithmetic and calls on float64, llvmlite there.
    ``bool_scalars``: boolean scalars too, for a caller that passes them as 0.0 or 1.0 (a
    loop compiled whole; Python's floats are read from the tuple)."""
    if None in (DATA, ITEMS, NUMBER) or \
            importlib.util.find_spec("llvmlite") is None:
        return False
    scalars = (F64, BOOL) if bool_scalars else (F64,)
    if any(p.dtype not in (F64, BOOL) or (p.kind == "scalar" and p.dtype not in scalars)
           for p in ir.params):
        return False
    return all(i.dtype in (None, F64) or (i.dtype == BOOL and (  # no arithmetic on booleans
        i.op not in OPS or OPS[i.op].kind != "arith")) for i in ir.instructions())


class Emitter:
    """Writes the LLVM IR of one kernel from its typed program."""

    def __init__(self, ir: KernelIR) -> None:
        self.ir = ir
        self.params: dict[str, Param] = {p.name: p for p in ir.params}
        self.slots: dict[str, str] = {}       # result -> its LLVM type (slot %v.<name>)
        self.loops: dict[int, str] = {}       # axis -> the loop variable's i64 value
        self.known: dict[int, tuple[int, int]] = {}  # axis -> the range its loop runs now
        self.cuts = {axis: sorted({b for i in ir.instructions() if i.op == "if"
                                   for a, _, b in i.args[0] if a == axis})
                     for axis in range(len(ir.domain))}
        self.body: list[str] = []
        self.decls: set[str] = set()
        self.vector: set[str] = set()        # vector_math functions it calls
        self.meta: list[int] = []            # loops kept whole (metadata !1, !2 ...)
        self.block = "entry"
        self.n = 0

    def fresh(self, stem: str = "t") -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def emit(self, text: str) -> str:
        name = self.fresh()
        self.body.append(f"  {name} = {text}")
        return name

    def label(self, name: str) -> None:
        self.body.append(f"{name}:")
        self.block = name

    # ---------------------------------------------------------------- values
    def natural(self, a: Operand) -> tuple[str, str]:
        """``(value, type)`` of an operand: a slot's, a scalar parameter's, a number's."""
        if isinstance(a, str):
            if a in self.params:
                return f"%{a}", "double"
            ty = self.slots[a]
            return self.emit(f"load {ty}, ptr %v.{a}"), ty
        if isinstance(a, bool):
            return ("true" if a else "false"), "i1"
        return double_literal(float(a)), "double"

    def operand(self, a: Operand, want: str) -> str:
        """An operand as a ``double`` or an ``i1`` (numpy's truth: nonzero, NaN included)."""
        value, ty = self.natural(a)
        if ty == want:
            return value
        if want == "double":
            return self.emit(f"uitofp i1 {value} to double")
        return self.emit(f"fcmp une double {value}, 0.0")

    def store(self, name: str, ty: str, value: str) -> None:
        self.slots.setdefault(name, ty)
        self.body.append(f"  store {ty} {value}, ptr %v.{name}")

    def address(self, array: str, index: tuple) -> str:
        """Pointer to the element of a C-contiguous array at ``index``."""
        p = self.params[array]
        flat = "0"
        for ix, n in zip(index, p.shape):
            v = str(ix[1]) if ix[0] == "c" else self.loops[ix[1]]
            if ix[0] == "i" and ix[2]:
                v = self.emit(f"add nsw i64 {v}, {ix[2]}")
            flat = v if flat == "0" else self.emit(
                f"add nsw i64 {self.emit(f'mul nsw i64 {flat}, {n}')}, {v}")
        elem = "i8" if p.dtype == BOOL else "double"
        return self.emit(f"getelementptr inbounds {elem}, ptr %{array}, i64 {flat}")

    # ---------------------------------------------------------------- instructions
    def instr(self, i: Instr) -> None:
        ty = "i1" if i.dtype == BOOL else "double"
        if i.op == "if":
            self.branch(*i.args)
        elif i.op == "load":
            ptr = self.address(*i.args)
            if self.params[i.args[0]].dtype == BOOL:
                byte = self.emit(f"load i8, ptr {ptr}")
                self.store(i.result, "i1", self.emit(f"icmp ne i8 {byte}, 0"))
            else:
                self.store(i.result, "double", self.emit(f"load double, ptr {ptr}"))
        elif i.op == "store":
            out, value = i.args
            ptr = self.address(out, tuple(("i", a, 0) for a in range(len(self.ir.domain))))
            if self.params[out].dtype == BOOL:
                byte = self.emit(f"zext i1 {self.operand(value, 'i1')} to i8")
                self.body.append(f"  store i8 {byte}, ptr {ptr}")
            else:
                self.body.append(f"  store double {self.operand(value, 'double')}, ptr {ptr}")
        elif i.op == "add_to":
            k, value = i.args
            total = self.emit(f"load double, ptr %s.{k}")
            add = self.operand(value, "double")
            self.body.append(f"  store double {self.emit(f'fadd reassoc double {total}, {add}')}"
                             f", ptr %s.{k}")
        elif i.op == "add_at":
            out, value, index, ordered = i.args
            ptr = self.address(out, index)
            total = self.emit(f"fadd {'' if ordered else 'reassoc '}double "
                              f"{self.emit(f'load double, ptr {ptr}')}, "
                              f"{self.operand(value, 'double')}")
            self.body.append(f"  store double {total}, ptr {ptr}")
        elif i.op == "set":
            self.store(i.result, ty, self.operand(i.args[0], ty))
        else:
            self.store(i.result, ty, self.scalar(i))

    def scalar(self, i: Instr) -> str:
        """A scalar operation of the lowering registry."""
        op = OPS[i.op]
        if op.kind == "compare":
            a, b = (self.natural(x) for x in i.args)
            if a[1] == b[1] == "i1":
                return self.emit(f"icmp {ICMP[i.op]} i1 {a[0]}, {b[0]}")
            a, b = (self.operand(x, "double") for x in i.args)
            return self.emit(f"fcmp {FCMP[i.op]} double {a}, {b}")
        if op.kind == "select":
            ty = "i1" if i.dtype == BOOL else "double"
            c, a, b = self.operand(i.args[0], "i1"), *(self.operand(x, ty) for x in i.args[1:])
            return self.emit(f"select i1 {c}, {ty} {a}, {ty} {b}")
        args = [self.operand(x, "double") for x in i.args]
        if op.kind == "arith":
            return self.emit(f"fneg double {args[0]}" if len(args) == 1 else
                             f"{ARITH[i.op]} double {args[0]}, {args[1]}")
        if op.c in vector_math.CALLS:  # written out in IR (vector_math): the loop vectorizes
            self.vector.add(op.c)
            self.decls.update(vector_math.DECLARATIONS)
            return self.emit(f"call double @{vector_math.CALLS[op.c]}(double {args[0]})")
        fn = op.llvm or op.c
        self.decls.add(f"declare double @{fn}({', '.join('double' for _ in args)})")
        return self.emit(f"call double @{fn}({', '.join('double ' + a for a in args)})")

    def branch(self, tests: tuple, body: tuple) -> None:
        """``body`` where every test on the loop variables holds (a test on a loop whose
        range decides it is decided here: its body is written without it, or not at all)."""
        left = []
        for axis, cmp, bound in tests:
            if axis not in self.known:
                left.append((axis, cmp, bound))
                continue
            lo, hi = self.known[axis]
            if (cmp == ">=" and hi <= bound) or (cmp == "<" and lo >= bound):
                return  # false on the whole range
            if not ((cmp == ">=" and lo >= bound) or (cmp == "<" and hi <= bound)):
                left.append((axis, cmp, bound))
        if not left:
            for i in body:
                self.instr(i)
            return
        test = None
        for axis, cmp, bound in left:
            t = self.emit(f"icmp {'sge' if cmp == '>=' else 'slt'} i64 {self.loops[axis]}, "
                          f"{bound}")
            test = t if test is None else self.emit(f"and i1 {test}, {t}")
        then, end = self.fresh("then.")[1:], self.fresh("end.")[1:]
        self.body.append(f"  br i1 {test}, label %{then}, label %{end}")
        self.label(then)
        for i in body:
            self.instr(i)
        self.body.append(f"  br label %{end}")
        self.label(end)

    def counted(self, stem: str, lo: str, hi: str, body: Callable[[str], None],
                unroll: bool = True) -> None:
        """``for i in range(lo, hi): body(i)`` (bounds are i64 values or numbers); with
        ``unroll=False`` the light pass leaves the loop whole, for -O3 to vectorize (a
        short dot product unrolled first is one long chain of additions)."""
        head, inner, latch, done = (self.fresh(f"{stem}.{x}.")[1:] for x in
                                    ("head", "body", "latch", "exit"))
        before = self.block
        self.body.append(f"  br label %{head}")
        self.label(head)
        i, step = self.fresh(f"{stem}."), self.fresh(f"{stem}.")
        self.body.append(f"  {i} = phi i64 [{lo}, %{before}], [{step}, %{latch}]")
        more = self.emit(f"icmp slt i64 {i}, {hi}")
        self.body.append(f"  br i1 {more}, label %{inner}, label %{done}")
        self.label(inner)
        body(i)
        self.body.append(f"  br label %{latch}")
        self.label(latch)
        self.body.append(f"  {step} = add nuw nsw i64 {i}, 1")
        if unroll:
            self.body.append(f"  br label %{head}")
        else:
            self.meta.append(len(self.meta) + 1)
            self.body.append(f"  br label %{head}, !llvm.loop !{self.meta[-1]}")
        self.label(done)

    def loop(self, axis: int, lo: int | str = 0, hi: int | str | None = None) -> None:
        """The loop over ``axis`` of the domain (from ``lo`` to ``hi``), the inner loops
        or the body inside. It is cut where a test on it changes (an edge: ``i < n - 1``),
        one loop per range with the tests decided (:meth:`branch`), while the copies of
        the body stay few (:data:`RANGES`): the long middle loop then has no test and
        vectorizes, whatever range a thread's share is. The innermost loop is left whole
        when no test is left in it. (Bounds that are IR values, a block of rows, are not
        cut.)"""
        hi = self.ir.domain[axis] if hi is None else hi
        ranges: list[tuple[Any, Any]] = [(lo, hi)]
        if isinstance(lo, int) and isinstance(hi, int) and \
                prod(len(self.cuts[a]) + 1 for a in range(axis + 1)) <= RANGES:
            cuts = [lo, *(b for b in self.cuts[axis] if lo < b < hi), hi]
            ranges = list(zip(cuts, cuts[1:]))

        def body(i: str) -> None:
            self.loops[axis] = i
            if axis + 1 < len(self.ir.domain):
                self.loop(axis + 1)
            else:
                for instr in self.ir.body:
                    self.instr(instr)
            del self.loops[axis]
        innermost = axis + 1 == len(self.ir.domain)
        for a, b in ranges:
            if len(ranges) > 1:
                self.known[axis] = (a, b)
            whole = innermost and all(
                t[0] in self.known for i in self.ir.instructions() if i.op == "if"
                for t in i.args[0])
            self.counted(f"i{axis}", str(a), str(b), body, unroll=not whole)
            self.known.pop(axis, None)

    def element(self, array: str, flat: str) -> str:
        return self.emit(f"getelementptr inbounds double, ptr %{array}, i64 {flat}")

    def matvec_loops(self) -> None:
        """The kernel's loop between ``rows = X @ w`` and ``out = Xᵀ @ grad``, by blocks of
        rows that stay in the cache (:mod:`.matvec`); within a block, the products take
        :data:`MATVEC_ROWS` rows at a time (independent sums, and one pass over ``out``
        for all of them), then the rest one by one; in :class:`.MatvecLoops`' order (no
        reassociation, no fused multiply-add: the Numba route's bits)."""
        mv = self.ir.matvec
        X, w, rows, grad, out, lanes = (mv.matrix, mv.vector, mv.rows, mv.grad, mv.out,
                                        mv.lanes)
        m, d = self.params[X].shape
        block = max(MATVEC_ROWS, min(m, MATVEC_BLOCK_BYTES // (8 * d)))
        whole = d - d % lanes

        def x_at(r: str, j: str) -> str:
            flat = self.emit(f"add nsw i64 {self.emit(f'mul nsw i64 {r}, {d}')}, {j}")
            return self.emit(f"load double, ptr {self.element(X, flat)}")

        vec = f"<{lanes} x double>"

        def dot(group: list[str]) -> None:
            """Each row's lanes as one vector (lane k: the columns j ≡ k), added left to
            right, then the remaining columns one by one."""
            accs = [f"mv.acc{n}" for n in range(len(group))]
            for a in accs:
                self.slots[a] = vec
                self.body.append(f"  store {vec} zeroinitializer, ptr %v.{a}")

            def lanes_of(g: str) -> None:
                first = self.emit(f"mul nsw i64 {g}, {lanes}")
                wv = self.emit(f"load {vec}, ptr {self.element(w, first)}, align 8")
                for r, a in zip(group, accs):
                    flat = self.emit(f"add nsw i64 {self.emit(f'mul nsw i64 {r}, {d}')}, {first}")
                    xv = self.emit(f"load {vec}, ptr {self.element(X, flat)}, align 8")
                    total = self.emit(f"fadd {vec} {self.emit(f'load {vec}, ptr %v.{a}')}, "
                                      f"{self.emit(f'fmul {vec} {xv}, {wv}')}")
                    self.body.append(f"  store {vec} {total}, ptr %v.{a}")

            self.counted("j", "0", str(whole // lanes), lanes_of, unroll=False)
            sums = []
            for a in accs:  # the lanes, left to right
                v = self.emit(f"load {vec}, ptr %v.{a}")
                total = self.emit(f"extractelement {vec} {v}, i64 0")
                for k in range(1, lanes):
                    total = self.emit(f"fadd double {total}, "
                                      f"{self.emit(f'extractelement {vec} {v}, i64 {k}')}")
                slot = f"{a}.s"
                self.slots[slot] = "double"
                self.body.append(f"  store double {total}, ptr %v.{slot}")
                sums.append(slot)

            def rest(j: str) -> None:
                wj = self.emit(f"load double, ptr {self.element(w, j)}")
                for r, slot in zip(group, sums):
                    product = self.emit(f"fmul double {x_at(r, j)}, {wj}")
                    total = self.emit(f"fadd double {self.emit(f'load double, ptr %v.{slot}')}"
                                      f", {product}")
                    self.body.append(f"  store double {total}, ptr %v.{slot}")

            self.counted("t", str(whole), str(d), rest, unroll=False)
            for r, slot in zip(group, sums):
                self.body.append(f"  store double {self.emit(f'load double, ptr %v.{slot}')}, "
                                 f"ptr {self.element(rows, r)}")

        def spread(group: list[str]) -> None:
            gs = [self.emit(f"load double, ptr {self.element(grad, r)}") for r in group]

            def term(j: str) -> None:
                at = self.element(out, j)
                total = self.emit(f"load double, ptr {at}")
                for r, g in zip(group, gs):
                    product = self.emit(f"fmul double {g}, {x_at(r, j)}")
                    total = self.emit(f"fadd double {total}, {product}")
                self.body.append(f"  store double {total}, ptr {at}")
            self.counted("j", "0", str(d), term, unroll=False)

        def by_rows(lo: str, hi: str, mid: str, each: Callable[[list[str]], None]) -> None:
            def group(k: str) -> None:
                offset = self.emit(f"mul nsw i64 {k}, {MATVEC_ROWS}")
                first = self.emit(f"add nsw i64 {lo}, {offset}")
                each([first] + [self.emit(f"add nsw i64 {first}, {n}")
                                for n in range(1, MATVEC_ROWS)])
            count = self.emit(f"sdiv i64 {self.emit(f'sub nsw i64 {mid}, {lo}')}, {MATVEC_ROWS}")
            self.counted("g", "0", count, group)
            self.counted("r", mid, hi, lambda r: each([r]))

        def rows_block(b: str) -> None:
            lo = self.emit(f"mul nsw i64 {b}, {block}")
            end = self.emit(f"add nsw i64 {lo}, {block}")
            hi = self.emit(f"select i1 {self.emit(f'icmp slt i64 {end}, {m}')}, i64 {end}, i64 {m}")
            size = self.emit(f"sub nsw i64 {hi}, {lo}")
            whole = self.emit(f"mul nsw i64 {self.emit(f'sdiv i64 {size}, {MATVEC_ROWS}')}, "
                              f"{MATVEC_ROWS}")
            mid = self.emit(f"add nsw i64 {lo}, {whole}")
            by_rows(lo, hi, mid, dot)
            self.loop(0, lo, hi)
            by_rows(lo, hi, mid, spread)

        self.counted("z", "0", str(d), lambda j: self.body.append(
            f"  store double 0.0, ptr {self.element(out, j)}"))
        self.counted("b", "0", str(-(-m // block)), rows_block)

    def function(self, symbol: str, part: tuple[int, int] | None = None) -> str:
        """Two functions: ``@symbol.loops`` on data pointers and numbers (``noalias``: LLVM
        may vectorize), and ``@symbol``, called from Python with one tuple (the kernel's
        arrays and numbers in order, then the sums' array), which reads each item's data
        pointer or number and calls it (not inlined: the loops keep their ``noalias``
        arguments through the light pass that peels them). ``part``: the range of the
        first axis it computes (a thread's share), as constants, so that the light pass
        still peels the edges' tests off and the rest vectorizes."""
        if self.ir.matvec:
            self.matvec_loops()
        else:
            self.loop(0, *(part or ()))
        written = self.ir.matvec.rows if self.ir.matvec else None  # the rows: written first
        inner, unpack = [], []
        for k, p in enumerate(self.ir.params):
            unpack += [f"  %{p.name}.item = getelementptr i8, ptr %args, i64 {ITEMS + 8 * k}",
                       f"  %{p.name}.obj = load ptr, ptr %{p.name}.item"]
            if p.kind == "scalar":
                inner.append(f"double %{p.name}")
                unpack += [f"  %{p.name}.at = getelementptr i8, ptr %{p.name}.obj, i64 {NUMBER}",
                           f"  %{p.name} = load double, ptr %{p.name}.at"]
                continue
            readonly = p.kind == "array" and p.name != written
            inner.append(f"ptr noalias {'readonly ' if readonly else ''}%{p.name}")
            unpack += [f"  %{p.name}.at = getelementptr i8, ptr %{p.name}.obj, i64 {DATA}",
                       f"  %{p.name} = load ptr, ptr %{p.name}.at"]
        if self.ir.sums:
            at = ITEMS + 8 * len(self.ir.params)
            inner.append("ptr noalias %sums")
            unpack += [f"  %sums.item = getelementptr i8, ptr %args, i64 {at}",
                       "  %sums.obj = load ptr, ptr %sums.item",
                       f"  %sums.at = getelementptr i8, ptr %sums.obj, i64 {DATA}",
                       "  %sums = load ptr, ptr %sums.at"]
        call_args = ", ".join(f"{a.split()[0]} {a.split()[-1]}" for a in inner)
        slots = [f"  %v.{n} = alloca {ty}" for n, ty in self.slots.items()]
        sums = [line for k in range(self.ir.sums) for line in
                (f"  %s.{k} = alloca double", f"  store double 0.0, ptr %s.{k}")]
        results = [line for k in range(self.ir.sums) for line in (
            f"  %r.{k} = load double, ptr %s.{k}",
            f"  %p.{k} = getelementptr double, ptr %sums, i64 {k}",
            f"  store double %r.{k}, ptr %p.{k}")]
        return "\n".join([
            f"define internal void @{symbol}.loops({', '.join(inner)}) noinline nounwind {{",
            "entry:", *slots, *sums, *self.body, *results, "  ret void", "}", "",
            f"define void @{symbol}(ptr %args) nounwind {{",
            *unpack,
            f"  call void @{symbol}.loops({call_args})", "  ret void", "}",
            *sorted(self.decls), *self.metadata()]) + "\n" + vector_math.definitions(self.vector)

    def metadata(self) -> list[str]:
        """Each loop kept whole: its own loop identity, asking not to be unrolled."""
        if not self.meta:
            return []
        whole = len(self.meta) + 1
        return [f'!{whole} = !{{!"llvm.loop.unroll.disable"}}'] + [
            f"!{n} = distinct !{{!{n}, !{whole}}}" for n in self.meta]


def kernel_llvm(ir: KernelIR, symbol: str, part: tuple[int, int] | None = None) -> str:
    """The LLVM IR of a kernel inside :func:`llvm_route`'s scope (``part``: of its first
    axis, see :meth:`Emitter.function`)."""
    return Emitter(ir).function(symbol, part)


# -------------------------------------------------------------------- machine code
_jit: dict[str, Any] = {}          # "llvm", "tm", "engine": made once per process
_addresses: dict[str, int] = {}    # symbol -> address of its machine code (this process)


def machine() -> tuple[Any, Any, Any]:
    """llvmlite's binding, the host's target machine, and the process's MCJIT engine."""
    if not _jit:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(), opt=3,
                                          features=llvm.get_host_cpu_features().flatten(),
                                          codemodel="jitdefault")
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        # what a kernel's machine code depends on besides its IR, asked of LLVM once (each
        # query crosses into llvmlite: a program of 800 kernels spent 1.5 s asking again)
        host = "\0".join([tm.triple, llvm.get_host_cpu_name(),
                          llvm.get_host_cpu_features().flatten(),
                          ".".join(map(str, llvm.llvm_version_info))])
        _jit.update(llvm=llvm, tm=tm, engine=engine, host=host)
    return _jit["llvm"], _jit["tm"], _jit["engine"]


def _object_code(ir: str, symbol: str, cache: Path) -> bytes:
    """The kernel's object file: from the folder ``cache``, else compiled and saved."""
    path = cache / f"{symbol}.o"
    if path.exists():
        STATS["loaded"] += 1
        return path.read_bytes()
    llvm, tm, _ = machine()
    module = llvm.parse_assembly(ir)
    module.triple, module.data_layout = tm.triple, str(tm.target_data)
    module.verify()
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    passes = llvm.create_pass_builder(tm, tuning)
    peel = llvm.create_new_module_pass_manager()  # the edges' tests off first, so that
    peel.add_sroa_pass()                           # -O3's vectorizer sees one plain loop
    peel.add_simplify_cfg_pass()
    peel.add_loop_unroll_pass()
    peel.run(module, passes)
    passes.getModulePassManager().run(module, passes)
    obj = tm.emit_object(module)
    STATS["compiled"] += 1
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_bytes(obj)
        os.replace(tmp, path)  # whole or not at all, for a process loading it meanwhile
    except OSError:  # a read-only cache: the next process compiles again
        pass
    return obj


def _address(ir: str, cache: Path, entry: str = "") -> int:
    """The address of ``@KERNEL`` + ``entry`` in the module ``ir``, compiled or loaded."""
    llvm, tm, engine = machine()
    digest = hashlib.sha256("\0".join([ir, _jit["host"]]).encode())
    symbol = f"dk_{digest.hexdigest()[:24]}"
    if symbol + entry not in _addresses:
        if not any(name.startswith(symbol) for name in _addresses):
            obj = _object_code(ir.replace("@KERNEL", "@" + symbol), symbol, cache)
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
        _addresses[symbol + entry] = engine.get_function_address(symbol + entry)
    return _addresses[symbol + entry]


def loops_address(ir: KernelIR, cache: Path) -> int | None:
    """The address of a kernel's loops, called with data pointers and numbers (no tuple):
    what a loop compiled whole calls (:mod:`.loop_kernels`); None where LLVM refuses it."""
    text = kernel_llvm(flattened(ir), "KERNEL").replace("define internal void @KERNEL.loops",
                                                        "define void @KERNEL.loops")
    try:
        return _address(text, cache, ".loops")
    except (ImportError, RuntimeError):
        return None


class LLVMKernel:
    """A compiled kernel called as Numba's would be: ``k(*inputs, *outputs)`` returns the
    tuple of its sums (None without sums). Its arguments go to the machine code as one
    tuple, however many there are (ctypes' limit is 1,024 arguments): arrays made
    C-contiguous on the way in, numbers as floats, the sums' array last. With several
    ``addresses`` (one per part of the first axis, :func:`split`) each part runs at once
    on a thread of its own, the first on the calling thread (ctypes lets the GIL go during
    the call), and the parts' sums are added in order."""

    def __init__(self, addresses: Sequence[int], params: Sequence[Param], sums: int) -> None:
        self.fns = [ctypes.CFUNCTYPE(None, ctypes.py_object)(a) for a in addresses]
        self.sums, self.parts = sums, len(addresses)
        # (called at every step of a program: the conversions by position, worked out once)
        self.arrays = [(i, p.dtype) for i, p in enumerate(params) if p.kind == "array"]
        self.numbers = [i for i, p in enumerate(params) if p.kind == "scalar"]

    def __call__(self, *args: Any) -> tuple[float, ...] | None:
        call = list(args)
        for i, dtype in self.arrays:
            call[i] = np.ascontiguousarray(call[i], dtype)
        for i in self.numbers:
            call[i] = float(call[i])
        if self.parts == 1 and not self.sums:  # (the common call: nothing more made)
            self.fns[0](tuple(call))
            return None
        sums = [np.empty(self.sums) for _ in self.fns]
        calls = [tuple(call + [s]) if self.sums else tuple(call) for s in sums]
        others = [workers(self.parts - 1).submit(fn, c) for fn, c in
                  zip(self.fns[1:], calls[1:])]
        self.fns[0](calls[0])
        for f in others:
            f.result()
        if not self.sums:
            return None
        return tuple(sums[0].tolist() if self.parts == 1 else np.sum(sums, axis=0).tolist())


def lower(ir: KernelIR, cache: Path, threads: int = 1) -> LLVMKernel | None:
    """The kernel compiled through LLVM IR (machine code cached in the folder ``cache``),
    or None outside :func:`llvm_route`'s scope or when LLVM refuses it: then Numba
    compiles it. ``threads``: its first axis shared by that many threads, a function
    compiled for each part."""
    if not llvm_route(ir):
        return None
    ir = flattened(ir)
    try:
        addresses = [_address(kernel_llvm(ir, "KERNEL", part), cache)
                     for part in split(ir, threads) or [None]]
    except (ImportError, RuntimeError):  # no llvmlite; LLVM refused the IR (a gap here)
        return None
    return LLVMKernel(addresses, ir.params, ir.sums)
