"""Optimizers (SGD, RMSprop, Adam) and gradient clipping, with PyTorch's update rules.

An optimizer holds parameter tensors and per-parameter state. ``step()`` reads each
parameter's ``.grad`` (tensor style) or takes the gradients as an argument
(functional style: ``step(grads)`` with a list in parameter order, or a dict by name
when the optimizer was built from ``model.named_parameters()``). It overwrites the
parameters' arrays in place with plain numpy, so nothing is recorded on the tape;
do not step between a forward pass and its ``backward()`` (the tape reads the same
arrays).

Gradient accumulation, the two ways (k micro-batches, one update, the same update as
one full batch when the micro-batches have equal size):

Tensor style -- ``.grad`` accumulates across ``backward()`` calls until zeroed::

    opt.zero_grad()
    for Xb, yb in micro_batches:               # k of them
        (loss_fn(model(Xb), yb) / k).backward()   # adds into every .grad
    opt.step()                                  # reads .grad
    opt.zero_grad()                             # or the next step adds to stale grads

Functional style -- gradients are values; you sum them yourself::

    vg = dk.value_and_grad(lambda p, X, y: loss_fn(nn.functional_call(model, p, X), y))
    params = model.parameters_dict()
    total = None
    for Xb, yb in micro_batches:
        _, g = vg(params, Xb, yb)                # a dict; no .grad is touched
        total = g if total is None else {k: total[k] + g[k] for k in g}
    opt.step({k: v / k_micro for k, v in total.items()})

>>> import numpy as np, diffkit as dk
>>> from diffkit import optim
>>> w = dk.tensor([1.0], requires_grad=True)
>>> opt = optim.SGD([w], lr=0.1, momentum=0.9)
>>> for _ in range(2):
...     opt.zero_grad()
...     (w * w).sum().backward()               # d/dw w² = 2w
...     opt.step()
>>> w.data                                     # 1 - 0.1·2 = 0.8, then 0.8 - 0.1·(0.9·2 + 1.6)
array([0.46])
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .core import DiffkitError, primal
from .pytree import flatten
from .interpreters.tensor import Tensor

Params = Iterable[Tensor] | Iterable[tuple[str, Tensor]] | Mapping[str, Tensor]
Grads = Sequence[Any] | Mapping[str, Any] | None


def _collect(params: Params) -> tuple[list[Tensor], list[str] | None]:
    """Tensors and, when given as (name, tensor) pairs or a dict, their names."""
    if isinstance(params, Tensor):
        params = [params]
    items = list(params.items()) if isinstance(params, Mapping) else list(params)
    if not items:
        raise DiffkitError("the optimizer got an empty parameter list")
    if all(isinstance(i, tuple) and len(i) == 2 for i in items):
        names, tensors = [n for n, _ in items], [t for _, t in items]
    else:
        names, tensors = None, items
    for t in tensors:
        if type(t) is not Tensor or not t.is_leaf:
            raise DiffkitError(f"optimizers update leaf tensors (dk.tensor(..., "
                               f"requires_grad=True)), got {type(t).__name__}")
    return tensors, names


def _write(p: Tensor, value: np.ndarray) -> None:
    """Overwrite ``p``'s values in place, outside the graph."""
    if isinstance(p.data, np.ndarray) and p.data.ndim and p.data.flags.writeable:
        p.data[...] = value
    else:
        p.data = np.array(value, dtype=float)


