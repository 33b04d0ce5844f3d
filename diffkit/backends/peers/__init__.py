"""Peer backends: other libraries' differentiators behind diffkit's ``Backend`` protocol.

Each adapter is an optional extra (``pip install 'diffkit[jax]'``) registered through the
entry-point group ``diffkit.backends``, so it shows in ``dk.backends()``, ``diffkit list``
and ``compare`` like the built-in four. Without its library the backend still lists,
marked unavailable: ``dk.backend("jax")`` raises a :class:`~diffkit.core.DiffkitError`
naming the install command, never an ImportError. The library is imported on first use,
not when the backend object is made, so the harness's forked cells do the importing.

AD peers run the same ``diffkit.numpy`` function on their own arrays: inside
:func:`diffkit.core.using` each primitive is computed with the peer's array namespace
(``jax.numpy``, ``array_api_compat.torch``, a shim over ``autograd.numpy``). Numeric
peers (numdifftools, scipy) just call the function on numpy arrays.

>>> import diffkit as dk
>>> {"autograd", "jax", "torch", "numdifftools", "scipy"} <= set(PEERS)
True
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from .. import Backend, to_numpy  # noqa: F401  (the adapters' result type)
from ...core import Box, DiffkitError, shape, using
from ...pytree import tree_map

PEERS = {  # backend name -> (module to import, library name, extra)
    "autograd": ("autograd", "autograd", "autograd"),
    "jax": ("jax", "JAX", "jax"),
    "torch": ("torch", "PyTorch", "torch"),
    "numdifftools": ("numdifftools", "numdifftools", "numdifftools"),
    "scipy": ("scipy.differentiate", "SciPy >= 1.15", "scipy"),
}


def missing(backend: str, library: str, extra: str, why: str = "") -> DiffkitError:
    """The one-line error of a peer backend whose library is not installed."""
    return DiffkitError(f"the {backend} backend needs {library}{why}: "
                        f"pip install 'diffkit[{extra}]'")


def installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (a submodule's package is)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # the parent package of a submodule is missing
        return False


def require(module: str, backend: str, library: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :func:`missing` (a broken install counts as missing)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing(backend, library, extra, f" ({exc})" if exc.name != module else "") \
            from None


#: Peer libraries left unusable in this process: it was forked (a harness cell) from one in
#: which they had started their threads (see :func:`after_fork`).
LEFT_BEHIND: set[str] = set()


def after_fork() -> None:
    """Care for the peers in a process just forked (a cell of the harness).

    A forked process has only the thread that forked; a library whose thread pool was
    running in the parent deadlocks when it uses that pool (JAX and PyTorch both warn of
    it). PyTorch recovers on one thread: it is set to one here. JAX cannot (its client
    holds the vanished threads): where it had run, the jax backend refuses in one line
    instead of hanging until the cell's timeout. A command-line run never meets this: its
    parent does not import the peers; a notebook that ran JAX before ``dk.compare`` does.
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    if getattr(sys.modules.get("jax._src.xla_bridge"), "_backends", None):
        LEFT_BEHIND.add("jax")


class PeerBackend(Backend):
    """Base of the adapters: availability check, input check, numpy results.

    Subclasses set ``requires = (module, library, extra)`` and implement the protocol
    methods with their library; :meth:`lib` imports it on first use.
    """

    requires: ClassVar[tuple[str, str, str]] = ("", "", "")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        module, library, extra = self.requires
        if not installed(module):  # cheap: the import waits for the first use
            raise missing(self.name, library, extra)
        self._lib: ModuleType | None = None

    def lib(self) -> ModuleType:
        """The peer library, imported now if needed."""
        module, library, extra = self.requires
        if module in LEFT_BEHIND:
            raise DiffkitError(
                f"the {self.name} backend cannot run in this cell: it was forked from a process "
                f"that had already run {library}, whose threads a forked process lacks (it "
                "would deadlock); compare the peers from the command line (diffkit compare), "
                f"or in a fresh process before {library} runs there")
        if self._lib is None:
            self._lib = require(module, self.name, library, extra)
            self.setup()
        return self._lib

    def setup(self) -> None:
        """One-off configuration after the first import (e.g. JAX's float64 mode)."""

    def check(self, x: Any) -> Any:
        """A plain numpy input: peers cannot run inside a diffkit transform."""
        if isinstance(x, Box):
            raise DiffkitError(f"the {self.name} backend cannot run inside another diffkit "
                               "transform; differentiate with it at the outermost level")
        return x


class NumericPeer(PeerBackend):
    """Base of the finite-difference adapters: one library call per derivative kind.

    Subclasses implement :meth:`flat`; the gradient, Jacobian and Hessian are that call
    with diffkit's shapes.
    """

    def tolerance(self, kind: str) -> float:
        """Adaptive finite differences: what diffkit's own central differences promise."""
        return 1e-3 if kind == "hessian" else 1e-5

    def flat(self, kind: str, fun: Callable, x: Any, out_shape: tuple[int, ...]) -> Any:
        """The library's ``kind`` (grad, jacobian, hessian) of ``fun`` at ``x``, as a numpy
        array of ``out_shape``."""
        raise NotImplementedError

    def value_and_grad(self, fun: Callable, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        value, aux, scalar = self.call_on_arrays(fun, x, has_aux)
        return value, aux, self.flat("grad", scalar, x, shape(x))

    def jacobian(self, fun: Callable, x: Any) -> Any:
        return self.flat("jacobian", fun, x, np.shape(fun(x)) + shape(x))

    def hessian(self, fun: Callable, x: Any) -> Any:
        return self.flat("hessian", fun, x, shape(x) + shape(x))


def on(xp: Any, fun: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fun`` with every diffkit.numpy primitive computed by the array namespace ``xp``.

    >>> import numpy as np, diffkit.numpy as dnp
    >>> float(on(np, dnp.sin)(0.0))
    0.0
    """
    def run(z: Any) -> Any:
        with using(xp):
            return fun(z)
    return run


def ravelled(fun: Callable[[Any], Any], shape: tuple[int, ...]) -> Callable[[Any], Any]:
    """``fun`` of an array of ``shape`` as a function of its flat vector (numpy results)."""
    return lambda v: np.asarray(fun(np.reshape(v, shape)))


def tree_to_numpy(aux: Any, unbox: Callable[[Any], Any]) -> Any:
    """``aux`` with every peer array inside it unboxed (dicts, lists and tuples kept)."""
    return tree_map(unbox, aux)
