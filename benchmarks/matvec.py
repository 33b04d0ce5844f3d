"""One pass over X or two: the logistic loss's gradient with the kernel taking both
matrix-vector products over (compiler/matvec.py) against the same program with the two
library products, at several numbers of rows, one run on one core.

    python benchmarks/matvec.py            # 100 columns; 10^3 ... 10^5 rows

Both programs are diffkit's default compiled gradient; the second is built with the
pairing switched off. Times are medians of 15 samples taken in turn
(diffkit.bench.probes.interleaved), the process pinned to one core.
"""

from __future__ import annotations

import os

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
from diffkit.bench import workloads as wl  # noqa: E402
from diffkit.bench.probes import interleaved  # noqa: E402
from diffkit.compiler import driver  # noqa: E402


def main() -> None:
    print("| rows × 100 columns | X | one pass (paired) | two library products | ratio |\n"
          "|---|---|---|---|---|")
    for m in (100, 300, 1000, 3000, 10**4, 3 * 10**4, 10**5):
        rng = np.random.default_rng(m)
        w, X = 0.1 * rng.standard_normal(100), rng.standard_normal((m, 100))
        y = np.sign(rng.standard_normal(m))
        paired = dk.jit(dk.grad(wl.logistic_loss))
        paired(w, X, y)
        keep, driver.pair_products = driver.pair_products, lambda plan: plan
        try:
            plain = dk.jit(dk.grad(wl.logistic_loss))
            plain(w, X, y)
        finally:
            driver.pair_products = keep
        assert "its transpose" in paired.program(w, X, y).fusion
        assert "its transpose" not in plain.program(w, X, y).fusion
        np.testing.assert_allclose(paired(w, X, y), plain(w, X, y), rtol=1e-11)
        (a, _), (b, _) = interleaved([lambda: paired(w, X, y), lambda: plain(w, X, y)], 15)
        print(f"| {m:,} | {X.nbytes / 2**20:.1f} MB | {a * 1e3:.3g} ms | {b * 1e3:.3g} ms | "
              f"{a / b:.2f} |")


if __name__ == "__main__":
    main()
