"""Does ``diffkit advise`` recommend well? The issue's bar, measured (run on demand).

    python benchmarks/advise_bar.py [--quick] [-o advise_bar.md]

For every catalog function at its default point (and at two sizes for the scalable
ones): ``advise(accuracy=1e-8)``, then every built-in backend measured by the harness
against its high-precision reference. A case passes when the recommended method's
measured error meets 1e-8 and its measured time per call is within 1.5x of the fastest
measured backend that meets 1e-8 (setup spread over advise's default 100 calls on both
sides). Also reports advise's own wall time (target: under 10 s).
"""

from __future__ import annotations

import argparse
import math
import time

import diffkit as dk
from diffkit.backends import backends
from diffkit.bench import catalog

METHODS = [m for m in ("reverse", "forward", "compiled") if m in backends()] + [
    "symbolic", "numeric:method=central", "numeric:method=richardson", "numeric:method=complex",
    "numeric:method=forward"]


def cases(quick: bool) -> list[tuple[str, int | None]]:
    out = []
    for name in catalog.names():
        entry = catalog.get(name)
        out.append((name, None))
        if entry.scalable and not quick:
            out += [(name, 10), (name, 1000)]
    return out[:6] if quick else out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="six cases: a smoke test")
    parser.add_argument("-o", "--output", help="write the markdown table here")
    args = parser.parse_args()
    lines = ["| function | n | recommended | measured error | time / fastest | advise s | pass |",
             "|---|---|---|---|---|---|---|"]
    passed = total = 0
    for name, n in cases(args.quick):
        start = time.perf_counter()
        a = dk.advise(name, n=n)
        spent = time.perf_counter() - start
        result = dk.compare(name, n=n, backends=METHODS, repeat=3, timeout=60)
        rows = {r["backend"]: r for r in result.records()}

        def cost(r: dict) -> float:
            return (r.get("setup_s") or 0.0) / a.calls + (r.get("time_s") or math.inf)

        good = [r for r in rows.values() if r["status"] == "ok" and r.get("error") is not None
                and r["error"] <= 1e-8]
        fastest = min(good, key=cost) if good else None
        rec = rows.get(a.best.method) if a.best else None
        ok = bool(rec and rec["status"] == "ok" and rec.get("error") is not None
                  and rec["error"] <= 1e-8 and fastest and cost(rec) <= 1.5 * cost(fastest))
        if a.best is None and not good:
            ok = True  # nothing meets the target, and advise says so
        total += 1
        passed += ok
        ratio = cost(rec) / cost(fastest) if rec and fastest else float("nan")
        lines.append(f"| {name} | {n or ''} | {a.best.method if a.best else 'none'} | "
                     f"{rec.get('error') if rec else '—'} | {ratio:.2f} "
                     f"({fastest['backend'] if fastest else '—'}) | {spent:.1f} | "
                     f"{'yes' if ok else 'NO'} |")
        print(lines[-1], flush=True)
    lines.append(f"\n{passed} of {total} cases pass ({100 * passed / max(total, 1):.0f} %; "
                 "target ≥ 90 %)")
    text = "\n".join(lines)
    print(lines[-1])
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
