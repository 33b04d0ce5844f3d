"""Modules: parameters as tensor leaves, Linear, Sequential, activations, LayerNorm,
residual blocks, dropout, and the functional view of a model (``functional_call``).

A module's parameters are leaves of the tensors' own tape (``requires_grad=True``). Called
inside a functional transform (``dk.grad``, ``jvp``, ``vjp``, ``jacobian``, ``hessian``,
``vmap``, ``jit``, ``checkpoint``, ``backend="compiled"``) the module computes with its
parameters' arrays instead, as constants of that transform, as a closed-over array would
be: the transform returns plain arrays, records nothing on the parameters' tape and
touches no ``.grad``, whatever ran before in the process. To differentiate the
parameters there, pass them: ``functional_call(model, params, x)`` or
``dk.grad(loss, weights=model.parameters())``. (As in JAX, a program compiled by
``dk.jit`` or ``backend="compiled"`` keeps the constants it was traced with: a model that
is trained between calls belongs in its arguments, through ``functional_call``.)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import Box, DiffkitError, _levels, primal
from ..interpreters.tensor import AMBIENT, Tensor, tensor
from ..transforms.mode import get_mode
from ..transforms.record import _Recording

RNG = np.random.Generator | int | None
_default_rng = [np.random.default_rng()]


def manual_seed(seed: int) -> None:
    """Seed the generator that initializers use when they are given no ``rng``."""
    _default_rng[0] = np.random.default_rng(seed)


def _generator(rng: RNG) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return _default_rng[0] if rng is None else np.random.default_rng(rng)


def _as_input(x: Any) -> Any:
    """Tensors and other traced values pass through; anything else becomes a float array."""
    return x if isinstance(x, Box) or (isinstance(x, np.ndarray) and x.dtype == object) \
        else np.asarray(x, dtype=float)


# --------------------------------------------------------------------------- modules


class Module:
    """Base class: assign parameters (leaf tensors that require grad) and sub-modules
    as attributes; other attributes (numbers, constant tensors) are left alone.

    Subclasses implement :meth:`forward`; calling the module calls it.

    >>> import diffkit as dk
    >>> from diffkit import nn
    >>> class Affine(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = dk.tensor([2.0], requires_grad=True)
    ...     def forward(self, x):
    ...         return self.scale * x
    >>> [n for n, _ in Affine().named_parameters()]
    ['scale']
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_param_names", [])
        object.__setattr__(self, "_child_names", [])
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_param_names" not in self.__dict__:
            raise DiffkitError(f"{type(self).__name__}: call super().__init__() before "
                               "assigning attributes")
        for names in (self._param_names, self._child_names):
            if name in names:
                names.remove(name)
        if isinstance(value, Module):
            self._child_names.append(name)
        elif type(value) is Tensor and value.is_leaf and value.requires_grad:
            self._param_names.append(name)  # stays listed if frozen later (requires_grad_(False))
        object.__setattr__(self, name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``forward``; inside a functional transform with the parameters as constants
        (see the module's docstring); in graph mode, on tensors, one compiled operation
        (see :mod:`diffkit.nn.graph_mode`)."""
        if in_transform():
            with constants(self):
                return self.forward(*args, **kwargs)
        if not kwargs and get_mode() == "graph":
            from .graph_mode import applies, graph_call
            if applies(self, args):
                return graph_call(self)(args)
        return self.forward(*args, **kwargs)

    # -- traversal
    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name in self._child_names:
            yield name, getattr(self, name)

    def children(self) -> Iterator[Module]:
        return (m for _, m in self.named_children())

    def modules(self) -> Iterator[Module]:
        """This module and every module below it, depth first."""
        yield self
        for child in self.children():
            yield from child.modules()

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, tensor)`` for every parameter, each shared tensor once."""
        seen: set[int] = set()
        for name, p in self._all_parameters(prefix):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def _all_parameters(self, prefix: str) -> Iterator[tuple[str, Tensor]]:
        for name in self._param_names:
            p = getattr(self, name)
            if p is not None:
                yield prefix + name, p
        for name, child in self.named_children():
            yield from child._all_parameters(f"{prefix}{name}.")

    def parameters(self) -> Iterator[Tensor]:
        return (p for _, p in self.named_parameters())

    def trainable_params(self) -> list[Tensor]:
        """The parameters that require grad, in order (MindSpore's name)."""
        return [p for p in self.parameters() if p.requires_grad]

    def num_parameters(self) -> int:
        return sum(int(np.size(p.data)) for p in self.parameters())

    # -- training helpers
    def zero_grad(self) -> None:
        """Reset every parameter's ``.grad`` to None (the next backward starts afresh)."""
        for p in self.parameters():
            if p.requires_grad:
                p.grad = None

    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    # -- parameters as plain arrays
    def parameters_dict(self) -> dict[str, np.ndarray]:
        """``{name: array}`` of the parameters' own arrays (not copies), for
        :func:`functional_call` and ``dk.value_and_grad``; an optimizer's in-place
        step shows through them. Copy them (or use :meth:`state_dict`) to snapshot."""
        return {name: p.data for name, p in self.named_parameters()}

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of the parameter arrays."""
        return {name: np.array(p.data, copy=True) for name, p in self.named_parameters()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Copy arrays into the parameters, in place (names and shapes must match)."""
        own = dict(self.named_parameters())
        if set(state) != set(own):
            raise DiffkitError(f"load_state_dict: names differ; missing {sorted(set(own) - set(state))}"
                               f", unexpected {sorted(set(state) - set(own))}")
        for name, value in state.items():
            value = np.asarray(primal(value), dtype=float)
            if value.shape != np.shape(own[name].data):
                raise DiffkitError(f"load_state_dict: {name} has shape {value.shape}, the "
                                   f"parameter {np.shape(own[name].data)}")
            _assign(own[name], value)

    # -- printing
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr."""
        return ""

    def __repr__(self) -> str:
        children = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self.named_children()]
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        lines = ([self.extra_repr()] if self.extra_repr() else []) + children
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


def in_transform() -> bool:
    """True inside a functional transform: a level is open that is neither the tensors'
    own tape (a checkpoint re-enters it to replay a segment) nor a ``dk.record()`` block."""
    return any(t is not AMBIENT and type(t) is not _Recording for t in _levels)


@contextlib.contextmanager
def constants(module: Module) -> Iterator[None]:
    """Inside, every tensor on the tensors' own tape that ``module`` or a module below it
    holds as an attribute (its parameters, constant tensors) is that tensor's array.
    Parameters standing in for a transform's values (``weights=``) or replaced by
    :func:`functional_call` are not such tensors and stay as they are."""
    swapped = [(m, name, value) for m in module.modules() for name, value in vars(m).items()
               if type(value) is Tensor and value._interp is AMBIENT]
    try:
        for m, name, t in swapped:
            object.__setattr__(m, name, t.value)
        yield
    finally:
        for m, name, t in reversed(swapped):
            if m.__dict__.get(name) is t.value:  # (unless forward assigned something else)
                object.__setattr__(m, name, t)


def _assign(p: Tensor, value: np.ndarray) -> None:
    """Overwrite a parameter's values in place (no recording, same array object)."""
    if isinstance(p.data, np.ndarray) and p.data.ndim and p.data.flags.writeable:
        p.data[...] = value
    else:
        p.data = np.array(value, dtype=float)


class Linear(Module):
    """``y = x @ weight.T + bias``; weight has shape (out_features, in_features).

    Both start uniform in ±1/sqrt(in_features); pass ``rng`` (a seed or a
    ``numpy.random.Generator``) for a reproducible start.

    >>> from diffkit import nn
    >>> nn.Linear(3, 2, rng=0).weight.shape
    (2, 3)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 rng: RNG = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        g, bound = _generator(rng), 1.0 / math.sqrt(in_features)
        self.weight = tensor(g.uniform(-bound, bound, (out_features, in_features)),
                             requires_grad=True)
        self.bias = tensor(g.uniform(-bound, bound, out_features), requires_grad=True) \
            if bias else None

    def forward(self, x: Any) -> Any:
        y = _as_input(x) @ dnp.transpose(self.weight)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Sequential(Module):
    """Modules applied one after the other; index it like a list.

    >>> from diffkit import nn
    >>> net = nn.Sequential(nn.Linear(2, 4, rng=0), nn.ReLU())
    >>> len(net), type(net[1]).__name__
    (2, 'ReLU')
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise DiffkitError(f"Sequential holds modules, got {type(module).__name__}")
        setattr(self, str(len(self._child_names)), module)
        return self

    def __getitem__(self, i: int | slice) -> Any:
        mods = list(self.children())
        return Sequential(*mods[i]) if isinstance(i, slice) else mods[i]

    def __len__(self) -> int:
        return len(self._child_names)

    def __iter__(self) -> Iterator[Module]:
        return self.children()

    def forward(self, x: Any) -> Any:
        for m in self.children():
            x = m(x)
        return x


class _Elementwise(Module):
    fn: Callable[[Any], Any]

    def forward(self, x: Any) -> Any:
        return type(self).fn(_as_input(x))


class Tanh(_Elementwise):
    """tanh(x), elementwise."""
    fn = staticmethod(dnp.tanh)


class Sigmoid(_Elementwise):
    """1 / (1 + exp(-x)), elementwise."""
    fn = staticmethod(dnp.sigmoid)


class ReLU(_Elementwise):
    """max(x, 0), elementwise (derivative 0 at 0)."""
    fn = staticmethod(dnp.relu)


class Identity(_Elementwise):
    """Returns its input."""
    fn = staticmethod(lambda x: x)


class Dropout(Module):
    """While training, each entry is zeroed with probability ``p`` and the others are
    scaled by ``1 / (1 - p)`` (PyTorch's inverted dropout); in evaluation, the identity.

    The mask comes from ``key``: a seed (an int) gives the same mask for the same input
    shape at every call, as a fixed JAX key does, so every style and transform of one
    call sees one mask; a ``numpy.random.Generator``, or ``None`` (the generator of
    :func:`manual_seed`), draws a new mask at every call, as PyTorch does. A ``key``
    given to the call overrides the module's. Under ``vmap`` one mask serves every
    example, and a program compiled by ``dk.jit`` keeps the mask it was traced with.

    >>> from diffkit import nn
    >>> nn.Dropout(0.5, key=0)(np.ones((1, 6))).tolist()
    [[2.0, 0.0, 0.0, 0.0, 2.0, 2.0]]
    """

    def __init__(self, p: float = 0.5, *, key: RNG = None) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise DiffkitError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        self.p, self.key = float(p), key

    def mask(self, shape: tuple[int, ...], key: RNG = None) -> np.ndarray:
        """The factors a training call multiplies an input of ``shape`` by: 0 or 1/(1-p)."""
        key = self.key if key is None else key
        g = np.random.default_rng(key) if isinstance(key, (int, np.integer)) else _generator(key)
        keep = g.random(shape) >= self.p
        return keep / (1.0 - self.p) if self.p < 1.0 else np.zeros(shape)

    def forward(self, x: Any, key: RNG = None) -> Any:
        x = _as_input(x)
        if not self.training or self.p == 0.0:
            return x
        return x * self.mask(tuple(x.shape), key)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class LayerNorm(Module):
    """Normalize over the last ``len(normalized_shape)`` axes to mean 0, variance 1
    (biased variance, ``eps`` added), then scale by ``weight`` (ones) and shift by
    ``bias`` (zeros).

    >>> from diffkit import nn
    >>> y = nn.LayerNorm(3)(np.array([[1.0, 2.0, 6.0]])).numpy()
    >>> bool(abs(y.mean()) < 1e-12)
    True
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = tensor(np.ones(shape), requires_grad=True) if elementwise_affine else None
        self.bias = tensor(np.zeros(shape), requires_grad=True) if elementwise_affine else None

    def forward(self, x: Any) -> Any:
        x = _as_input(x)
        k = len(self.normalized_shape)
        if tuple(x.shape[-k:]) != self.normalized_shape:
            raise DiffkitError(f"LayerNorm{self.normalized_shape}: input of shape {x.shape} "
                               "does not end with the normalized shape")
        axes = tuple(range(-k, 0))
        centred = x - dnp.mean(x, axis=axes, keepdims=True)
        var = dnp.mean(centred * centred, axis=axes, keepdims=True)
        y = centred / dnp.sqrt(var + self.eps)
        return y if self.weight is None else y * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class Residual(Module):
    """``x + module(x)``: a skip connection (the shapes must agree).

    >>> from diffkit import nn
    >>> block = nn.Residual(nn.Sequential(nn.Linear(4, 4, rng=0), nn.Tanh()))
    >>> block(np.zeros((1, 4))).shape
    (1, 4)
    """

    def __init__(self, module: Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: Any) -> Any:
        x = _as_input(x)
        return x + self.module(x)


def mlp(sizes: Sequence[int], activation: type[Module] = Tanh, *, bias: bool = True,
        rng: RNG = None) -> Sequential:
    """Linear layers of the given widths with ``activation`` between them (not after
    the last). ``mlp([2, 32, 32, 2])`` is 2-32-32-2.

    >>> from diffkit import nn
    >>> nn.mlp([2, 8, 1], nn.ReLU, rng=0)
    Sequential(
      (0): Linear(in_features=2, out_features=8, bias=True)
      (1): ReLU()
      (2): Linear(in_features=8, out_features=1, bias=True)
    )
    """
    g = _generator(rng)
    layers: list[Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(Linear(n_in, n_out, bias, rng=g))
        if i < len(sizes) - 2:
            layers.append(activation())
    return Sequential(*layers)


# --------------------------------------------------------------------------- functional path


def _owner(module: Module, name: str) -> tuple[Module, str]:
    *path, attr = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, attr


def functional_call(module: Module, params: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``module(*args, **kwargs)`` with the parameters named in ``params`` replaced
    by the given values (arrays, or values being differentiated); the module's own
    tensors are put back afterwards and their ``.grad`` is never touched. Parameters
    missing from ``params`` take part as constants (their current arrays), so the
    call records nothing on the module's own tensors.

    >>> from diffkit import nn
    >>> lin = nn.Linear(2, 1, rng=0)
    >>> p = {"weight": np.array([[1.0, 2.0]]), "bias": np.array([0.5])}
    >>> nn.functional_call(lin, p, np.array([[1.0, 1.0]]))   # plain arrays in, plain out
    array([[3.5]])
    """
    known = {name for name, _ in module.named_parameters()}
    unknown = sorted(set(params) - known)
    if unknown:
        raise DiffkitError(f"functional_call: {unknown} are not parameters of this "
                           f"{type(module).__name__}; its parameters are {sorted(known)}")
    saved = []
    try:
        first: dict[int, str] = {}  # a shared tensor is replaced under every name it has
        for name, p in list(module._all_parameters("")):
            key = first.setdefault(id(p), name)
            owner, attr = _owner(module, name)
            saved.append((owner, attr, p))
            value = params[key] if key in params else p.data
            object.__setattr__(owner, attr, value)  # bypasses registration: temporary
        return module(*args, **kwargs)
    finally:
        for owner, attr, old in reversed(saved):
            object.__setattr__(owner, attr, old)


def ravel_parameters(module: Module) -> tuple[np.ndarray, Callable[[Any], dict[str, Any]]]:
    """All parameters as one flat vector ``z`` and ``unravel(z) -> {name: array}``.

    ``unravel`` uses diffkit operations, so a loss written as a function of ``z``
    differentiates with any backend (even ``backend="symbolic"``, which wants one array).

    >>> from diffkit import nn
    >>> z, unravel = nn.ravel_parameters(nn.Linear(2, 3, rng=0))
    >>> z.shape, unravel(z)["weight"].shape
    ((9,), (3, 2))
    """
    named = module.parameters_dict()
    shapes = {name: np.shape(v) for name, v in named.items()}
    z = np.concatenate([np.ravel(v) for v in named.values()]) if named else np.zeros(0)

    def unravel(flat: Any) -> dict[str, Any]:
        out, i = {}, 0
        for name, s in shapes.items():
            n = int(np.prod(s))
            out[name] = dnp.reshape(flat[i:i + n], s)
            i += n
        return out

    return z, unravel