class Optimizer:
    """Base class: parameter bookkeeping, ``zero_grad`` and ``step``.

    Subclasses implement ``_update(p, g, state) -> new p`` on plain arrays.
    """

    def __init__(self, params: Params) -> None:
        self.params, self.names = _collect(params)
        self.state: list[dict[str, Any]] = [{} for _ in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every ``.grad``: to None (default) or to zeros."""
        for p in self.params:
            if p.requires_grad:
                p.grad = None if set_to_none else np.zeros_like(p.data)

    clear_grad = zero_grad  # PaddlePaddle's name

    def _grads(self, grads: Grads) -> list[Any]:
        if grads is None:
            return [p.grad if p.requires_grad else None for p in self.params]
        if isinstance(grads, Mapping):
            if self.names is None:
                raise DiffkitError("step(dict): build the optimizer from "
                                   "model.named_parameters() so gradients can be matched by name")
            extra = set(grads) - set(self.names)
            if extra:
                raise DiffkitError(f"step(): gradients for unknown parameters {sorted(extra)}")
            return [grads.get(n) for n in self.names]  # a missing name: no update, as grad None
        grads = list(grads)
        if len(grads) != len(self.params):
            raise DiffkitError(f"step(): {len(grads)} gradients for {len(self.params)} parameters")
        return grads

    def step(self, grads: Grads = None) -> None:
        """One update of every parameter that has a gradient (from ``.grad``, or ``grads``).

        A parameter whose gradient is None is left alone (and its step count too).
        """
        for p, g, state in zip(self.params, self._grads(grads), self.state):
            if g is None:
                continue
            g = np.asarray(primal(g), dtype=float)
            if g.shape != np.shape(p.data):
                raise DiffkitError(f"step(): gradient of shape {g.shape} for a parameter of "
                                   f"shape {np.shape(p.data)}")
            state["step"] = state.get("step", 0) + 1
            _write(p, self._update(np.asarray(p.data, dtype=float), g, state))

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in vars(self).items()
                          if k not in ("params", "names", "state"))
        return f"{type(self).__name__}({len(self.params)} tensors, {hyper})"


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (heavy ball or Nesterov).

    With weight decay λ, ``g ← g + λp``; with momentum μ, ``b ← g`` on the first step and
    ``b ← μb + (1 - dampening)g`` after, ``g ← b`` (or ``g + μb``, Nesterov); ``p ← p - lr·g``.

    >>> import diffkit as dk
    >>> w = dk.tensor([1.0, 2.0], requires_grad=True)
    >>> SGD([w], lr=0.5).step([np.array([1.0, 1.0])]); w.data
    array([0.5, 1.5])
    """

    def __init__(self, params: Params, lr: float, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise DiffkitError("SGD: lr, momentum and weight_decay must be >= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise DiffkitError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(params)
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        if self.weight_decay:
            g = g + self.weight_decay * p
        if self.momentum:
            b = state.get("momentum_buffer")
            b = g.copy() if b is None else self.momentum * b + (1.0 - self.dampening) * g
            state["momentum_buffer"] = b
            g = g + self.momentum * b if self.nesterov else b
        return p - self.lr * g


class RMSprop(Optimizer):
    """Divide the gradient by a running root-mean-square of recent gradients.

    ``v ← αv + (1-α)g²``; centered: ``m ← αm + (1-α)g`` and ``v̂ = v - m²``;
    ``d = sqrt(v̂) + eps``; with momentum μ: ``b ← μb + g/d`` (b starts at 0), ``p ← p - lr·b``;
    else ``p ← p - lr·g/d``. Weight decay adds ``λp`` to g first.
    """

    def __init__(self, params: Params, lr: float = 0.01, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False) -> None:
        if lr < 0 or not 0 <= alpha <= 1 or eps < 0 or momentum < 0 or weight_decay < 0:
            raise DiffkitError("RMSprop: need lr, eps, momentum, weight_decay >= 0, 0 <= alpha <= 1")
        super().__init__(params)
        self.lr, self.alpha, self.eps = lr, alpha, eps
        self.weight_decay, self.momentum, self.centered = weight_decay, momentum, centered

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        if self.weight_decay:
            g = g + self.weight_decay * p
        a = self.alpha
        v = state["square_avg"] = a * state.get("square_avg", 0.0) + (1.0 - a) * g * g
        if self.centered:
            m = state["grad_avg"] = a * state.get("grad_avg", 0.0) + (1.0 - a) * g
            v = v - m * m
        scaled = g / (np.sqrt(v) + self.eps)
        if self.momentum:
            scaled = state["momentum_buffer"] = self.momentum * state.get("momentum_buffer", 0.0) \
                + scaled
        return p - self.lr * scaled


class Adam(Optimizer):
    """Adaptive moments: ``m ← β₁m + (1-β₁)g``, ``v ← β₂v + (1-β₂)g²``, and with
    ``m̂ = m/(1-β₁ᵗ)``, ``v̂ = v/(1-β₂ᵗ)``: ``p ← p - lr·m̂/(sqrt(v̂) + eps)``.
    ``weight_decay`` λ adds ``λp`` to the gradient first (L2, not AdamW's decoupled decay).
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise DiffkitError("Adam: need lr, eps, weight_decay >= 0 and betas in [0, 1)")
        super().__init__(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, tuple(betas), eps, weight_decay

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        if self.weight_decay:
            g = g + self.weight_decay * p
        b1, b2 = self.betas
        t = state["step"]
        m = state["exp_avg"] = b1 * state.get("exp_avg", 0.0) + (1.0 - b1) * g
        v = state["exp_avg_sq"] = b2 * state.get("exp_avg_sq", 0.0) + (1.0 - b2) * g * g
        # PyTorch's arrangement of m̂/(sqrt(v̂) + eps): the same number up to rounding
        denom = np.sqrt(v) / math.sqrt(1.0 - b2 ** t) + self.eps
        return p - (self.lr / (1.0 - b1 ** t)) * m / denom


class Accumulator:
    """Sums the gradients of k micro-batches for one optimizer step (MindSpore's way):
    functional gradients are returned values, so their running sum lives here, not in
    ``.grad``. ``add`` takes any structure of arrays (a tuple in parameter order, a dict),
    the same each time.

    >>> acc = Accumulator()
    >>> acc.add((np.array([1.0, 2.0]), np.array(3.0)))
    >>> acc.add((np.array([0.5, 0.5]), np.array(1.0)))
    >>> acc.value, acc.count
    ((array([1.5, 2.5]), array(4.)), 2)
    """

    def __init__(self) -> None:
        self._sum: list[np.ndarray] | None = None
        self._rebuild: Any = None
        self.count = 0

    def add(self, grads: Any) -> None:
        """Add one micro-batch's gradients to the sum."""
        leaves, rebuild = flatten(grads)
        arrays = [np.asarray(primal(g), dtype=float) for g in leaves]
        if self._sum is None:
            self._sum, self._rebuild = [a.copy() for a in arrays], rebuild
        elif [a.shape for a in arrays] != [a.shape for a in self._sum]:
            raise DiffkitError(f"Accumulator.add(): gradients of shapes {[a.shape for a in arrays]}"
                               f" after {[a.shape for a in self._sum]}; add the same "
                               "parameters each time (or reset() first)")
        else:
            for total, a in zip(self._sum, arrays):
                total += a
        self.count += 1

    @property
    def value(self) -> Any:
        """The sum so far, in the structure that was added (pass it to ``opt.step``)."""
        if self._sum is None:
            raise DiffkitError("Accumulator.value: nothing added yet; call add(grads) first")
        return self._rebuild([a.copy() for a in self._sum])

    def reset(self) -> None:
        """Start a new sum (after the optimizer step)."""
        self._sum, self._rebuild, self.count = None, None, 0


# --------------------------------------------------------------------------- clipping


def _with_grads(params: Tensor | Iterable[Any]) -> list[Tensor]:
    if isinstance(params, Tensor):
        params = [params]
    if isinstance(params, Mapping):
        params = params.values()
    ps = [p[1] if isinstance(p, tuple) else p for p in params]
    return [p for p in ps if p.requires_grad and p.grad is not None]


def _total_norm(arrays: Sequence[np.ndarray], norm_type: float) -> float:
    if not arrays:
        return 0.0
    if norm_type == math.inf:
        return float(max(np.max(np.abs(a)) if np.size(a) else 0.0 for a in arrays))
    return float(sum(np.sum(np.abs(a) ** norm_type) for a in arrays) ** (1.0 / norm_type))


def clip_grad_norm_(params: Tensor | Iterable[Any], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> float:
    """Scale all ``.grad`` together so their joint norm is at most ``max_norm``.

    Returns the norm *before* clipping. Unlike PyTorch no 1e-6 is added to the
    denominator, so afterwards the norm equals ``max_norm`` up to rounding.

    >>> import diffkit as dk
    >>> w = dk.tensor([0.0, 0.0], requires_grad=True); w.grad = np.array([3.0, 4.0])
    >>> clip_grad_norm_([w], 1.0), w.grad
    (5.0, array([0.6, 0.8]))
    """
    ps = _with_grads(params)
    total = _total_norm([p.grad for p in ps], norm_type)
    if not math.isfinite(total):
        if error_if_nonfinite:
            raise DiffkitError(f"clip_grad_norm_: the gradient norm is {total}")
        return total
    if total > max_norm:
        scale = max_norm / total
        for p in ps:
            p.grad = p.grad * scale
    return total


def clip_grad_value_(params: Tensor | Iterable[Any], clip_value: float) -> None:
    """Clip every ``.grad`` entry to [-clip_value, clip_value]."""
    for p in _with_grads(params):
        p.grad = np.clip(p.grad, -clip_value, clip_value)


def clip_by_global_norm(grads: Any, max_norm: float) -> tuple[Any, float]:
    """Functional clipping: ``(clipped grads, norm before)`` for a dict/list/array of
    gradients (e.g. from ``dk.value_and_grad``); nothing is modified in place.

    >>> g, n = clip_by_global_norm({"w": np.array([3.0, 4.0])}, 1.0)
    >>> g["w"], n
    (array([0.6, 0.8]), 5.0)
    """
    leaves, rebuild = flatten(grads)
    arrays = [np.asarray(primal(v), dtype=float) for v in leaves]
    total = _total_norm(arrays, 2.0)
    scale = max_norm / total if math.isfinite(total) and total > max_norm else 1.0
    return rebuild([a * scale for a in arrays]), total


__all__ = ["SGD", "Accumulator", "Adam", "Optimizer", "RMSprop", "clip_by_global_norm", "clip_grad_norm_",
           "clip_grad_value_"]
