"""One compiled program: trace → optimize → generate → a callable, with its figures.

:func:`build` times the whole setup (trace + transform + optimize + generate), which
is what a static graph costs once, before any call; the call itself is the generated
function on plain arrays.
"""

from __future__ import annotations

import time
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import Box, shape
from ..ir.tracer import evaluate, trace_graph
from .codegen import compile_source, generate, is_scalar
from ..ir.graph import Const, Graph
from .kernel_ir import KernelTooLarge
from .driver import fused_program
from .passes import optimize, plan_buffers
from .scalar_vm import Bytecode, scalar_program


@dataclass(eq=False)
class Program:
    """A generated function and what it took: graph before/after, passes, setup time."""

    graph: Graph
    traced_eqns: int
    passes: list[tuple[str, int, int]]
    source: str
    fn: Callable[..., tuple]
    setup_s: float
    bytes_reused: int = 0
    copy_out: list[int] = field(default_factory=list)  # outputs that are constants or inputs
    scalar: bool = False  # the source runs on plain floats and math (codegen.is_scalar)
    _numpy: Callable[..., tuple] | None = None
    fusion: str = ""          # the fusion report (fuse=True), e.g. "1 kernel, 0 library calls: ..."
    kernel_source: str = ""   # the kernels' source (to LLVM IR or Numba), when they run
    vm: Bytecode | None = None  # a scalar program on the tape VM (fuse=True, numba)

    def __call__(self, *leaves: Any) -> Any:
        if self.vm is not None:
            outs = self.vm(leaves)
        elif self.scalar:
            outs = self._floats(leaves)
        else:
            outs = list(self.fn(*leaves))
        for k in self.copy_out:  # never hand out a cached constant or the caller's own array
            outs[k] = np.array(outs[k], copy=True) if isinstance(outs[k], np.ndarray) else outs[k]
        for k, o in enumerate(outs):  # nor a read-only view (a fill: broadcast_to(0.0, shape))
            if isinstance(o, np.ndarray) and not o.flags.writeable:
                outs[k] = np.array(o, copy=True)
        return self.graph.rebuild(outs)

    def _floats(self, leaves: Sequence[Any]) -> list[Any]:
        """Run the plain-float source; where Python raises instead of giving inf or nan
        (``math.log(0.0)``, a division by zero, an overflow), the numpy version."""
        try:
            outs = self.fn(*(float(v) for v in leaves))
        except (ArithmeticError, ValueError):
            if self._numpy is None:
                self._numpy = compile_source(*generate(self.graph))
            outs = self._numpy(*leaves)
        return [np.float64(o) if type(o) is float else np.bool_(o) if type(o) is bool else o
                for o in outs]

    def stats(self) -> dict[str, Any]:
        """Figures for tables: sizes before/after each pass, setup time, bytes reused."""
        out = {"setup_s": self.setup_s, "graph_eqns_traced": self.traced_eqns,
               "graph_eqns": len(self.graph), "graph_passes": self.summary()}
        return {**out, "fusion": self.fusion} if self.fusion else out

    def summary(self) -> str:
        """``212 equations → 97 after fold/simplify/cse/dce``."""
        return (f"{self.traced_eqns} equations → {len(self.graph)} after "
                f"{'/'.join(dict.fromkeys(n for n, _, _ in self.passes))}")


CacheInfo = namedtuple("CacheInfo", "hits misses currsize")


