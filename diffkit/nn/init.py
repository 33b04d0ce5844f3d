"""Initializers acting in place on parameters (``nn.init.xavier_uniform_(w)``).

Xavier/Glorot keeps activations' variance across tanh/sigmoid layers; He (Kaiming)
does the same for ReLU."""

from __future__ import annotations

import math

import numpy as np

from ..core import DiffkitError
from ..interpreters.tensor import Tensor
from .modules import RNG, _assign, _generator


# --------------------------------------------------------------------------- initializers


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor that keeps activations' variance steady through ``nonlinearity``:
    1 for linear/sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2/(1+a²)) for leaky_relu."""
    if nonlinearity in ("linear", "identity", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        a = 0.01 if param is None else param
        return math.sqrt(2.0 / (1.0 + a * a))
    raise DiffkitError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


def _fans(p: Tensor) -> tuple[int, int]:
    s = np.shape(p.data)
    if len(s) < 2:
        raise DiffkitError(f"fan-in/fan-out need a weight of at least 2 dimensions, got {s}")
    receptive = int(np.prod(s[2:]))
    return s[1] * receptive, s[0] * receptive


def _fill(p: Tensor, values: np.ndarray) -> Tensor:
    _assign(p, values)
    return p


def uniform_(p: Tensor, a: float = 0.0, b: float = 1.0, *, rng: RNG = None) -> Tensor:
    """Fill ``p`` in place from U(a, b)."""
    return _fill(p, _generator(rng).uniform(a, b, np.shape(p.data)))


def normal_(p: Tensor, mean: float = 0.0, std: float = 1.0, *, rng: RNG = None) -> Tensor:
    """Fill ``p`` in place from N(mean, std²)."""
    return _fill(p, _generator(rng).normal(mean, std, np.shape(p.data)))


def constant_(p: Tensor, value: float) -> Tensor:
    return _fill(p, np.full(np.shape(p.data), float(value)))


def zeros_(p: Tensor) -> Tensor:
    return constant_(p, 0.0)


def ones_(p: Tensor) -> Tensor:
    return constant_(p, 1.0)


def xavier_uniform_(p: Tensor, gain: float = 1.0, *, rng: RNG = None) -> Tensor:
    """Glorot: U(±gain·sqrt(6 / (fan_in + fan_out))).

    >>> from diffkit import nn
    >>> w = nn.xavier_uniform_(nn.Linear(30, 20).weight, rng=0)
    >>> bool(abs(w.data).max() <= (6 / 50) ** 0.5)
    True
    """
    fan_in, fan_out = _fans(p)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(p, -bound, bound, rng=rng)


def xavier_normal_(p: Tensor, gain: float = 1.0, *, rng: RNG = None) -> Tensor:
    """Glorot: N(0, gain² · 2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(p)
    return normal_(p, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), rng=rng)


def _he_std(p: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    fan_in, fan_out = _fans(p)
    if mode not in ("fan_in", "fan_out"):
        raise DiffkitError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(p: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", *, rng: RNG = None) -> Tensor:
    """He: U(±sqrt(3)·gain/sqrt(fan)); with the defaults gain = sqrt(2) (ReLU)."""
    bound = math.sqrt(3.0) * _he_std(p, a, mode, nonlinearity)
    return uniform_(p, -bound, bound, rng=rng)


def kaiming_normal_(p: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", *, rng: RNG = None) -> Tensor:
    """He: N(0, gain²/fan); with the defaults std = sqrt(2/fan_in) (ReLU)."""
    return normal_(p, 0.0, _he_std(p, a, mode, nonlinearity), rng=rng)
