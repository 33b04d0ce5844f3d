"""Convolution, pooling, flattening and batch normalization layers (PyTorch's names,
shapes and defaults: inputs ``(N, C, L)`` or ``(N, C, H, W)``).

A layer reads the windows of its padded input with one index array per spatial axis
(``out * stride + tap * dilation``: a single ``getitem``, whose adjoint is a scatter-add),
then contracts them with the kernel (an ``einsum``: grouped channels are one more axis),
takes their maximum or their mean. So every layer is a composition of primitives: the
tensor and the functional style, every backend and second derivatives run it.

>>> import numpy as np
>>> from diffkit import nn
>>> conv = nn.Conv2d(1, 2, kernel_size=3, padding=1, rng=0)
>>> conv(np.ones((4, 1, 8, 8))).shape
(4, 2, 8, 8)
>>> nn.MaxPool2d(2)(np.arange(16.0).reshape(1, 1, 4, 4)).tolist()
[[[[5.0, 7.0], [13.0, 15.0]]]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from string import ascii_lowercase
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import DiffkitError, primal
from ..interpreters.tensor import tensor
from .modules import RNG, Module, _as_input, _generator

Size = int | Sequence[int]


def _tuple(value: Size, n: int, what: str) -> tuple[int, ...]:
    out = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(out) != n or any(int(v) != v or v < 0 for v in out):
        raise DiffkitError(f"{what} must be a non-negative int or {n} of them, got {value!r}")
    return tuple(int(v) for v in out)


def windows(x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
            dilation: tuple[int, ...], fill: float = 0.0) -> Any:
    """The windows of ``x`` (``N, C, *spatial``) padded with ``fill``: shape
    ``(N, C, *out, *kernel)``, ``out = (size + 2 padding - dilation (kernel - 1) - 1) // stride + 1``."""
    n = len(kernel)
    padded = dnp.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding], constant_values=fill)
    idx = []
    for axis, (size, k, s, p, d) in enumerate(zip(x.shape[2:], kernel, stride, padding, dilation)):
        out = (size + 2 * p - d * (k - 1) - 1) // s + 1
        if out < 1:
            raise DiffkitError(f"input of spatial size {tuple(x.shape[2:])} is smaller than the "
                               f"kernel {kernel} (dilation {dilation}, padding {padding})")
        at_out, at_tap = [1] * (2 * n), [1] * (2 * n)
        at_out[axis], at_tap[n + axis] = out, k
        idx.append((np.arange(out) * s).reshape(at_out) + (np.arange(k) * d).reshape(at_tap))
    return padded[(slice(None), slice(None)) + tuple(idx)]


def _batched(x: Any, n: int, name: str) -> Any:
    x = _as_input(x)
    if x.ndim != n + 2:
        axes = ", ".join("LHW"[-n:] if n < 3 else "DHW")
        raise DiffkitError(f"{name}: expected an input of shape (N, C, {axes}), got {tuple(x.shape)}")
    return x


