"""Long differential soak: many random programs, every backend, against the reference.

    python benchmarks/soak.py --programs 10000            # all cores, seed 0
    python benchmarks/soak.py --programs 2000 --seed 7 --jobs 2 --json soak.json
    python benchmarks/soak.py --programs 10000 --seed 7 --json soak.json --resume  # go on

The programs and the oracle are those of the test suite (``tests/strategies.py``): straight-
line programs over the whole primitive table (gradients, Jacobians, Hessians, nested
gradients), elementwise programs (``dk.derivative``) and programs with loops and branches,
each judged against the 40-digit reference with the documented tolerances; and the cases of
``tests/edge_programs.py``, judged against their derivatives written out in numpy: ``vmap``
over functions that decide by value (sort, argmax ...), ``concatenate(axis=None)``, and
tape-scoped gradients of several targets; and the complex programs of
``tests/complex_programs.py`` (complex inputs through holomorphic and non-holomorphic steps,
real losses and container outputs), judged against JAX (x64). Every program is
judged in its own child process under a time limit (``diffkit.bench.cells.run_isolated``), so a
hang or a crash is a finding, not the end of the run. Disagreements are minimised by a
greedy shrinker and printed as programs you can paste into a test.

The summary: programs per family, verdicts per backend, the closest any agreeing result
came to its tolerance, condition estimates, and every disagreement (known core bugs, listed
in ``tests/test_differential.py``, are marked as such).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import complex_programs as C  # noqa: E402
import edge_programs as E  # noqa: E402
import strategies as S  # noqa: E402
from diffkit.bench.cells import run_isolated  # noqa: E402

# (family, kind, weight); byvalue, concat and tape are tests/edge_programs.py's families,
# complex and complex_tree tests/complex_programs.py's
MIX = (("straight", "grad", 30), ("straight", "jacobian", 12), ("elementwise", "derivative", 12),
       ("flow", "grad", 16), ("straight", "hessian", 10), ("nested", "hvp", 6),
       ("byvalue", "vmap", 4), ("concat", "grad", 2), ("tape", "grad", 2),
       ("complex", "grad", 6), ("complex_tree", "vjp", 3))
CASES = {**{f: E for f in E.FAMILIES}, **{f: C for f in C.FAMILIES}}  # judged by hand


def known_bug(v: dict, r: dict) -> str | None:
    """The known core bug (tests/test_differential.py) a bad verdict matches, if any."""
    from test_differential import KNOWN_BUGS

    if r["family"] in CASES:  # (their cases are not programs; no known bugs)
        return None
    program = S.Program(r["source"], r["x"], r["kind"] if r["kind"] != "hvp" else "grad", r["family"])
    verdict = S.Verdict(v["backend"], v["kind"], v["status"], message=v["message"])
    for name, match in KNOWN_BUGS.items():
        try:
            if match(verdict, program):
                return name
        except Exception:  # noqa: BLE001
            pass
    return None


def make(index: int, seed: int, only: tuple[str, ...] = ()) -> tuple[str, S.Program | E.Case | None, str]:
    """The index-th program of a soak: (family, program or None, why rejected); ``only``
    keeps the mix to those families."""
    rng = random.Random(seed * 1_000_003 + index)
    mix = [m for m in MIX if m[0] in only] if only else MIX
    family, kind, _ = rng.choices(mix, weights=[w for *_, w in mix])[0]
    if family in CASES:
        return family, CASES[family].draw(rng, family), ""
    try:
        if family == "nested":
            p = S.random_program(rng, "straight", "grad")
            if S.np.size(p.x) > 4:
                return family, None, "nested: too many inputs"
        else:
            p = S.random_program(rng, family, kind)
    except S.Rejected as exc:
        return family, None, str(exc)
    return family, p, ""


def verdicts(family: str, p: S.Program | E.Case, sympy_timeout: float) -> list[dict]:
    if family in CASES:  # judged against numpy or JAX by hand (no condition estimate)
        return [{**v, "kappa": float("nan")} for v in CASES[family].judge(p)]
    j = S.judge_nested(p, isolate=sympy_timeout) if family == "nested" else S.judge(p, isolate=sympy_timeout)
    return [{"backend": v.backend, "kind": v.kind, "status": v.status, "error": v.error,
             "tol": v.tol, "message": v.message, "kappa": j.kappa} for v in j.verdicts]


def signature(v: dict) -> str:
    words = " ".join(v["message"].split()[:3]) if v["status"] == "error" else ""
    return f"{v['backend']} {v['kind']} {v['status']} {words}".strip()


def judged(family: str, p: S.Program, timeout: float) -> list[dict]:
    # no memory limit on the judge: the reference and symbolic cells it forks set their own
    # (S.SYMPY_MEMORY_MB), and a limit here would cap theirs
    r = run_isolated(lambda: {"verdicts": verdicts(family, p, timeout / 3)}, timeout, None)
    if r["status"] != "ok":
        return [{"backend": "harness", "kind": p.kind, "status": "error", "error": float("nan"),
                 "tol": float("nan"), "message": f"{r['status']}: {r.get('message')}", "kappa": float("nan")}]
    return r["verdicts"]


def worker(indices: list[int], args: argparse.Namespace, out: Any) -> None:
    S.Builder.max_lane = args.max_lane
    S.SYMPY_MEMORY_MB = args.memory
    S.SMOOTH_AFTER_LOOPS = args.smooth_after_loops
    for index in indices:
        family, p, _ = make(index, args.seed, args.only)
        start = time.perf_counter()
        vs = judged(family, p, args.timeout)
        record = {"index": index, "family": family, "kind": p.kind, "program": p.pretty(),
                  "source": p.source, "x": S.np.asarray(p.x).tolist(),
                  "verdicts": vs, "seconds": time.perf_counter() - start}
        bad = [v for v in vs if v["status"] in ("disagree", "error")]
        if bad and args.shrink and family not in CASES:
            sig = {signature(v) for v in bad}

            def still_bad(c: S.Program, sig: set = sig) -> bool:
                return bool(sig & {signature(v) for v in judged(family, c, args.timeout)
                                   if v["status"] in ("disagree", "error")})

            small = S.shrink(p, still_bad, budget=args.shrink_budget)
            record["minimal"] = small.pretty()
            record["minimal_repr"] = repr(small)
        out.put(record)
    out.put({"done": True})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=2000, help="valid programs to judge (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per program (isolated)")
    ap.add_argument("--memory", type=float, default=4096.0,
                    help="MB for each reference / symbolic cell (isolated)")
    ap.add_argument("--max-lane", type=int, default=5,
                    help="largest max/min reduction lane (>= 5: slow symbolic setup)")
    ap.add_argument("--smooth-after-loops", dest="smooth_after_loops", action="store_true",
                    help="no clip/maximum/where after loops (they once hit bug B6, now fixed)")
    ap.add_argument("--no-shrink", dest="shrink", action="store_false")
    ap.add_argument("--shrink-budget", type=int, default=60)
    ap.add_argument("--only", type=lambda t: tuple(t.split(",")), default=(),
                    help="draw only these families, e.g. --only complex,complex_tree")
    ap.add_argument("--json", help="write every record (JSON Lines) to this file")
    ap.add_argument("--resume", action="store_true",
                    help="keep the --json file's records, judge only the programs it lacks "
                         "and append them (a soak spread over several runs)")
    args = ap.parse_args(argv)
    if args.programs < 1 or args.jobs < 1:
        ap.error("--programs and --jobs must be positive")
    if args.resume and not args.json:
        ap.error("--resume needs --json FILE")
    unknown = sorted(set(args.only) - {m[0] for m in MIX})
    if unknown:
        ap.error(f"--only: unknown family {unknown[0]!r}; families: "
                 + ", ".join(dict.fromkeys(m[0] for m in MIX)))
    kept = judged_before(args.json) if args.resume else []

    start = time.perf_counter()
    S.Builder.max_lane = args.max_lane
    S.SMOOTH_AFTER_LOOPS = args.smooth_after_loops
    chosen: list[int] = []
    rejected: Counter[str] = Counter()
    index = 0
    while len(chosen) < args.programs:  # draw and validate here (cheap), judge in workers
        family, p, why = make(index, args.seed, args.only)
        if p is None:
            rejected[why[:60]] += 1
        else:
            chosen.append(index)
        index += 1

    # warm up in the parent: every forked cell then starts with sympy, mpmath and the
    # lambdify machinery imported (else each isolated cell pays ~1 s of imports)
    S.judge(S.Program("def f(x):\n    return dnp.sum(dnp.where(x > 0, dnp.sin(x), x * x))\n", [0.5, -1.0]))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    seen = {r["index"] for r in kept}
    todo = [i for i in chosen if i not in seen]
    procs = [ctx.Process(target=worker, args=(todo[w::args.jobs], args, queue))
             for w in range(args.jobs)]
    for proc in procs:
        proc.start()
    wanted = set(chosen)  # (a kept record outside this run's programs is left out)
    records: list[dict] = [r for r in kept if r["index"] in wanted]
    sink = open(args.json, "a" if args.resume else "w") if args.json else None
    if sink and sink.tell() and not open(args.json, "rb").read().endswith(b"\n"):
        sink.write("\n")  # a line a killed run cut short stays apart from the next one
    done = 0
    try:
        while done < len(procs):
            rec = queue.get()
            if "done" in rec:
                done += 1
                continue
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec, default=str) + "\n")
                sink.flush()
            if len(records) % 100 == 0:
                print(f"  {len(records)}/{args.programs} programs judged, "
                      f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    except KeyboardInterrupt:
        for proc in procs:
            proc.terminate()
        print("interrupted: summary of the programs judged so far", file=sys.stderr)
    for proc in procs:
        proc.join()
    if sink:
        sink.close()
    records.sort(key=lambda r: r["index"])
    print(summary(records, rejected, time.perf_counter() - start, args, len(chosen) - len(todo)))
    new = [v for r in records for v in r["verdicts"]
           if v["status"] in ("disagree", "error") and not known_bug(v, r)]
    return 1 if new else 0


def judged_before(path: str) -> list[dict]:
    """The records of an earlier soak's JSON Lines file (none if it does not exist; a line
    cut short by a killed run is judged again)."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as lines:
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def summary(records: list[dict], rejected: Counter, seconds: float, args: argparse.Namespace,
            earlier: int = 0) -> str:
    lines = [f"diffkit differential soak: seed {args.seed}, {len(records)} programs judged"
             + (f" ({earlier} by earlier runs, kept in {args.json})" if earlier else "")
             + f", this run {seconds:.0f} s ({args.jobs} jobs); {sum(rejected.values())} draws "
             "rejected by the generator"]
    fam = Counter(f"{r['family']}/{r['kind']}" for r in records)
    lines.append("programs: " + ", ".join(f"{k} {v}" for k, v in sorted(fam.items())))
    table: dict[str, Counter] = defaultdict(Counter)
    headroom: dict[str, float] = defaultdict(float)
    kappas = []
    for r in records:
        for v in r["verdicts"]:
            table[v["backend"]][v["status"]] += 1
            if v["status"] == "agree" and v["tol"] and v["tol"] == v["tol"] and v["tol"] > 0:
                headroom[v["backend"]] = max(headroom[v["backend"]], v["error"] / v["tol"])
            if v.get("kappa") == v.get("kappa") and v.get("kappa") is not None:
                kappas.append(v["kappa"])
    statuses = ["agree", "disagree", "error", "n/a", "skipped"]
    lines.append(f"{'backend':>22}  " + "  ".join(f"{s:>8}" for s in statuses) + "  max err/tol (agreeing)")
    for backend in sorted(table):
        c = table[backend]
        lines.append(f"{backend:>22}  " + "  ".join(f"{c[s]:>8}" for s in statuses)
                     + f"  {headroom.get(backend, 0):.2e}")
    if kappas:
        ks = sorted(kappas)
        lines.append(f"condition estimates (sigma / eps max|ref|): median {ks[len(ks) // 2]:.3g}, "
                     f"99% {ks[int(0.99 * (len(ks) - 1))]:.3g}, max {ks[-1]:.3g}")
    slow = sorted(records, key=lambda r: -r["seconds"])[:3]
    lines.append("slowest programs: " + ", ".join(f"#{r['index']} {r['seconds']:.1f} s" for r in slow))
    bad = [r for r in records if any(v["status"] in ("disagree", "error") for v in r["verdicts"])]
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in bad:
        for v in r["verdicts"]:
            if v["status"] in ("disagree", "error"):
                groups[signature(v)].append((r, v))
    lines.append(f"disagreements: {len(bad)} programs, {len(groups)} distinct signatures")
    for sig, hits in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        r, v = hits[0]
        tag = known_bug(v, r)
        lines.append("")
        lines.append(f"== {sig}: {len(hits)} program(s)" + (f"  [known: {tag}]" if tag else "  [NEW]"))
        lines.append(f"   {v['message'][:200]}")
        lines.append("   minimal program:" if "minimal" in r else "   program:")
        lines += ["   " + ln for ln in r.get("minimal", r["program"]).splitlines()]
    if rejected:
        lines.append("")
        lines.append("generator rejections: " + ", ".join(f"{k} ({v})" for k, v in rejected.most_common(5)))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
