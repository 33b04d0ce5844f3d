"""Graph mode for modules: a model called on tensors runs as one compiled operation.

In graph mode (``dk.set_mode("graph")``) a module called with its parameters on a tape
(the tensor-centred family, ``loss.backward()``, or inside ``with dk.record()``) does
not record its operations one by one. Its ``forward`` is traced once per input shapes
into a static graph whose *arguments* are the parameters' values and the inputs (so new
data, and parameters changed by the optimizer, need no new program), then compiled
(``dk.jit``). The call puts ONE node on the tape; its backward runs a second compiled
program, the adjoint of the first (the forward recomputed, then the reverse sweep).
``loss.backward()`` then adds into ``.grad`` and ``tape.gradient`` returns gradients, as
in eager mode. This is what ``torch.compile(model)``, MXNet's ``net.hybridize()`` and
PaddlePaddle's ``jit.to_static`` do: the model is one compiled op, the code around it
(the loss, the optimizer) stays eager.

What graph mode takes away inside ``forward``: printing values (a placeholder prints,
once per compile), branching on them (one clear error), and the intermediate tensors
(no ``retain_grad`` or hooks inside the model: the tape holds the call as one node).
Arrays a module keeps that are not parameters are constants of its program; a call with
keyword arguments, or inside another transform (``dk.grad``, ``dk.vmap``, ...), runs
``forward`` as in eager mode.

>>> import numpy as np, diffkit as dk
>>> from diffkit import nn
>>> model = nn.Linear(2, 1, rng=0)
>>> dk.set_mode("graph")
>>> for _ in range(3):
...     nn.mse_loss(model(np.ones((4, 2))), np.zeros((4, 1))).backward()
>>> dk.set_mode("eager")
>>> graph_call(model).cache_info()   # forward and adjoint: one program each
CacheInfo(hits=4, misses=2, currsize=2)
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import as_input
from ..compiler.autodiff import linearize
from ..compiler.jit import Jit
from ..compiler.program import CacheInfo, ProgramCache
from ..core import Box, DiffkitError
from ..interpreters.tensor import AMBIENT, Tensor
from ..ir.tracer import trace_graph
from ..transforms.custom import custom_vjp
from ..transforms.record import _Recording
from ..transforms.weights import standing_in

Module = Any  # an nn.Module (not imported: nn.modules imports this file)


class GraphCall:
    """The compiled programs of one module: ``forward`` (parameters and inputs to the
    output) and ``adjoint`` (the same and the output's cotangent, to the cotangents of
    what requires grad), each a :class:`~diffkit.compiler.jit.Jit` cached per
    shapes, the module's train/eval flags and which inputs need gradients."""

    def __init__(self, module: Module) -> None:
        self.module = weakref.proxy(module)
        self.name = type(module).__name__
        self.params: list[Tensor] = []  # the parameters of the call being traced or run
        self.programs = ProgramCache()  # by (which, static, leaf shapes and dtypes)
        self.forward = Jit(self._forward, static_argnums=0)
        self.adjoint = Jit(self._adjoint, static_argnums=0)

    def _run(self, values: Sequence[Any], xs: Sequence[Any]) -> Any:
        with standing_in(self.params, values):
            out = self.module.forward(*xs)
        if not isinstance(out, Box) and not isinstance(out, (np.ndarray, np.generic, float)):
            raise DiffkitError(
                f"graph mode compiles {self.name} to one operation with one "
                f"array out, but its forward returned a {type(out).__name__}; return one "
                "array, or call it in eager mode (dk.set_mode('eager'))")
        return out

    def _forward(self, flags: tuple, values: list, *xs: Any) -> Any:
        return self._run(values, xs)

    def _adjoint(self, key: tuple, values: list, xs: tuple, y_bar: Any) -> tuple:
        _, need = key
        n, inputs = len(values), [*values, *xs]
        g = trace_graph(lambda *ins: self._run(ins[:n], ins[n:]), inputs,
                  names=[f"in{i}" for i in range(len(inputs))])
        bars = linearize(g, inputs)[1]([y_bar])
        return tuple(b for b, k in zip(bars, need) if k)

    def __call__(self, args: tuple) -> Any:
        self.params = params = list(self.module.parameters())
        if AMBIENT.adopt is not None:  # inside dk.record(): the tape watches them first
            AMBIENT.adopt([*params, *args])
        flags = tuple(m.training for m in self.module.modules())
        need = tuple(type(a) is Tensor and a.requires_grad for a in (*params, *args))
        n = len(params)

        def run(*vals: Any) -> Any:
            return self._replay(self.forward, flags, list(vals[:n]), *vals[n:])

        def fwd(*vals: Any) -> tuple[Any, Any]:
            return run(*vals), vals

        def bwd(vals: tuple, y_bar: Any) -> tuple:
            bars = iter(self._replay(self.adjoint, (flags, need), list(vals[:n]),
                                     tuple(vals[n:]), y_bar))
            return tuple(next(bars) if k else None for k in need)

        op = custom_vjp(run, fwd, bwd)
        op.name = f"compiled_{self.name}"  # its node: CompiledSequentialBackward
        return op(*params, *args)

    def _replay(self, jit: Jit, static: tuple, *args: Any) -> Any:
        """``jit(static, *args)`` on plain arrays, its program found by a cheaper key
        (the jit's own signature, with pytree structure, is worked out on a miss only)."""
        leaves = [v for a in args for v in (a if isinstance(a, (list, tuple)) else (a,))]
        if any(isinstance(v, Box) for v in leaves):  # (values of an enclosing transform)
            return jit.fun(static, *args)
        leaves = [v if type(v) is np.ndarray and v.dtype.kind == "f" else as_input(v, "input")
                  for v in leaves]
        key = (jit is self.forward, static, *((v.shape, v.dtype) for v in leaves))
        return self.programs.get(key, lambda: jit.program(static, *args))(*leaves)

    def cache_info(self) -> CacheInfo:
        """Both programs' cache figures added up (a miss is one trace and compile)."""
        return CacheInfo(self.programs.hits, self.forward.cache_info().misses
                         + self.adjoint.cache_info().misses, len(self.programs))

    def setup_s(self) -> float:
        """Seconds spent tracing and compiling the programs built so far (one-off)."""
        return self.forward.setup_s() + self.adjoint.setup_s()


_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def graph_call(module: Module) -> GraphCall:
    """The compiled programs graph mode keeps for ``module`` (made on first use)."""
    if module not in _CALLS:
        _CALLS[module] = GraphCall(module)
    return _CALLS[module]


def applies(module: Module, args: tuple) -> bool:
    """True when graph mode runs ``module(*args)`` as one compiled node: its parameters
    and tensor arguments live on a tape (the tensors' own, or a ``dk.record`` block's),
    not inside another transform (which traces or differentiates through it instead)."""
    def on_tape(t: Any) -> bool:
        return type(t) is Tensor and (t._interp is AMBIENT or type(t._interp) is _Recording)

    params = list(module.parameters())
    return bool(params) and all(on_tape(p) for p in params) and \
        all(on_tape(a) or not isinstance(a, Box) for a in args)