class ProgramCache:
    """Compiled programs by signature, the least recently used dropped past ``size``: the
    one cache behind ``dk.jit`` and the compiled backend.

    >>> cache = ProgramCache(size=1)
    >>> cache.get("a", lambda: 1), cache.get("a", lambda: 2), cache.get("b", lambda: 3)
    (1, 1, 3)
    >>> cache.info()
    CacheInfo(hits=1, misses=2, currsize=1)
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.programs: OrderedDict[Any, Any] = OrderedDict()
        self.hits = self.misses = 0

    def hit(self, key: Any) -> Any:
        """The program cached under ``key`` (now the most recently used), or None."""
        prog = self.programs.get(key)
        if prog is not None:
            self.hits += 1
            self.programs.move_to_end(key)
        return prog

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        """The program cached under ``key``, else ``make()``'s, cached, unless it closes
        over values of an outer transform (they are of this call only)."""
        prog = self.hit(key)
        if prog is None:
            self.misses += 1
            prog = make()
            if not getattr(getattr(prog, "graph", prog), "captured", ()):
                self.programs[key] = prog
            if len(self.programs) > self.size:
                self.programs.popitem(last=False)
        return prog

    def __len__(self) -> int:
        return len(self.programs)

    def info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, len(self.programs))

    def clear(self) -> None:
        self.programs.clear()
        self.hits = self.misses = 0


def signature(v: Any) -> tuple[tuple[int, ...], str]:
    """A value's part of a cache key: shape and dtype (a box's, or the array's)."""
    return shape(v), (v.dtype if isinstance(v, Box) else np.result_type(v)).str


_options: ContextVar[dict[str, bool]] = ContextVar("build options",
                                                  default={"fuse": True, "parallel": False})


def options() -> dict[str, bool]:
    """``fuse`` and ``parallel`` of the program being built (a loop body inside it is built
    the same way); outside :func:`build`, the defaults of ``dk.jit``."""
    return _options.get()


def build(fun: Callable, args: Sequence[Any], static_argnums: Sequence[int] = (),
          names: Sequence[str] | None = None, name: str = "f", floats: bool = True,
          fuse: bool = False, parallel: bool = False, reuse_buffers: bool = True) -> Program:
    """Trace ``fun`` at the shapes/dtypes of ``args``, optimize, generate and compile
    (a graph of float64 scalars as plain floats and math, unless ``floats`` is False;
    with ``fuse``, elementwise chains run as fused kernels, see :mod:`.driver`, and a
    scalar graph on the tape VM, see :mod:`.scalar_vm`; ``reuse_buffers=False`` writes every
    equation into a fresh array, for reading, instead of the buffer plan's ``out=``)."""
    start = time.perf_counter()
    token = _options.set({"fuse": fuse, "parallel": parallel})
    try:
        graph = trace_graph(fun, args, static_argnums, names)
    finally:
        _options.reset(token)
    traced = len(graph)
    graph, passes = optimize(graph)
    inputs = set(graph.inputs)
    copy_out = [k for k, a in enumerate(graph.outputs) if isinstance(a, Const) or a in inputs]
    if graph.captured:  # values of an outer transform: run on them, through bind
        return Program(graph, traced, passes, "", lambda *leaves: evaluate(graph, leaves),
                       time.perf_counter() - start, 0, copy_out)
    report, kernels, vm = "", "", None
    scalar = floats and is_scalar(graph)
    if fuse and scalar:
        vm, report = scalar_program(graph)
    try:
        fused = fused_program(graph, name, parallel) if fuse and not scalar else None
    except RecursionError:  # views of views (slices of slices ...) deeper than Python recurses
        fused, report = None, "run unfused: a fused chain too deep for the kernel builder"
    except KernelTooLarge as too_large:
        fused, report = None, str(too_large)
    if fused is not None:
        missing = fused[0].kernels and fused[1] is None
        report = fused[0].report() + (" (run unfused: numba missing)" if missing else "")
    if fused is not None and fused[1] is not None:
        (source, kernels, fn), saved = fused[1], 0
    else:
        plan, saved = plan_buffers(graph) if reuse_buffers else ({}, 0)
        source, ns = generate(graph, name, plan, scalar)
        # (the source is there to read; on the tape VM, Python need not compile it)
        fn = compile_source(source, ns, name) if vm is None else vm.function()
    return Program(graph, traced, passes, source, fn, time.perf_counter() - start, saved,
                   copy_out, scalar, fusion=report, kernel_source=kernels, vm=vm)
