"""Where a peer is more accurate than diffkit: every function of the accuracy atlas at one or
more draws of its points, each installed peer (JAX, PyTorch, autograd) beside diffkit's eager
modes (and the fused kernels with ``--methods reverse,forward,compiled``), value and first
derivative, compared as the tables print them (``diffkit.bench.atlas.ahead``). Prints one
line per row where a peer's maximum is below diffkit's, and the count per draw:

    python benchmarks/peers_ahead.py                     # seed 0: the documented points
    python benchmarks/peers_ahead.py --seeds 0 1 2 3     # and three other draws (minutes)
"""

from __future__ import annotations

import argparse

from diffkit.bench import atlas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--methods", default="reverse,forward",
                        help="diffkit's methods to compare (reverse, forward, compiled)")
    args = parser.parse_args()
    ours = args.methods.split(",")
    peers = [p for p in atlas.PEERS if atlas.available(p)]
    print(f"peers installed: {', '.join(peers) or 'none'}; diffkit: {', '.join(ours)}")
    for seed in args.seeds:
        rows = []
        for case in atlas.cases():
            rows += atlas.ahead(atlas.measure(case, [*ours, *peers], seed=seed), ours)
        for r in rows:
            print(f"seed {seed}: {r['function']} {r['quantity']}, diffkit {r['method']} "
                  f"{r['ulps']:.3g} > {r['peer']} {r['best']:.3g}")
        print(f"seed {seed}: {len(rows)} rows where a peer is ahead")


if __name__ == "__main__":
    main()
