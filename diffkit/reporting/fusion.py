"""What fusion buys: the Rosenbrock gradient eager, compiled, and compiled with fused
kernels, against n, next to what the memory bus allows.

Eager reverse mode and the unfused compiled program run one numpy call per operation:
every intermediate is an array written to memory and read back. A fused kernel
(``dk.jit(f)``, fused by default, through LLVM IR or Numba) reads ``x`` and writes the gradient
once. Since such a loop does little arithmetic per byte, its floor is *memory-bound*: bytes
touched (8n to read x, 8n to write the gradient) over the bandwidth measured at that size
(a copy of n values, in cache while they fit). A spec marked
``experiment = "fusion"`` (``reports/fusion.toml``) runs it:

    diffkit report reports/fusion.toml -o out/fusion

and writes ``fusion.png`` (time per call and peak resident memory against n),
``fusion.json`` and ``captions.md``. Peak memory is resident size (VmHWM), since
tracemalloc does not see compiled kernels' allocations.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..bench.experiments import FUSION_WAYS, measure_fusion
from .report import finished, two_panels, write_experiment

Record = dict[str, Any]
DEFAULTS = {"sizes": [1000, 10000, 100000, 1000000], "repeat": 5,
            "title": "Fusion: the Rosenbrock gradient eager, compiled and fused"}
def fusion_figure(rows: Sequence[Record], title: str = DEFAULTS["title"]) -> Any:
    """Left: time per gradient against n, each way, and the memory-bound line. Right:
    peak resident memory of one gradient against n, and the 16n bytes of x and g."""
    fig, (left, right) = two_panels()
    for way in [*FUSION_WAYS, "memory-bound"]:
        mine = sorted((r for r in rows if r["way"] == way), key=lambda r: r["n"])
        if not mine:
            continue
        style = {"ls": "--", "color": "gray"} if way == "memory-bound" else {"marker": "o"}
        label = "memory-bound: 16n bytes / bandwidth" if way == "memory-bound" else way
        left.loglog([r["n"] for r in mine], [r["time_s"] for r in mine], label=label, **style)
        peaks = [(r["n"], r["peak_rss_bytes"] / 1e6) for r in mine if r.get("peak_rss_bytes")]
        if peaks:
            right.loglog(*zip(*peaks), marker="o", label=way)
    ns = sorted({r["n"] for r in rows})
    if ns:
        right.loglog(ns, [16 * n / 1e6 for n in ns], ls="--", color="gray",
                     label="x and its gradient: 16n bytes")
    left.set(xlabel="input dimension n", ylabel="seconds per gradient", title="time")
    right.set(xlabel="input dimension n", ylabel="peak resident growth of one gradient (MB)",
              title="memory (VmHWM)")
    return finished(fig, (left, right), title)


def findings(rows: Sequence[Record]) -> list[str]:
    """The opening summary: at the largest n, each way's time and memory against eager's.

    >>> findings([{"way": "eager reverse", "n": 10, "time_s": 2e-3, "peak_rss_bytes": 4e6},
    ...           {"way": "compiled (numpy, unfused)", "n": 10, "time_s": 1e-3,
    ...            "peak_rss_bytes": 2e6}])
    ['At n = 10: compiled (numpy, unfused) takes 0.5× the time of eager reverse and 0.5× its peak memory.']
    """
    n = max((r["n"] for r in rows), default=None)
    at = {r["way"]: r for r in rows if r["n"] == n}
    eager = at.get("eager reverse")
    out = []
    for way, r in at.items():
        if eager is None or way in ("eager reverse", "memory-bound"):
            continue
        memory = (f" and {r['peak_rss_bytes'] / eager['peak_rss_bytes']:.2g}× its peak memory"
                  if r.get("peak_rss_bytes") and eager.get("peak_rss_bytes") else "")
        out.append(f"At n = {n:,}: {way} takes {r['time_s'] / eager['time_s']:.2g}× the time "
                   f"of eager reverse{memory}.")
    return out


def build(spec: dict[str, Any], out: Path, command: str = "") -> Path:
    """Measure, draw and write the figure, the numbers and the caption into ``out``."""
    s = {**DEFAULTS, **spec.get("setup", {})}
    out.mkdir(parents=True, exist_ok=True)
    rows = measure_fusion(s["sizes"], s["repeat"])
    fused = [r["fusion"] for r in rows
             if r["way"] == "compiled, fused kernels" and r.get("fusion")]
    if fused and fused[-1].endswith("numba missing)"):
        how = "; the fused way ran unfused here (numba missing: pip install diffkit[jit])"
    else:
        how = "; the fused program runs one compiled loop" + (f" ({fused[-1]})" if fused else "")
    bandwidths = ", ".join(f"{r['bandwidth_bytes_per_s'] / 1e9:.0f}" for r in rows
                           if r["way"] == "memory-bound")
    caption = ("Median time per gradient (left) and peak resident-memory growth of one "
               "gradient (right) of Rosenbrock's function against n. Eager reverse mode and "
               "the unfused compiled program write every intermediate to memory" + how +
               ". Dashed: the memory-bound limit, 16n bytes (x read, gradient written) "
               f"over the bandwidth of a copy of n values, measured at each n ({bandwidths} "
               "GB/s), and on the right the 16n bytes themselves.")
    return write_experiment(out, fusion_figure(rows, s["title"]), "fusion.png",
                            ("fusion.json", {"setup": s, "rows": rows}), s["title"], caption,
                            findings(rows), command)
