# %% [markdown]
# # Five ways to differentiate one function
#
# diffkit holds five differentiators behind one API. Here they all differentiate
# f(x) = sin(x) · exp(−x²/2) at x = 1, and we look at what each one costs and how
# accurate it is: the closed form SymPy derives, finite differences (with their
# error-vs-step "V"), forward and reverse automatic differentiation, and the compiled
# way (the graph traced once, differentiated graph-to-graph, run as generated code).
#
# Run it as a script, or as an executed notebook (`pip install ".[notebook]"`, then
# `jupytext --to notebook --set-kernel python3 --execute 01_five_ways.py`).

# %%
import numpy as np

import diffkit as dk
import diffkit.numpy as dnp


def f(x):
    return dnp.sin(x) * dnp.exp(-x * x / 2)


x0 = 1.0
exact = (np.cos(x0) - x0 * np.sin(x0)) * np.exp(-x0 * x0 / 2)  # by hand: product rule
for backend in ["symbolic", "numeric", "forward", "reverse", "compiled"]:
    d = dk.derivative(f, backend=backend)(x0)
    print(f"{backend:9s} {d:.17f}   error {abs(d - exact) / abs(exact):.1e}")
    assert abs(d - exact) <= 1e-9 * abs(exact)

# %% [markdown]
# The symbolic backend builds the derivative as a formula. In Jupyter the object shows
# itself typeset (LaTeX):

# %%
derivation = dk.closed_form(f, x0, "derivative")
derivation

# %% [markdown]
# ## Side by side: `dk.compare`
#
# Every backend in its own process, measured: the derivative, its error against a
# 40-digit reference, time per call, the cost ratio time(f′)/time(f), peak memory and
# the size of what was built. `to_pandas()` gives a DataFrame (with pandas installed);
# `records()` gives plain dicts.

# %%
result = dk.compare(f, x0, repeat=3)  # all five ways
print(result)
assert all(r["status"] == "ok" for r in result.records())
try:
    table = result.to_pandas()[["backend", "derivative", "error", "time_s", "cost_ratio"]]
except dk.DiffkitError:  # pandas is optional
    table = result.records()
table

# %% [markdown]
# ## Finite differences: the V
#
# A difference quotient with step h makes two errors: truncation, shrinking like hᵖ,
# and round-off, growing like ε/h. Their sum traces a "V"; each method's automatic step
# (the stars) aims for its bottom. The complex step subtracts nothing, so it has no
# round-off arm. The figure shows itself in Jupyter, no `%matplotlib inline` needed.

# %%
from diffkit.bench.sweeps import step_errors, swell
from diffkit.bench.targets import Target
from diffkit.reporting.plots import step_error_figure, swell_figure

rows = step_errors(Target("sin(x)·exp(-x²/2)", f, np.asarray(x0), "derivative"))
best = min(r["error"] for r in rows if r["method"] == "central" and r["error"] is not None)
assert best < 1e-9
step_error_figure(rows, result.records())

# %% [markdown]
# ## Expression swell
#
# Compose the logistic map l ← 4 l (1 − l) deeper and deeper: the symbolic derivative
# as a tree grows exponentially, as a DAG after common-subexpression elimination far
# slower, while the AD tape grows by a few operations per level.

# %%
sizes = [dict(r, function="logistic_map") for r in swell("logistic_map", range(1, 7))]
tree = [r["expr_nodes"] for r in sizes if r["backend"] == "symbolic"]
tape = [r["tape_ops"] for r in sizes if r["backend"] == "reverse"]
assert tree[-1] > 10 * tape[-1]
swell_figure(sizes)