class _ConvNd(Module):
    spatial = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Size, stride: Size = 1,
                 padding: Size = 0, dilation: Size = 1, groups: int = 1, bias: bool = True, *,
                 rng: RNG = None) -> None:
        super().__init__()
        n = self.spatial
        if in_channels % groups or out_channels % groups:
            raise DiffkitError(f"groups={groups} must divide in_channels={in_channels} and "
                               f"out_channels={out_channels}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.stride, self.padding = _tuple(stride, n, "stride"), _tuple(padding, n, "padding")
        self.dilation = _tuple(dilation, n, "dilation")
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        g, bound = _generator(rng), 1.0 / math.sqrt(fan_in)  # (PyTorch's default start)
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = tensor(g.uniform(-bound, bound, shape), requires_grad=True)
        self.bias = tensor(g.uniform(-bound, bound, out_channels), requires_grad=True) if bias else None

    def forward(self, x: Any) -> Any:
        n, G = self.spatial, self.groups
        x = _batched(x, n, type(self).__name__)
        if x.shape[1] != self.in_channels:
            raise DiffkitError(f"{type(self).__name__}: expected {self.in_channels} channels, got "
                               f"input of shape {tuple(x.shape)}")
        patches = windows(x, self.kernel_size, self.stride, self.padding, self.dilation)
        out_shape = tuple(patches.shape[2:2 + n])
        patches = dnp.reshape(patches, (x.shape[0], G, self.in_channels // G) + tuple(patches.shape[2:]))
        weight = dnp.reshape(self.weight, (G, self.out_channels // G) + tuple(self.weight.shape[1:]))
        space, taps = ascii_lowercase[:n], ascii_lowercase[n:2 * n]
        y = dnp.einsum(f"NGC{space}{taps},GOC{taps}->NGO{space}", patches, weight)
        y = dnp.reshape(y, (x.shape[0], self.out_channels) + out_shape)
        return y if self.bias is None else y + dnp.reshape(self.bias, (-1,) + (1,) * n)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
                f"groups={self.groups}, bias={self.bias is not None}")


class Conv1d(_ConvNd):
    """1-d convolution (cross-correlation, as PyTorch) of ``(N, C_in, L)`` inputs; weight
    ``(C_out, C_in / groups, k)``."""
    spatial = 1


class Conv2d(_ConvNd):
    """2-d convolution (cross-correlation, as PyTorch) of ``(N, C_in, H, W)`` inputs; weight
    ``(C_out, C_in / groups, kh, kw)``."""
    spatial = 2


class _Pool2d(Module):
    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0) -> None:
        super().__init__()
        self.kernel_size = _tuple(kernel_size, 2, "kernel_size")
        self.stride = self.kernel_size if stride is None else _tuple(stride, 2, "stride")
        self.padding = _tuple(padding, 2, "padding")
        if any(2 * p > k for p, k in zip(self.padding, self.kernel_size)):
            raise DiffkitError(f"padding {self.padding} must be at most half the kernel {self.kernel_size}")

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """The maximum of each window (padding never wins: it is -inf); ties share the
    derivative as ``dnp.max`` does."""

    def forward(self, x: Any) -> Any:
        x = _batched(x, 2, "MaxPool2d")
        patches = windows(x, self.kernel_size, self.stride, self.padding, (1, 1), fill=-np.inf)
        return dnp.max(patches, axis=(-2, -1))


class AvgPool2d(_Pool2d):
    """The mean of each window, zero padding counted (PyTorch's ``count_include_pad=True``)."""

    def forward(self, x: Any) -> Any:
        x = _batched(x, 2, "AvgPool2d")
        return dnp.mean(windows(x, self.kernel_size, self.stride, self.padding, (1, 1)), axis=(-2, -1))


class Flatten(Module):
    """Axes ``start_dim`` .. ``end_dim`` merged into one (by default all but the batch axis)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Any) -> Any:
        x = _as_input(x)
        shape = tuple(x.shape)
        start, end = self.start_dim % len(shape), self.end_dim % len(shape)
        return dnp.reshape(x, shape[:start] + (-1,) + shape[end + 1:])


class _BatchNorm(Module):
    ndims: tuple[int, ...] = ()  # the input ranks accepted

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.weight = tensor(np.ones(num_features), requires_grad=True) if affine else None
        self.bias = tensor(np.zeros(num_features), requires_grad=True) if affine else None
        self.running_mean = np.zeros(num_features) if track_running_stats else None
        self.running_var = np.ones(num_features) if track_running_stats else None

    def forward(self, x: Any) -> Any:
        """Training (or no running statistics): normalize by the batch's mean and biased
        variance, and update the running ones (unbiased variance, ``momentum``); evaluation:
        normalize by the running ones. The update needs the batch's statistics as numbers,
        one per channel: a graph being traced (``dk.jit``, the compiled backend, graph
        mode) has none yet, and under ``vmap`` each example has its own, so there the
        running statistics are left as they are (the output is the same)."""
        x = _as_input(x)
        if x.ndim not in self.ndims or x.shape[1] != self.num_features:
            raise DiffkitError(f"{type(self).__name__}({self.num_features}): input of shape "
                               f"{tuple(x.shape)} is not (N, {self.num_features}, ...) of "
                               f"{' or '.join(map(str, self.ndims))} axes")
        axes = (0,) + tuple(range(2, x.ndim))
        at_channel = (1, -1) + (1,) * (x.ndim - 2)
        if self.training or self.running_mean is None:
            mean = dnp.mean(x, axis=axes, keepdims=True)
            var = dnp.mean((x - mean) ** 2, axis=axes, keepdims=True)
            batch_mean, batch_var = primal(mean), primal(var)
            if self.running_mean is not None and _one_per_channel(batch_mean, self.num_features):
                count = x.size // self.num_features
                m = self.momentum
                self.running_mean = (1 - m) * self.running_mean + m * np.ravel(batch_mean)
                self.running_var = ((1 - m) * self.running_var
                                    + m * np.ravel(batch_var) * count / max(count - 1, 1))
        else:
            mean, var = self.running_mean.reshape(at_channel), self.running_var.reshape(at_channel)
        y = (x - mean) / dnp.sqrt(var + self.eps)
        if self.weight is None:
            return y
        return y * dnp.reshape(self.weight, at_channel) + dnp.reshape(self.bias, at_channel)

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"


def _one_per_channel(value: Any, channels: int) -> bool:
    """Whether a batch statistic is a plain array with one number per channel."""
    return type(value) is np.ndarray and value.size == channels


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``(N, C)`` or ``(N, C, L)`` inputs, per channel."""
    ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``(N, C, H, W)`` inputs, per channel."""
    ndims = (4,)
