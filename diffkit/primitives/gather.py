"""Indexing by index arrays that are themselves values: ``gather`` and its adjoint ``scatter``.

``getitem`` keeps its index in a parameter, fixed when the function runs. An index that
is computed from the values and differs per example under ``vmap`` (``a[dnp.argmax(a)]``,
the gather inside ``dnp.sort``) must instead travel as an *argument*, so the batching
interpreter sees it: ``gather(x, *arrays, idx=template)`` is ``x[template]`` with each
:class:`At` of the template filled by ``arrays[k]``. The integer arrays carry no derivative;
the derivative with respect to ``x`` is the same gather forward and a scatter-add back,
as for ``getitem``. Their batching rules add the batch as one more advanced index
(``arange(size)`` in front), which is how JAX batches a gather.

>>> import numpy as np
>>> gather(np.array([10.0, 20.0, 30.0]), np.array([2, 0]), idx=(At(0),))
array([30., 10.])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import Primitive
from ..core import shape as shape_of
from .reductions import broadcast_to
from .structure import reshape, transpose


@dataclass(frozen=True)
class At:
    """A place in a gather's index template filled by the ``k``-th index argument."""

    k: int


def _fill(idx: tuple, arrays: tuple) -> tuple:
    return tuple(arrays[i.k] if isinstance(i, At) else i for i in idx)


def _scatter(v: Any, *arrays: Any, idx: tuple, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, dtype=np.result_type(v))
    np.add.at(out, _fill(idx, arrays), v)
    return out


def _batched_index(args: list, batched: tuple, size: int, idx: tuple) -> tuple[list, tuple, tuple]:
    """The index arrays with their batch axis (``arange(size)`` first), the template that
    uses them, and the axis order that turns numpy's result into batch-then-example."""
    shapes = [shape_of(a)[1:] if b else shape_of(a) for a, b in zip(args, batched)]
    rank = len(np.broadcast_shapes(*shapes))
    arrays = [np.arange(size).reshape((size,) + (1,) * rank)] + [
        reshape(a, shape=(shape_of(a)[0] if b else 1,) + (1,) * (rank - len(s)) + s)
        for a, b, s in zip(args, batched, shapes)]
    template = (At(0),) + tuple(At(i.k + 1) if isinstance(i, At) else i for i in idx)
    places = [p for p, i in enumerate(idx) if isinstance(i, At)]
    first, n_out = places[0], rank + sum(not isinstance(i, At) for i in idx)
    order = tuple(range(n_out + 1))
    if first and places == list(range(first, places[-1] + 1)):
        # one contiguous run after `first` slices: numpy moved it in front of them
        order = (0,) + tuple(range(rank + 1, rank + 1 + first)) + tuple(range(1, rank + 1)) \
            + tuple(range(rank + 1 + first, n_out + 1))
    return arrays, template, order


def _gather_batch(args: list, batched: tuple, size: int, *, idx: tuple) -> Any:
    x = args[0] if batched[0] else broadcast_to(args[0], shape=(size,) + shape_of(args[0]))
    arrays, template, order = _batched_index(args[1:], batched[1:], size, idx)
    out = gather(x, *arrays, idx=template)
    return out if order == tuple(range(len(order))) else transpose(out, axes=order)


def _scatter_batch(args: list, batched: tuple, size: int, *, idx: tuple,
                   shape: tuple[int, ...]) -> Any:
    arrays, template, order = _batched_index(args[1:], batched[1:], size, idx)
    v = args[0]
    if not batched[0]:
        v = broadcast_to(v, shape=(size,) + shape_of(v))
    if order != tuple(range(len(order))):
        v = transpose(v, axes=tuple(np.argsort(order)))
    return scatter(v, *arrays, idx=template, shape=(size,) + tuple(shape))


gather = Primitive(
    "gather", lambda x, *arrays, idx: x[_fill(idx, arrays)],
    jvp=(lambda x_dot, y, x, *arrays, idx: gather(x_dot, *arrays, idx=idx),),
    vjp=(lambda y_bar, y, x, *arrays, idx: scatter(y_bar, *arrays, idx=idx, shape=shape_of(x)),),
    saves=("arrays",), batch=_gather_batch,
    array_api=lambda xp, x, *arrays, idx: x[_fill(idx, arrays)],
    complex=True,
)

scatter = Primitive(
    "scatter", _scatter,
    jvp=(lambda v_dot, y, v, *arrays, idx, shape: scatter(v_dot, *arrays, idx=idx, shape=shape),),
    vjp=(lambda y_bar, y, v, *arrays, idx, shape: gather(y_bar, *arrays, idx=idx),),
    saves=("arrays",), batch=_scatter_batch,
    complex=True,
)

