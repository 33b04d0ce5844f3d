"""Fused float64 kernels lowered straight to LLVM IR, skipping Numba's front end.

A fused kernel's Python source (:class:`.kernels.KernelWriter`) is regular: scalar
assignments, array reads ``a0[i0 + 1]``, writes ``o0[i0] = t7``, sums ``s0 += t3``, index
tests ``if i0 >= 1:``, nested ``for i0 in range(n)``, ``a if c else b`` and ``math.exp``
calls. This module reads that source with :mod:`ast` and writes one LLVM instruction (or a
few) per construct; llvmlite (Numba's own LLVM layer) optimizes it at ``-O3`` for the host
CPU and emits machine code. Numba's typing and Python-side lowering are gone: Rosenbrock's
gradient builds in ~0.05 s instead of ~0.3 s.

Each value is a stack slot (``alloca``) that LLVM promotes to registers, so the emitter
needs no SSA bookkeeping. Floating point is numpy's: no fast-math flag except ``reassoc``
on the sums' ``fadd`` (so a fused sum vectorizes, as Numba's ``fastmath={'reassoc'}``),
``np.maximum``/``np.minimum`` propagate NaN (a compare and select, not ``llvm.maxnum``),
and the other functions are the C library's (``llvm.exp``, ``tanh`` ...), as in Numba.
Output pointers are ``noalias``, and a light pass (SROA, CFG simplification, the loop
unroller, which peels off the iterations where an edge's test changes) runs before -O3:
its vectorizer then sees one plain loop (without that pass it gives up: 3x slower).
Python calls the kernel through ctypes with the arrays themselves; a small wrapper reads
their data pointers (``a.ctypes.data`` would cost microseconds per array and call).

Scope: kernels whose arrays are float64 or bool and whose scalars are float64, not
``parallel``. Anything else (float32, integers, a construct or function not mapped here)
gives None and the caller compiles the kernel with Numba as before.

Machine code is cached like Numba's ``cache=True``: the object file, named by the hash
of the IR and the CPU, goes to the cache folder the caller names; a second process loads
it into the one MCJIT engine of the process without compiling (``STATS`` counts both).

>>> src = '''def k0(a0, a1, o0):
...     s0 = 0.0
...     for i0 in range(3):
...         t1 = math.exp(a0[i0]) * a1
...         o0[i0] = t1
...         s0 += t1
...     return (s0,)
... '''
>>> f64 = np.dtype(np.float64)
>>> ir, sums = kernel_ir(src, [("array", f64, (3,)), ("scalar", f64, ()), ("out", f64, (3,))],
...                      "k0")
>>> for line in ir.splitlines():
...     if "exp" in line or "fadd" in line:
...         print(line)
  %t10 = call double @llvm.exp.f64(double %t9)
  %t16 = fadd reassoc double %t14, %t15
declare double @llvm.exp.f64(double)
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import importlib.util
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..primitives.lowering import OPS

F64, BOOL = np.dtype(np.float64), np.dtype(np.bool_)

#: how often this process compiled a kernel, and loaded one from the disk cache
STATS = {"compiled": 0, "loaded": 0}

# a C library function as kernels spell it (math.exp, np.cbrt, abs) -> its operation
CALLS = {op.py: op for op in OPS.values() if op.kind == "call"}
FLOAT_OPS = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul", ast.Div: "fdiv"}
INT_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
FCMP = {ast.Gt: "ogt", ast.GtE: "oge", ast.Lt: "olt", ast.LtE: "ole", ast.Eq: "oeq",
        ast.NotEq: "une"}  # ordered, except != (NaN != NaN is True, as in Python/numpy)
ICMP = {ast.Gt: "sgt", ast.GtE: "sge", ast.Lt: "slt", ast.LtE: "sle", ast.Eq: "eq",
        ast.NotEq: "ne"}
CONSTANTS = {"nan": float("nan"), "inf": float("inf")}


def _data_offset() -> int | None:
    """Where a numpy array object keeps its data pointer (``PyArrayObject.data``), checked
    on a live array; None if not where the C headers put it (then no LLVM kernels)."""
    probe = np.zeros(1)
    for offset in (16, 24, 32):
        if ctypes.c_void_p.from_address(id(probe) + offset).value == probe.ctypes.data:
            return offset
    return None


DATA = _data_offset()


class Unsupported(Exception):
    """The kernel uses something this lowering does not map (it goes to Numba)."""


def _double(v: float) -> str:
    """An exact LLVM literal for a float64 (its bits in hex)."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]


