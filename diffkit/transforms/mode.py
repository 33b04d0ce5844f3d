"""Eager or graph execution: the seeds' ``set_context(mode=PYNATIVE_MODE | GRAPH_MODE)``.

In eager mode (the default) the transforms run the function on the reverse tape, a
dynamic graph recorded anew at every call: printing intermediate values and branching
on them just work. Graph mode makes the compiled backend the default: the function is
traced once per argument shapes to a static graph, differentiated and optimized, then
replayed, the arguments it does not differentiate (data, labels) being inputs of the
program. An ``nn.Module`` called on tensors (``loss.backward()``, ``dk.record()``) then
runs as one compiled operation on the tape (see :mod:`diffkit.nn.graph_mode`).

>>> import diffkit as dk
>>> dk.get_mode()
'eager'
"""

from __future__ import annotations

from ..backends import backends
from ..core import DiffkitError

_BACKENDS = {"eager": "reverse", "graph": "compiled"}  # the default backend of each mode
_mode = ["eager"]


def set_mode(mode: str) -> None:
    """Choose the default backend of ``dk.grad``, ``dk.value_and_grad`` and ``dk.vjp``
    for functions transformed from now on, and how ``nn`` modules run on tensors:
    ``"eager"`` (reverse tape) or ``"graph"`` (compiled)."""
    if mode not in _BACKENDS:
        raise DiffkitError(f"set_mode({mode!r}): the modes are 'eager' (the reverse tape, "
                           "MindSpore's PYNATIVE_MODE) and 'graph' (compiled, GRAPH_MODE)")
    if _BACKENDS[mode] not in backends():
        raise DiffkitError("set_mode('graph'): graph mode runs on the compiled backend, which "
                           "is not available in this diffkit yet; stay in set_mode('eager')")
    _mode[0] = mode


def get_mode() -> str:
    """The current mode, ``"eager"`` or ``"graph"``."""
    return _mode[0]


def default_backend() -> str:
    """The name of the backend the transforms use when given none."""
    return _BACKENDS[_mode[0]]
