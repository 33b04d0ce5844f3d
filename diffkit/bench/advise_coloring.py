"""What ``advise`` weighs for a Jacobian with a sparse pattern: coloured forward or
reverse mode (``dk.sparse_jacobian``), measured like the other methods.

The pattern is detected once (no derivative computed); when its colours are fewer than
both n and m, a coloured Jacobian needs fewer passes than any dense one, and it is run
in an isolated cell: its first call (pattern, colouring and passes) is its setup, later
calls only do the passes.

>>> import numpy as np
>>> from diffkit.bench.targets import find_target
>>> facts = {}
>>> [c["method"] for c in candidates(find_target("broyden", n=200), "jacobian", 10.0, None, facts)]
['coloured forward']
>>> facts["colors"], facts["pattern_nnz"]
(3, 598)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..transforms.sparse import jacobian_sparsity, sparse_jacobian
from .cells import run_isolated
from .probes import first_call, peak_bytes, timed
from .targets import Target


def candidates(t: Target, kind: str, timeout: float, memory_mb: float | None,
               facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The coloured candidate for a Jacobian whose pattern needs fewer colours than n and m
    (none otherwise), as the fields of an advise ``Candidate``; ``facts`` gains the
    pattern's non-zeros, colours and mode."""
    if kind != "jacobian":
        return []
    x = np.atleast_1d(np.asarray(t.x, dtype=float))
    flat = (lambda z: t.f(z.reshape(np.shape(t.x))))
    pattern = jacobian_sparsity(flat)(x)
    plan = sparse_jacobian(flat).plan(x)
    facts.update(pattern_nnz=int(pattern.nnz), pattern_shape=list(pattern.shape),
                 colors=plan.colors, coloured_mode=plan.mode)
    if plan.colors >= min(pattern.shape):
        return []

    def job() -> dict:
        jac = sparse_jacobian(flat)
        d, setup = first_call(lambda: jac(x))
        per_call = min(timed(lambda: jac(x), repeat=1, min_time=0.005)[0] for _ in range(5))
        dense = np.reshape(d.toarray(), np.shape(t.f(t.x)) + np.shape(t.x))
        return {"status": "ok", "derivative": dense, "time_s": per_call, "setup_s": setup,
                "peak_bytes": peak_bytes(lambda: jac(x))}

    out = run_isolated(job, timeout=timeout, memory_mb=memory_mb)
    method = f"coloured {plan.mode}"
    if out.get("status") != "ok":
        return [{"method": method, "status": out.get("status", "error"),
                 "note": out.get("message", "")}]
    return [{"method": method, "setup_s": out["setup_s"], "time_s": out["time_s"],
             "peak_bytes": out["peak_bytes"], "derivative": out["derivative"],
             "size": f"{plan.colors} colours, {plan.passes} passes"}]


def reasons(facts: dict[str, Any]) -> list[str]:
    """A sentence on the pattern, when one was detected."""
    if "colors" not in facts:
        return []
    m, n = facts["pattern_shape"]
    share = facts["pattern_nnz"] / max(1, m * n)
    if facts["colors"] >= min(m, n):
        return [f"The Jacobian's pattern ({facts['pattern_nnz']} non-zeros of {m}×{n}) needs "
                f"{facts['colors']} colours: colouring saves no passes here."]
    return [f"The Jacobian is sparse ({facts['pattern_nnz']} non-zeros of {m}×{n}, "
            f"{share:.1%}): {facts['colors']} colours, so dk.sparse_jacobian computes it in "
            f"{facts['colors']} {facts['coloured_mode']} passes instead of {min(m, n)} "
            f"(pattern and colouring made once per shape)."]