class _Lowering:
    """Writes the IR of one kernel function from its Python source."""

    def __init__(self, fn: ast.FunctionDef, params: list[tuple]) -> None:
        self.params = {a.arg: p for a, p in zip(fn.args.args, params)}
        self.slots: dict[str, str] = {}          # variable -> its type (slot %v.<name>)
        self.loops: dict[str, str] = {}          # loop variable -> its current i64 value
        self.body: list[str] = []
        self.decls: set[str] = set()
        self.block = "entry"
        self.n = 0
        self.sums = 0                            # how many values it returns

    # ---------------------------------------------------------------- helpers
    def fresh(self, stem: str = "t") -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def emit(self, text: str, ty: str) -> tuple[str, str]:
        name = self.fresh()
        self.body.append(f"  {name} = {text}")
        return name, ty

    def label(self, name: str) -> None:
        self.body.append(f"{name}:")
        self.block = name

    def call(self, fn: str, args: list[str]) -> tuple[str, str]:
        self.decls.add(f"declare double @{fn}({', '.join('double' for _ in args)})")
        return self.emit(f"call double @{fn}({', '.join('double ' + a for a in args)})",
                         "double")

    def as_double(self, v: tuple[str, str]) -> str:
        value, ty = v
        if ty == "double":
            return value
        if ty == "i64" and value.lstrip("-").isdigit():
            return _double(float(int(value)))
        if ty == "i1":
            return self.emit(f"uitofp i1 {value} to double", "double")[0]
        raise Unsupported(f"a float from {ty}")

    # ---------------------------------------------------------------- statements
    def statements(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.statement(s)

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            target = s.targets[0]
            if isinstance(target, ast.Name):
                self.store(target.id, self.expr(s.value))
            elif isinstance(target, ast.Subscript):
                value = self.expr(s.value)
                ptr, kind = self.address(target)
                if kind == BOOL:
                    byte = self.emit(f"zext i1 {self.as_bool(value)} to i8", "i8")[0]
                    self.body.append(f"  store i8 {byte}, ptr {ptr}")
                else:
                    self.body.append(f"  store double {self.as_double(value)}, ptr {ptr}")
            else:
                raise Unsupported("assignment target")
        elif isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) \
                and isinstance(s.target, ast.Name) and self.slots.get(s.target.id) == "double":
            total = self.load(s.target.id)
            add = self.as_double(self.expr(s.value))
            self.store(s.target.id, self.emit(f"fadd reassoc double {total}, {add}", "double"))
        elif isinstance(s, ast.For):
            self.loop(s)
        elif isinstance(s, ast.If) and not s.orelse:
            self.branch(s)
        elif isinstance(s, ast.Return) and isinstance(s.value, ast.Tuple) and not self.sums:
            self.sums = len(s.value.elts)
            for k, elt in enumerate(s.value.elts):
                ptr = self.emit(f"getelementptr double, ptr %sums, i64 {k}", "ptr")[0]
                self.body.append(f"  store double {self.as_double(self.expr(elt))}, ptr {ptr}")
        else:
            raise Unsupported(type(s).__name__)

    def store(self, name: str, value: tuple[str, str]) -> None:
        ty = self.slots.setdefault(name, value[1])
        if ty != value[1] or ty not in ("double", "i1"):
            raise Unsupported(f"{name} of two types")
        self.body.append(f"  store {ty} {value[0]}, ptr %v.{name}")

    def load(self, name: str) -> str:
        return self.emit(f"load {self.slots[name]}, ptr %v.{name}", self.slots[name])[0]

    def loop(self, s: ast.For) -> None:
        it = s.iter
        if not (isinstance(s.target, ast.Name) and isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name) and it.func.id == "range"
                and len(it.args) == 1 and isinstance(it.args[0], ast.Constant)
                and not s.orelse):
            raise Unsupported("loop")
        n, var = it.args[0].value, s.target.id
        head, body, latch, done = (self.fresh(f"{var}.{x}.")[1:] for x in
                                   ("head", "body", "latch", "exit"))
        before = self.block
        self.body.append(f"  br label %{head}")
        self.label(head)
        i, step = self.fresh(var), self.fresh(var)
        self.body.append(f"  {i} = phi i64 [0, %{before}], [{step}, %{latch}]")
        more = self.emit(f"icmp slt i64 {i}, {n}", "i1")[0]
        self.body.append(f"  br i1 {more}, label %{body}, label %{done}")
        self.label(body)
        self.loops[var] = i
        self.statements(s.body)
        del self.loops[var]
        self.body.append(f"  br label %{latch}")
        self.label(latch)
        self.body.append(f"  {step} = add nuw nsw i64 {i}, 1")
        self.body.append(f"  br label %{head}")
        self.label(done)

    def branch(self, s: ast.If) -> None:
        test = self.as_bool(self.expr(s.test))
        then, end = self.fresh("then.")[1:], self.fresh("end.")[1:]
        self.body.append(f"  br i1 {test}, label %{then}, label %{end}")
        self.label(then)
        self.statements(s.body)
        self.body.append(f"  br label %{end}")
        self.label(end)

    # ---------------------------------------------------------------- expressions
    def as_bool(self, v: tuple[str, str]) -> str:
        if v[1] != "i1":
            raise Unsupported(f"a test on {v[1]}")
        return v[0]

    def expr(self, e: ast.expr) -> tuple[str, str]:
        """``(value, type)`` of ``e``: type ``double``, ``i1`` (a test) or ``i64`` (an index)."""
        if isinstance(e, ast.Constant):
            v = e.value
            if isinstance(v, bool):
                return ("true" if v else "false"), "i1"
            if isinstance(v, int):
                return str(v), "i64"
            if isinstance(v, float):
                return _double(v), "double"
            raise Unsupported(repr(v))
        if isinstance(e, ast.Name):
            if e.id in self.loops:
                return self.loops[e.id], "i64"
            if e.id in self.slots:
                return self.load(e.id), self.slots[e.id]
            kind = self.params.get(e.id)
            if kind is not None and kind[0] == "scalar":
                return f"%{e.id}", "double"
            raise Unsupported(f"name {e.id}")
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) \
                and e.value.id in ("np", "math") and e.attr in CONSTANTS:
            return _double(CONSTANTS[e.attr]), "double"
        if isinstance(e, ast.Subscript):
            ptr, kind = self.address(e)
            if kind == BOOL:
                byte = self.emit(f"load i8, ptr {ptr}", "i8")[0]
                return self.emit(f"icmp ne i8 {byte}, 0", "i1")
            return self.emit(f"load double, ptr {ptr}", "double")
        if isinstance(e, ast.UnaryOp):
            v = self.expr(e.operand)
            if isinstance(e.op, ast.USub):
                if v[1] == "i64":
                    return self.emit(f"sub i64 0, {v[0]}", "i64") if v[0].startswith("%") \
                        else (str(-int(v[0])), "i64")
                return self.emit(f"fneg double {self.as_double(v)}", "double")
            if isinstance(e.op, ast.Not):
                return self.emit(f"xor i1 {self.as_bool(v)}, true", "i1")
            raise Unsupported("unary operator")
        if isinstance(e, ast.BinOp):
            return self.binop(e)
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            return self.compare(e.ops[0], self.expr(e.left), self.expr(e.comparators[0]))
        if isinstance(e, ast.BoolOp):
            values = [self.as_bool(self.expr(v)) for v in e.values]
            op = "and" if isinstance(e.op, ast.And) else "or"
            out = values[0], "i1"
            for v in values[1:]:
                out = self.emit(f"{op} i1 {out[0]}, {v}", "i1")
            return out
        if isinstance(e, ast.IfExp):
            test = self.as_bool(self.expr(e.test))
            a, b = self.expr(e.body), self.expr(e.orelse)
            if a[1] == b[1] == "i1":
                return self.emit(f"select i1 {test}, i1 {a[0]}, i1 {b[0]}", "i1")
            return self.emit(f"select i1 {test}, double {self.as_double(a)}, double "
                             f"{self.as_double(b)}", "double")
        if isinstance(e, ast.Call) and not e.keywords:
            return self.function(e)
        raise Unsupported(type(e).__name__)

    def binop(self, e: ast.BinOp) -> tuple[str, str]:
        a, b = self.expr(e.left), self.expr(e.right)
        op = type(e.op)
        if a[1] == b[1] == "i64" and op in INT_OPS:
            return self.emit(f"{INT_OPS[op]} nsw i64 {a[0]}, {b[0]}", "i64")
        if op in FLOAT_OPS:
            return self.emit(f"{FLOAT_OPS[op]} double {self.as_double(a)}, "
                             f"{self.as_double(b)}", "double")
        raise Unsupported("binary operator")

    def compare(self, op: ast.cmpop, a: tuple[str, str], b: tuple[str, str]
                ) -> tuple[str, str]:
        if type(op) not in FCMP:
            raise Unsupported("comparison")
        if a[1] == b[1] and a[1] in ("i64", "i1"):
            return self.emit(f"icmp {ICMP[type(op)]} {a[1]} {a[0]}, {b[0]}", "i1")
        return self.emit(f"fcmp {FCMP[type(op)]} double {self.as_double(a)}, "
                         f"{self.as_double(b)}", "i1")

    def function(self, e: ast.Call) -> tuple[str, str]:
        f = e.func
        if isinstance(f, ast.Name):
            name = f.id
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            name = f"{f.value.id}.{f.attr}"
        else:
            raise Unsupported("call")
        op = CALLS.get(name)
        if op is None:
            raise Unsupported(f"function {name}")
        if len(e.args) != op.arity:
            raise Unsupported(f"{name} of {len(e.args)} arguments")
        args = [self.as_double(self.expr(a)) for a in e.args]
        return self.call(op.llvm or op.c, args)

    def address(self, e: ast.Subscript) -> tuple[str, np.dtype]:
        """Pointer to the element ``aN[i, j]`` of a C-contiguous array, and its dtype."""
        if not isinstance(e.value, ast.Name) or e.value.id not in self.params:
            raise Unsupported("subscript")
        kind, dtype, shape = self.params[e.value.id]
        if kind == "scalar":
            raise Unsupported("subscript of a scalar")
        index = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        if len(index) != len(shape):
            raise Unsupported("partial index")
        flat: tuple[str, str] = ("0", "i64")
        for ix, n in zip(index, shape):
            v = self.expr(ix)
            if v[1] != "i64":
                raise Unsupported("index type")
            if flat[0] == "0":
                flat = v
            else:
                flat = self.emit(f"mul nsw i64 {flat[0]}, {n}", "i64")
                flat = self.emit(f"add nsw i64 {flat[0]}, {v[0]}", "i64")
        elem = "i8" if dtype == BOOL else "double"
        return self.emit(f"getelementptr inbounds {elem}, ptr %{e.value.id}, i64 {flat[0]}",
                         "ptr")[0], dtype

    # ---------------------------------------------------------------- the function
    def function_ir(self, symbol: str, fn: ast.FunctionDef) -> str:
        """Two functions: ``@symbol.loops`` on data pointers (``noalias``: LLVM may
        vectorize), and ``@symbol``, called from Python with the numpy arrays themselves,
        which reads their data pointers and calls it (not inlined: the loops keep their
        ``noalias`` arguments through the light pass that peels them)."""
        self.statements(fn.body)
        outer, inner, unpack = [], [], []
        for name, (kind, dtype, shape) in self.params.items():
            if kind == "scalar":
                outer.append(f"double %{name}")
                inner.append(f"double %{name}")
                continue
            outer.append(f"ptr %{name}.obj")
            inner.append(f"ptr noalias {'readonly ' if kind == 'array' else ''}%{name}")
            unpack += [f"  %{name}.at = getelementptr i8, ptr %{name}.obj, i64 {DATA}",
                       f"  %{name} = load ptr, ptr %{name}.at"]
        if self.sums:
            outer.append("ptr %sums.obj")
            inner.append("ptr noalias %sums")
            unpack += [f"  %sums.at = getelementptr i8, ptr %sums.obj, i64 {DATA}",
                       "  %sums = load ptr, ptr %sums.at"]
        names = [a.split()[-1] for a in inner]
        call_args = ", ".join(f"{'double' if a.startswith('double') else 'ptr'} {n}"
                              for a, n in zip(inner, names))
        slots = [f"  %v.{n} = alloca {ty}" for n, ty in self.slots.items()]
        return "\n".join([
            f"define internal void @{symbol}.loops({', '.join(inner)}) noinline nounwind {{",
            "entry:",
            *slots, *self.body, "  ret void", "}", "",
            f"define void @{symbol}({', '.join(outer)}) nounwind {{",
            *unpack,
            f"  call void @{symbol}.loops({call_args})", "  ret void", "}",
            *sorted(self.decls)]) + "\n"


