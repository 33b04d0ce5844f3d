"""Memory vs recompute: what checkpointing buys on a long loop, measured.

Reverse mode keeps every step's tape until the backward sweep: peak memory O(n) for n
steps. Checkpointing every √n steps (``dk.checkpoint`` on segments) keeps √n segment
inputs plus one segment's tape: O(√n), for one extra forward pass. The binomial schedule
(``dk.checkpoint_loop``, revolve) keeps k states whatever n: O(k), for t recomputations
per step with C(k + t, t) >= n. A spec marked ``experiment = "memory_vs_recompute"``
(``reports/checkpointing.toml``) runs it:

    diffkit report reports/checkpointing.toml -o out/checkpointing

For each strategy and loop length it measures the peak bytes allocated during one
gradient (tracemalloc) and its CPU time (a separate run, without tracemalloc), and
counts the step evaluations; writes ``memory_vs_recompute.png``, ``recompute.json`` and
``captions.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..bench.experiments import measure_recompute
from .report import finished, two_panels, write_experiment

Record = dict[str, Any]
DEFAULTS = {"lengths": [30, 100, 300, 1000], "size": 10_000, "snapshots": [4, 10],
            "title": "Memory vs recompute: one gradient of an n-step loop"}


def memory_recompute_figure(rows: Sequence[Record], title: str = DEFAULTS["title"]) -> Any:
    """Peak memory (left) and time (right) of one gradient against loop length n, one
    line per strategy, log-log, with O(n), O(√n) and O(k) reference lines."""
    fig, (mem, cpu) = two_panels()
    names = list(dict.fromkeys(r["strategy"] for r in rows))
    ns = np.array(sorted({r["n"] for r in rows}), dtype=float)
    state = rows[0]["state_bytes"] if rows else 1
    for name in names:
        mine = sorted((r for r in rows if r["strategy"] == name), key=lambda r: r["n"])
        n = [r["n"] for r in mine]
        line = mem.loglog(n, [r["peak_bytes"] / 1e6 for r in mine], marker="o", label=name)
        cpu.loglog(n, [r["seconds"] for r in mine], marker="o", color=line[0].get_color(),
                   label=f"{name} ({mine[-1]['step_calls'] / mine[-1]['n']:.1f} step calls/step)")
        if name.startswith("revolve"):
            k = int(name.split(", ")[1].split()[0])
            mem.axhline(k * state / 1e6, color=line[0].get_color(), ls=":", lw=1)
    for label, scale, anchor in (("O(n)", ns, "plain tape"), ("O(√n)", np.sqrt(ns),
                                                                "checkpoint every √n")):
        first = [r for r in rows if r["strategy"] == anchor and r["n"] == ns[0]]
        if first:
            mem.loglog(ns, first[0]["peak_bytes"] / 1e6 * scale / scale[0], color="gray",
                       ls="--", lw=1)
            mem.annotate(label, (ns[-1], first[0]["peak_bytes"] / 1e6 * scale[-1] / scale[0]),
                         fontsize=8, color="gray", xytext=(4, 0), textcoords="offset points")
    mem.plot([], [], color="gray", ls=":", lw=1, label="O(k): k states (dotted)")
    mem.set(xlabel="loop length n (steps)", ylabel="peak memory of one gradient (MB)",
            title="memory")
    cpu.set(xlabel="loop length n (steps)", ylabel="CPU time of one gradient (s)",
            title="time (recomputation)")
    return finished(fig, (mem, cpu), title)


def findings(rows: Sequence[Record]) -> list[str]:
    """The opening summary: at the longest loop, each strategy's memory and time against
    the plain tape's.

    >>> findings([{"strategy": "plain tape", "n": 8, "peak_bytes": 8e6, "seconds": 1.0},
    ...           {"strategy": "revolve, 2 snapshots", "n": 8, "peak_bytes": 1e6,
    ...            "seconds": 3.0}])
    ["At n = 8 steps: revolve, 2 snapshots keeps 0.12× the plain tape's peak memory for 3× its time."]
    """
    n = max((r["n"] for r in rows), default=None)
    at = {r["strategy"]: r for r in rows if r["n"] == n}
    plain = at.get("plain tape")
    return [] if plain is None else [
        f"At n = {n:,} steps: {name} keeps {r['peak_bytes'] / plain['peak_bytes']:.2g}× the "
        f"plain tape's peak memory for {r['seconds'] / plain['seconds']:.2g}× its time."
        for name, r in at.items() if name != "plain tape"]


def build(spec: dict[str, Any], out: Path, command: str = "") -> Path:
    """Measure, draw and write the figure, the numbers and the caption into ``out``."""
    s = {**DEFAULTS, **spec.get("setup", {})}
    out.mkdir(parents=True, exist_ok=True)
    rows = measure_recompute(s["lengths"], s["size"], s["snapshots"])
    caption = (f"Peak memory and CPU time of one gradient of an n-step loop "
               f"x ← x + 0.01 sin x over a {s['size']}-vector state. Dashed: O(n) and O(√n) "
               "through the first measured point; dotted: k stored states.")
    return write_experiment(out, memory_recompute_figure(rows, s["title"]),
                            "memory_vs_recompute.png", ("recompute.json", {"setup": s, "rows": rows}),
                            s["title"], caption, findings(rows), command)
