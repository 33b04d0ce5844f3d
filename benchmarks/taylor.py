"""Taylor mode against nested forward mode for high derivatives: the issue's bar, measured.

    python benchmarks/taylor.py [--order 8] [--depth 20]

``taylor_chain`` (ten primitives a step; 200 at depth 20) at x = 0.3: all derivatives up
to ``--order`` by ``dk.derivatives`` (one Taylor pass) and the highest one by
``dk.derivative`` nested ``--order`` times (forward over forward ...), both timed in this
run. Prints both times, their ratio (bar: >= 10 at order 8) and how far apart the two
highest derivatives are.
"""

from __future__ import annotations

import argparse
import time

import diffkit as dk
from diffkit.bench.structured import taylor_chain


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", type=int, default=8)
    parser.add_argument("--depth", type=int, default=20)
    args = parser.parse_args()

    def f(v):
        return taylor_chain(v, depth=args.depth)

    x = 0.3
    dk.derivatives(f, args.order)(x)  # (warm: imports)
    taylor, taylor_s = timed(lambda: dk.derivatives(f, args.order)(x))
    nested = f
    for _ in range(args.order):
        nested = dk.derivative(nested)
    highest, nested_s = timed(lambda: nested(x))
    print(f"taylor_chain depth {args.depth} ({10 * args.depth} primitives), x = {x}, "
          f"order {args.order}")
    print(f"  dk.derivatives (Taylor mode, all orders): {taylor_s * 1e3:.1f} ms")
    print(f"  dk.derivative nested {args.order}x (forward mode, order {args.order} only): "
          f"{nested_s * 1e3:.0f} ms")
    print(f"  ratio nested / Taylor: {nested_s / taylor_s:.0f}x")
    print(f"  order {args.order}: Taylor {float(taylor[-1]):.15e}, nested {float(highest):.15e}")


if __name__ == "__main__":
    main()