def kernel_ir(source: str, params: Sequence[tuple], symbol: str) -> tuple[str, int]:
    """LLVM IR of the kernel whose Python source is ``source`` (:class:`.KernelWriter`'s
    form), and how many sums it returns; ``params`` per parameter: ``("array" | "out" |
    "scalar", dtype, shape)``. Raises :class:`Unsupported` outside the float64 scope."""
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise Unsupported("not one function")
    fn = tree.body[0]
    if len(fn.args.args) != len(params):
        raise Unsupported("parameters")
    if DATA is None:
        raise Unsupported("numpy's array layout")
    for kind, dtype, shape in params:
        if (kind == "scalar" and dtype != F64) or dtype not in (F64, BOOL):
            raise Unsupported(f"dtype {dtype}")
    lowering = _Lowering(fn, list(params))
    return lowering.function_ir(symbol, fn), lowering.sums


# -------------------------------------------------------------------- machine code
_jit: dict[str, Any] = {}          # "llvm", "tm", "engine": made once per process
_addresses: dict[str, int] = {}    # symbol -> address of its machine code (this process)


def _machine() -> tuple[Any, Any, Any]:
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
        _jit.update(llvm=llvm, tm=tm, engine=engine)
    return _jit["llvm"], _jit["tm"], _jit["engine"]


