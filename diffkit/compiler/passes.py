"""Optimization passes: each a small function from a graph to a smaller (or equal) graph.

* :func:`fold` — constant folding: an equation whose operands are all known is computed
  now and becomes a constant.
* :func:`simplify` — algebraic identities: ``x*1``, ``x/1``, ``x+0``, ``x-0``, ``-(-x)``,
  ``x * zeros`` (a zero adjoint or tangent), reshapes and broadcasts to the same shape,
  ``sum(broadcast_to(x))`` over the broadcast axes (= ``x * count``), a matrix product
  whose inner dimension is 1 (``a(m,1) @ b(1,n)`` = ``a * b``, an outer product that
  fuses with its neighbours instead of a BLAS call that writes an m×n array), a slice
  that takes back exactly one part of a ``concatenate`` or of a sum of ``scatter_add``s
  into disjoint slices (a tree of arrays ravelled into one vector, and its adjoint),
  ``scatter(a, i) + scatter(b, i)`` (= ``scatter(a + b, i)``), and the constant factors
  that derivatives chain, where the result is the same to the bit: ``-(c * x)`` =
  ``(-c) * x``, ``c * (2 * x)`` = ``(2c) * x`` (for ``|c| >= 1``). A *fill* (an array whose
  entries all equal one number, like the seed adjoint spread over ``x`` by ``sum``) stays
  symbolic: ``broadcast_to(c, shape)``, a view, never an array built at setup; arithmetic
  on fills is done on the number, and a fill meeting a full array becomes that number.
* :func:`cse` — common-subexpression elimination: the same primitive on the same
  operands with the same parameters is computed once.
* :func:`dce` — dead-code elimination: only what the outputs need is kept (the adjoint
  of an input nobody asked for is never computed).
* :func:`plan_buffers` — a buffer plan: an elementwise result may be written into the
  memory of an operand that dies at that line (``np.sin(v1, out=v1)``).

:func:`optimize` runs them in order and reports each pass's before/after counts.

>>> import diffkit.numpy as dnp
>>> from diffkit.ir.tracer import trace_graph
>>> g = trace_graph(lambda x: dnp.sin(x) * 1.0 + dnp.sin(x), (2.0,))
>>> [len(g), len(cse(simplify(g)))]
[4, 2]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from .. import primitives as P
from ..core import VIEW
from ..ir.graph import Atom, Const, Eqn, Graph, Var

Pass = Callable[[Graph], Graph]


def _rebuild(graph: Graph, eqns: list[Eqn], subst: dict[Var, Atom]) -> Graph:
    """A graph with ``eqns`` (whose operands are already substituted, in order) and its
    outputs pointing at their stand-ins."""
    return replace(graph, eqns=eqns, outputs=[_follow(subst, a) for a in graph.outputs])


def dce(graph: Graph) -> Graph:
    """Keep the equations the outputs depend on."""
    live = {a for a in graph.outputs if isinstance(a, Var)}
    kept = []
    for e in reversed(graph.eqns):
        if e.out in live:
            kept.append(e)
            live.update(a for a in e.inputs if isinstance(a, Var))
    return replace(graph, eqns=kept[::-1])


def _key(v: Any) -> Any:
    """A hashable stand-in for an operand or parameter (arrays by identity)."""
    if isinstance(v, Var):
        return v  # hashed by identity
    if isinstance(v, Const):
        return ("c", id(v.value))
    if isinstance(v, np.ndarray):
        return ("a", id(v))
    if isinstance(v, tuple):
        return tuple(_key(x) for x in v)
    if isinstance(v, slice):
        return ("s", v.start, v.stop, v.step)
    return (type(v).__name__, v)


def equation_key(e: Eqn) -> tuple:
    """What ``e`` computes, hashable: equal keys, equal values (arrays by identity)."""
    return (id(e.prim), *[a if type(a) is Var else _key(a) for a in e.inputs],
            _key(tuple(sorted(e.params.items()))) if e.params else ())


def cse(graph: Graph) -> Graph:
    """Compute each distinct ``prim(operands, params)`` once."""
    seen: dict[Any, Var] = {}
    subst: dict[Var, Atom] = {}
    kept = []
    for e in graph.eqns:
        ins = _substituted(subst, e.inputs)
        e = e if ins is e.inputs else Eqn(e.prim, ins, e.out, e.params)
        key = equation_key(e)
        if key in seen:
            subst[e.out] = seen[key]
        else:
            seen[key] = e.out
            kept.append(e)
    return _rebuild(graph, _prefixes(kept), subst)


def _prefixes(eqns: list[Eqn]) -> list[Eqn]:
    """An equation whose output is the start of another's on the same operands (a loop,
    and the same loop saving its carries for the reverse sweep: its body's ``prefix_of``)
    computed once: the longer one moves up to the shorter one's place, which becomes a
    slice of it."""
    groups: dict[tuple, list[Eqn]] = {}
    for e in eqns:
        if hasattr(e.params.get("body"), "prefix_of"):
            groups.setdefault((id(e.prim), *[_key(a) for a in e.inputs]), []).append(e)
    longer: dict[Eqn, Eqn] = {}
    for group in groups.values():
        for a in group:
            b = next((b for b in group if a.params["body"].prefix_of(b.params["body"])), None)
            if b is not None and b not in longer:
                longer[a] = b
    if not longer:
        return eqns
    out, placed = [], set()
    for e in eqns:
        b = longer.get(e)
        if b is not None:
            if b not in placed:
                out.append(b)
                placed.add(b)
            out.append(Eqn(P.getitem, (b.out,), e.out, {"idx": (slice(0, e.out.shape[0], None),)}))
        elif e not in placed:
            out.append(e)
    return out


def _substituted(subst: dict[Var, Atom], ins: tuple[Atom, ...]) -> tuple[Atom, ...]:
    """``ins`` with replaced variables swapped for their stand-ins (``ins`` itself if none)."""
    if not subst or not any(isinstance(a, Var) and a in subst for a in ins):
        return ins
    return tuple(_follow(subst, a) for a in ins)


def _follow(subst: dict[Var, Atom], a: Atom) -> Atom:
    while isinstance(a, Var) and a in subst:
        a = subst[a]
    return a


def fold(graph: Graph) -> Graph:
    """Compute equations whose operands are all constants or literals."""
    subst: dict[Var, Atom] = {}
    kept = []
    for e in graph.eqns:
        ins = _substituted(subst, e.inputs)
        if any([type(a) is Var for a in ins]) or int(np.prod(e.out.shape)) > max(
                (int(np.size(a.value)) for a in ins if isinstance(a, Const)), default=1):
            # (a broadcast is not folded: it would turn a number into a big array)
            kept.append(e if ins is e.inputs else Eqn(e.prim, ins, e.out, e.params))
            continue
        with np.errstate(all="ignore"):
            value = e.prim.impl(*(a.value if isinstance(a, Const) else a for a in ins), **e.params)
        subst[e.out] = Const(value)
    return _rebuild(graph, kept, subst)


def _is(a: Atom, number: float) -> bool:
    """``a`` is a literal or constant whose every entry equals ``number``."""
    if isinstance(a, Var):
        return False
    if type(a) is float or type(a) is int:
        return a == number
    value = a.value if isinstance(a, Const) else a
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.ndarray, np.generic)):
        return False
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" or arr.size == 0 or arr.flat[0] != number:
        return False
    return not any(arr.strides) or bool(np.all(arr == number))  # (a broadcast view: one entry)


def _same(a: Atom, out: Var) -> bool:
    return isinstance(a, (Var, Const)) and a.shape == out.shape and a.dtype == out.dtype


def _known(a: Atom, fills: dict[Var, float]) -> float | None:
    """The one number every entry of ``a`` holds, when ``a`` is a fill or a constant
    known to be uniform (size one or a broadcast view); None otherwise (and for literals)."""
    if isinstance(a, Var):
        return fills.get(a)
    if isinstance(a, Const) and a.dtype == np.float64 and np.size(a.value):
        first = float(np.asarray(a.value).flat[0])
        return first if _is(a, first) else None
    return None


def _number(a: Atom, fills: dict[Var, float]) -> float | None:
    """Like :func:`_known`, literals included."""
    if type(a) is float or type(a) is int:
        return a
    return _known(a, fills)


def _fill(e: Eqn, fills: dict[Var, float]) -> Atom | Eqn | None:
    """``e`` as a fill, when its result is one number everywhere: that number (a 0-d
    result) or ``broadcast_to(c, shape)``; None when it is not a fill of float64."""
    if e.out.dtype != np.float64:
        return None
    prim = e.prim
    if prim.kind == VIEW or prim is P.sum:
        c = _number(e.inputs[0], fills)
        if c is not None and prim is P.sum:
            c = c * (int(np.prod(e.inputs[0].shape)) // max(int(np.prod(e.out.shape)), 1)) \
                if isinstance(e.inputs[0], (Var, Const)) else None
    elif e.prim.ufunc is not None and not e.params and e.out.dtype == np.float64:
        cs = [_number(a, fills) for a in e.inputs]
        if any(c is None for c in cs):
            return None
        with np.errstate(all="ignore"):
            c = e.prim.impl(*(np.float64(c) for c in cs))
    else:
        return None
    if c is None:
        return None
    c = float(c)
    if not e.out.shape:
        return c
    if prim is P.broadcast_to and type(e.inputs[0]) is float and e.inputs[0] == c:
        return e  # already the fill's own form
    return Eqn(P.broadcast_to, (c,), e.out, {"shape": e.out.shape})


def simplify(graph: Graph) -> Graph:
    """Apply the algebraic identities of the module docstring."""
    subst: dict[Var, Atom] = {}
    made: dict[Var, Eqn] = {}
    fills: dict[Var, float] = {}
    kept = []
    for e in graph.eqns:
        ins = _substituted(subst, e.inputs)
        e = e if ins is e.inputs else Eqn(e.prim, ins, e.out, e.params)
        if e.prim not in _RULES and all([_plain(a, fills) for a in ins]):
            made[e.out] = e  # (no identity applies: the common case, decided quickly)
            kept.append(e)
            continue
        alias = _fill(e, fills)
        if alias is None:
            alias = _identity(e, made, fills)
        if isinstance(alias, Eqn) and alias.prim is P.broadcast_to \
                and type(alias.inputs[0]) is float:
            fills[alias.out] = alias.inputs[0]
        if isinstance(alias, _Pair):
            made[alias[0].out] = alias[0]
            kept.append(alias[0])
            e = alias[1]
        elif isinstance(alias, Eqn):
            e = alias
        elif alias is not None:
            subst[e.out] = alias
            continue
        made[e.out] = e
        kept.append(e)
    return _rebuild(graph, kept, subst)


_RULES = frozenset({P.add, P.neg, P.mul, P.reshape, P.broadcast_to, P.sum, P.matmul,
                    P.getitem})  # identities on variables


def _plain(a: Atom, fills: dict[Var, float]) -> bool:
    """An operand no identity or fill rule looks at: a variable that is not a fill, or a
    number other than 0, 1 and -1."""
    t = type(a)
    if t is Var:
        return a not in fills
    return (t is float or t is int) and a not in (0, 1, -1)


def _uniform(a: Atom, out: Var, fills: dict[Var, float]) -> Atom:
    """A fill, or a constant array whose entries are all equal, as one number (when the
    other operand already has the result's shape and dtype): ``c1 * v`` with
    c1 = [2, 2, ...] is ``2.0 * v``."""
    if isinstance(a, Var):
        c = fills.get(a)
        return a if c is None or out.dtype != np.float64 else c
    if not isinstance(a, Const) or not isinstance(a.value, np.ndarray) or a.value.size < 2 \
            or a.value.dtype != out.dtype:
        return a
    first = a.value.flat[0]
    return float(first) if _is(a, first) else a


def _identity(e: Eqn, made: dict[Var, Eqn], fills: dict[Var, float]) -> Atom | Eqn | _Pair | None:
    """What ``e`` reduces to: an existing atom, a cheaper equation (or two), or None."""
    prim, ins, out = e.prim, e.inputs, e.out
    if prim in (P.mul, P.add, P.sub, P.div) and out.dtype.kind == "f":
        x, y = ins
        unit = 1.0 if prim in (P.mul, P.div) else 0.0
        if _is(y, unit) and _same(x, out):
            return x
        if prim in (P.mul, P.add) and _is(x, unit) and _same(y, out):
            return y
        kx, ky = _known(x, fills), _known(y, fills)
        if prim is P.mul and (kx is None) ^ (ky is None) and 0.0 in (kx, ky):
            # x * zeros: a zero adjoint or tangent (a fill, never an array built now)
            if not out.shape:
                return 0.0 if out.dtype == np.float64 else Const(np.zeros((), out.dtype))
            return Eqn(P.broadcast_to, (0.0 if out.dtype == np.float64 else Const(
                np.zeros((), out.dtype)),), out, {"shape": out.shape})
        if prim is P.mul and (_is(x, -1.0) and _same(y, out) or _is(y, -1.0) and _same(x, out)):
            return Eqn(P.neg, (y if _is(x, -1.0) else x,), out, {})
        if _same(x, out) or _same(y, out):  # a number only beside an operand of out's shape
            u = (_uniform(x, out, fills) if _same(y, out) else x,
                 _uniform(y, out, fills) if _same(x, out) else y)
            if u != (x, y):
                return _identity(Eqn(e.prim, u, out, e.params), made, fills) \
                    or Eqn(e.prim, u, out, {})
    if prim in (P.mul, P.neg) and out.dtype == np.float64:
        folded = _factors(e, made)
        if folded is not None:
            return folded
    if prim is P.add and all(isinstance(a, Var) and a in made
                             and made[a].prim is P.scatter_add for a in ins):
        return _merged_scatters(e, made[ins[0]], made[ins[1]])
    if prim is P.neg and isinstance(ins[0], Var) and ins[0] in made \
            and made[ins[0]].prim is P.neg:
        return made[ins[0]].inputs[0]
    if prim in (P.reshape, P.broadcast_to) and _same(ins[0], out):
        return ins[0]
    if prim is P.reshape and isinstance(ins[0], Var) and ins[0] in made \
            and made[ins[0]].prim is P.reshape:  # a reshape of a reshape: one
        inner = made[ins[0]].inputs[0]
        return inner if _same(inner, out) else Eqn(e.prim, (inner,), out, e.params)
    if prim is P.sum and isinstance(ins[0], Var) and ins[0] in made:
        return _sum_of_broadcast(e, made[ins[0]])
    if prim is P.getitem and isinstance(ins[0], Var) and ins[0] in made:
        return _piece(e.params["idx"], made[ins[0]], made, out)
    if prim is P.matmul and out.dtype.kind == "f" and all(
            isinstance(a, (Var, Const)) and a.dtype == out.dtype and len(a.shape) == 2
            for a in ins) and ins[0].shape[1] == 1 and ins[1].shape[0] == 1:
        return Eqn(P.mul, ins, out, {})  # one product per entry, as BLAS computes it
    return None


def _scaled(a: Atom, made: dict[Var, Eqn], out: Var) -> tuple[float, Var] | None:
    """``(c, x)`` when ``a`` is ``c * x`` (a number times a variable of ``out``'s type)."""
    e = made.get(a) if isinstance(a, Var) else None
    if e is None or e.prim is not P.mul or not _same(a, out):
        return None
    for c, x in (e.inputs, e.inputs[::-1]):
        if type(c) is float and _same(x, out):
            return c, x
    return None


def _factors(e: Eqn, made: dict[Var, Eqn]) -> Eqn | None:
    """``-(c * x)`` as ``(-c) * x``; ``c1 * (c2 * x)`` as ``(c1 * c2) * x`` when ``c2`` is a
    power of two (>= 2 in size: doubling is exact) and ``|c1| >= 1`` (so both forms
    overflow for the same x): one rounding of the same real number, the same bits.

    >>> from diffkit import primitives as P
    >>> x, v, w = (Var(n, (3,), np.dtype(np.float64)) for n in (1, 2, 3))
    >>> made = {v: Eqn(P.mul, (2.0, x), v, {})}
    >>> _factors(Eqn(P.mul, (100.0, v), w, {}), made).inputs == (200.0, x)
    True
    >>> _factors(Eqn(P.neg, (v,), w, {}), made).inputs == (-2.0, x)
    True
    """
    if e.prim is P.neg:
        inner = _scaled(e.inputs[0], made, e.out)
        return None if inner is None else Eqn(P.mul, (-inner[0], inner[1]), e.out, {})
    for c1, a in (e.inputs, e.inputs[::-1]):
        inner = _scaled(a, made, e.out) if type(c1) is float else None
        if inner is None:
            continue
        c2, x = inner
        if abs(math.frexp(c2)[0]) == 0.5 and abs(c2) >= 2 and 1 <= abs(c1) < math.inf \
                and math.isfinite(c1 * c2):
            return Eqn(P.mul, (c1 * c2, x), e.out, {})
    return None


def _merged_scatters(e: Eqn, s: Eqn, t: Eqn) -> Eqn | None:
    """``scatter(a, idx) + scatter(b, idx)`` = ``scatter(a + b, idx)`` (adjoints of the same
    slice used twice): one zero-filled array fewer. Needs ``a + b`` to be an equation first,
    so this returns a marker the caller expands (see :func:`simplify`)."""
    if _key(s.params["idx"]) != _key(t.params["idx"]) or s.params["shape"] != t.params["shape"]:
        return None
    a, b = s.inputs[0], t.inputs[0]
    if not (isinstance(a, Var) and isinstance(b, Var) and a.shape == b.shape
            and a.dtype == b.dtype == e.out.dtype):
        return None
    return _Pair(Eqn(e.prim, (a, b), Var(-e.out.n, a.shape, a.dtype), {}),
                 Eqn(s.prim, (None,), e.out, s.params))


def _span(idx: Any) -> tuple[int, int] | None:
    """``(start, stop)`` of an index ``(..., start:stop)`` on the last axis, else None."""
    if not (isinstance(idx, tuple) and len(idx) == 2 and idx[0] is Ellipsis
            and isinstance(idx[1], slice) and idx[1].step in (None, 1)):
        return None
    return idx[1].start or 0, idx[1].stop


def _pieces(e: Eqn, made: dict[Var, Eqn]) -> dict[tuple[int, int], Atom] | None:
    """The parts laid side by side on the last axis by ``e``: a ``concatenate`` there, or
    a sum of ``scatter_add``s into disjoint slices (the adjoint of taking those slices),
    as ``{(start, stop): part}``; None for anything else."""
    if e.prim is P.concatenate and e.params.get("axis") in (-1, len(e.out.shape) - 1):
        parts, start = {}, 0
        for a in e.inputs:
            if not isinstance(a, (Var, Const)) or not a.shape:
                return None
            parts[start, start + a.shape[-1]] = a
            start += a.shape[-1]
        return parts
    if e.prim is P.scatter_add:
        span = _span(e.params["idx"])
        return None if span is None else {span: e.inputs[0]}
    if e.prim is P.add and all(isinstance(a, Var) and a in made for a in e.inputs):
        left, right = (_pieces(made[a], made) for a in e.inputs)
        if left is None or right is None or any(a < d and c < b for a, b in left
                                                for c, d in right):
            return None  # (overlapping slices add up: no one part is the sum there)
        return {**left, **right}
    return None


def _piece(idx: Any, whole: Eqn, made: dict[Var, Eqn], out: Var) -> Atom | None:
    """``whole[..., a:b]`` where ``whole`` lays its parts side by side (:func:`_pieces`)
    and one part spans exactly a:b: that part. Taking a tree of arrays apart after
    ravelling it into one vector (and its adjoint) then costs nothing."""
    span = _span(idx)
    parts = None if span is None else _pieces(whole, made)
    part = None if parts is None else parts.get(span)
    return part if part is not None and _same(part, out) else None


class _Pair(tuple):
    """Two equations replacing one: the first's output feeds the second's operand."""

    def __new__(cls, first: Eqn, second: Eqn) -> _Pair:
        second = Eqn(second.prim, (first.out,), second.out, second.params)
        return super().__new__(cls, (first, second))


def _sum_of_broadcast(e: Eqn, b: Eqn) -> Eqn | None:
    """``sum(broadcast_to(x), axes)`` where x was size 1 on those axes: ``x * count``."""
    if b.prim is not P.broadcast_to or not isinstance(b.inputs[0], Var):
        return None
    x, full = b.inputs[0], b.params["shape"]
    aligned = (1,) * (len(full) - len(x.shape)) + x.shape
    axes = e.params["axis"]
    if not all(aligned[a] == 1 for a in axes) or x.shape != e.out.shape or x.dtype != e.out.dtype:
        return None
    count = float(np.prod([full[a] for a in axes]))
    return Eqn(P.mul, (x, count), e.out, {})


PASSES: list[tuple[str, Pass]] = [("simplify", simplify), ("fold", fold), ("cse", cse),
                                  ("simplify", simplify), ("dce", dce)]


def optimize(graph: Graph) -> tuple[Graph, list[tuple[str, int, int]]]:
    """All passes in order; returns the graph and ``[(pass, before, after), ...]``.
    Simplifying again is skipped when nothing changed since the last time (it would find
    nothing new: each pass is one linear walk, to its fixed point)."""
    counts = []
    changed = True  # since the last simplify
    for name, fn in PASSES:
        before = len(graph)
        if name != "simplify" or changed:
            graph = fn(graph)
        changed = name != "simplify" and (changed or len(graph) != before)
        counts.append((name, before, len(graph)))
    return graph, counts


def plan_buffers(graph: Graph) -> tuple[dict[Var, Var], int]:
    """Which elementwise results may overwrite a dying operand; and the bytes saved.

    An operand qualifies when it is an array made by an elementwise line of this graph
    (not an input, a constant or a view), every use of it is elementwise (so no view of
    it is alive), this is its last use, and it has the result's shape and dtype.
    """
    last_use: dict[Var, int] = {}
    elementwise_only: dict[Var, bool] = {}
    for k, e in enumerate(graph.eqns):
        for a in e.inputs:
            if isinstance(a, Var):
                last_use[a] = k
                elementwise_only[a] = elementwise_only.get(a, True) and _elementwise(e)
    outputs = {a for a in graph.outputs if isinstance(a, Var)}
    fresh = {e.out for e in graph.eqns  # arrays this graph made (scatter_add: np.zeros)
             if (_elementwise(e) or e.prim is P.scatter_add) and e.out.shape}
    plan: dict[Var, Var] = {}
    saved = 0
    for k, e in enumerate(graph.eqns):
        if not (_elementwise(e) and e.out.shape):
            continue
        for a in e.inputs:
            if isinstance(a, Var) and a in fresh and a not in outputs and last_use[a] == k \
                    and elementwise_only[a] and a.shape == e.out.shape and a.dtype == e.out.dtype:
                plan[e.out] = a
                saved += int(np.prod(a.shape)) * a.dtype.itemsize
                break
    return plan, saved


def _elementwise(e: Eqn) -> bool:
    return e.prim.ufunc is not None and not e.params
