"""Losses with PyTorch's names and semantics (mean reduction by default)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import Box, DiffkitError, primal, shape
from .modules import Module, _as_input


def _reduce(loss: Any, reduction: str) -> Any:
    if reduction == "mean":
        return dnp.mean(loss)
    if reduction == "sum":
        return dnp.sum(loss)
    if reduction == "none":
        return loss
    raise DiffkitError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:  # noqa: A002
    """Mean of squared differences; ``input`` and ``target`` must have the same shape."""
    if shape(input) != shape(target):
        raise DiffkitError(f"mse_loss: input shape {shape(input)} and target shape "
                           f"{shape(target)} differ (broadcasting them is almost "
                           "always a bug); reshape one of them")
    diff = _as_input(input) - _as_input(target)
    return _reduce(diff * diff, reduction)


def _labels(target: Any) -> np.ndarray | None:
    """The label values to check (every example's under ``vmap``), or None for labels
    traced into a graph (graph mode), which have none yet."""
    values = primal(target)
    return None if isinstance(values, Box) else np.asarray(values)


def cross_entropy(logits: Any, target: Any, reduction: str = "mean") -> Any:
    """``logsumexp(logits_n) - logits_n[target_n]`` per sample: softmax cross-entropy from
    unnormalized scores (N, C) and integer class labels (N,), stable for large scores.
    Labels that are themselves traced (graph mode) or one set per example (``vmap``) pick
    their logits through a mask.

    >>> from diffkit import nn
    >>> float(nn.cross_entropy(np.array([[1000.0, 0.0]]), np.array([0])))
    0.0
    """
    n_shape = shape(logits)
    if len(n_shape) != 2 or shape(target) != n_shape[:1]:
        raise DiffkitError(f"cross_entropy: logits must be (N, C) and target (N,), got "
                           f"{n_shape} and {shape(target)}")
    labels = _labels(target)
    if labels is not None and (labels.dtype.kind not in "iu" or labels.size and not (
            0 <= labels.min() and labels.max() < n_shape[1])):
        raise DiffkitError(f"cross_entropy: target must hold integer class labels in "
                           f"[0, {n_shape[1]}), got dtype {labels.dtype}")
    if isinstance(target, Box):
        picked = dnp.sum(dnp.where(target[:, None] == np.arange(n_shape[1]), logits, 0.0), axis=-1)
    else:
        picked = logits[np.arange(n_shape[0]), labels]
    return _reduce(dnp.logsumexp(logits, axis=-1) - picked, reduction)


def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0,  # noqa: A002
                         reduction: str = "mean") -> Any:
    """Per entry: ``input`` where target is 1, ``max(0, margin - input)`` where it is -1."""
    labels = _labels(target)
    if labels is not None and not np.isin(labels, (-1, 1)).all():
        raise DiffkitError("hinge_embedding_loss: target entries must be 1 or -1")
    if shape(target) != shape(input):
        raise DiffkitError(f"hinge_embedding_loss: input shape {shape(input)} and "
                           f"target shape {shape(target)} differ")
    is_one = target == 1 if isinstance(target, Box) else labels == 1
    return _reduce(dnp.where(is_one, input, dnp.relu(margin - input)), reduction)


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """``mse_loss`` as a module: ``MSELoss()(prediction, target)``."""

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002
        return mse_loss(input, target, self.reduction)


class CrossEntropyLoss(_Loss):
    """``cross_entropy`` as a module: ``CrossEntropyLoss()(logits, labels)``."""

    def forward(self, logits: Any, target: Any) -> Any:
        return cross_entropy(logits, target, self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``hinge_embedding_loss`` as a module (``margin=1.0``)."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002
        return hinge_embedding_loss(input, target, self.margin, self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, reduction={self.reduction!r}"