def _object_code(ir: str, symbol: str, cache: Path) -> bytes:
    """The kernel's object file: from the folder ``cache``, else compiled and saved."""
    path = cache / f"{symbol}.o"
    if path.exists():
        STATS["loaded"] += 1
        return path.read_bytes()
    llvm, tm, _ = _machine()
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


def _address(ir: str, cache: Path) -> int:
    llvm, tm, engine = _machine()
    digest = hashlib.sha256("\0".join([ir, tm.triple, llvm.get_host_cpu_name(),
                                       llvm.get_host_cpu_features().flatten(),
                                       ".".join(map(str, llvm.llvm_version_info))]).encode())
    symbol = f"dk_{digest.hexdigest()[:24]}"
    if symbol not in _addresses:
        obj = _object_code(ir.replace("@KERNEL", "@" + symbol), symbol, cache)
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        _addresses[symbol] = engine.get_function_address(symbol)
    return _addresses[symbol]


class LLVMKernel:
    """A compiled kernel called as Numba's would be: ``k(*inputs, *outputs)`` returns the
    tuple of its sums (None without sums). The arrays themselves are passed (ctypes'
    ``a.ctypes.data`` costs more than a small kernel), made C-contiguous on the way in."""

    def __init__(self, address: int, params: Sequence[tuple], sums: int) -> None:
        types = [ctypes.c_double if p[0] == "scalar" else ctypes.py_object for p in params]
        self.fn = ctypes.CFUNCTYPE(None, *types, *[ctypes.py_object] * (sums > 0))(address)
        self.params, self.sums = [(p[0], p[1]) for p in params], sums

    def __call__(self, *args: Any) -> tuple[float, ...] | None:
        call = [float(a) if kind == "scalar" else
                np.ascontiguousarray(a, dtype) if kind == "array" else a
                for (kind, dtype), a in zip(self.params, args)]
        if not self.sums:
            self.fn(*call)
            return None
        sums = np.empty(self.sums)
        self.fn(*call, sums)
        return tuple(sums.tolist())


def _ir(source: str, inputs: Sequence[tuple], outputs: Sequence[tuple]
        ) -> tuple[str, int, list[tuple]] | None:
    """``(IR, number of sums, parameters)`` of the kernel, None outside the scope."""
    params = [*inputs, *[("out", np.dtype(d), tuple(s)) for d, s in outputs]]
    params = [(k, np.dtype(d), tuple(s)) for k, d, s in params]
    try:
        return (*kernel_ir(source, params, "KERNEL"), params)
    except (Unsupported, SyntaxError):
        return None


def lowerable(source: str, inputs: Sequence[tuple], outputs: Sequence[tuple]) -> bool:
    """Whether :func:`lower` takes this kernel (decided without compiling it)."""
    return importlib.util.find_spec("llvmlite") is not None and \
        _ir(source, inputs, outputs) is not None


def lower(source: str, inputs: Sequence[tuple], outputs: Sequence[tuple], cache: Path
          ) -> LLVMKernel | None:
    """The kernel of ``source`` compiled through LLVM IR (machine code cached in the folder
    ``cache``), or None when it is outside this module's scope (or llvmlite is missing):
    then Numba compiles it. ``inputs`` per argument: ``("array" | "scalar", dtype,
    shape)``; ``outputs``: ``(dtype, shape)``."""
    lowered = _ir(source, inputs, outputs)
    if lowered is None:
        return None
    ir, sums, params = lowered
    try:
        address = _address(ir, cache)
    except (ImportError, RuntimeError):  # no llvmlite; LLVM refused the IR (a gap here)
        return None
    return LLVMKernel(address, params, sums)
