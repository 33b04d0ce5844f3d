# %% [markdown]
# # One model, three API families, eager and graph mode
#
# Frameworks agree on the mathematics of reverse mode and disagree on *where the gradient
# lives*:
#
# * **tensor-centred** (PyTorch, PaddlePaddle): `loss.backward()` *adds* into each
#   parameter's `.grad`, so k micro-batches are just k `backward()` calls;
# * **functional** (JAX, MindSpore): `dk.value_and_grad(forward_fn, None, weights=params)`
#   *returns* the gradients, so their sum needs a place of its own, `optim.Accumulator`;
# * **tape-scoped** (TensorFlow, MXNet): only `with dk.record() as tape:` is recorded, and
#   `tape.gradient(loss, params)` returns a list you sum.
#
# The three training loops live in `examples/three_families.py`; this notebook shows them,
# trains the two-moons MLP with each for 50 steps of 4 micro-batches, first in eager mode,
# then after `dk.set_mode("graph")` (the compiled backend), and checks that all six give
# the same parameters.

# %%
import importlib.util
import inspect
from pathlib import Path

import numpy as np

import diffkit as dk
from diffkit import data

# the clone's examples/ folder, found from where the notebook runs (docs/tutorials/ or above)
here = Path.cwd().resolve()
path = next(p / "examples" / "three_families.py" for p in (here, *here.parents)
            if (p / "examples" / "three_families.py").exists())
spec = importlib.util.spec_from_file_location("three_families", path)
ex = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ex)

for family in (ex.tensor_family, ex.functional_family, ex.tape_family):
    print(inspect.getsource(family))

# %% [markdown]
# ## Six runs: three families, two modes
#
# Same data, same initialization, same optimizer (SGD with momentum). In graph mode the
# loops do not change: the functional family's gradient function becomes one compiled
# program whose *arguments* are the micro-batch and the parameters, and in the other two
# the model becomes one compiled operation on the tape. `programs` counts what was
# compiled in 50 steps: once per program for the one micro-batch shape.

# %%
X, y = data.two_moons(400, noise=0.1, seed=0)
steps = ex.plan(400, 50, 64, 4)
runs = {}
for mode in ("eager", "graph"):
    dk.set_mode(mode)
    try:
        for family in ex.FAMILIES:
            runs[mode, family] = ex.train(family, X, y, steps)
    finally:
        dk.set_mode("eager")

ref = runs["eager", "tensor-centred"].params
print(f"{'mode':6s} {'family':15s} {'loss@50':>9s} {'ms/step':>8s} {'programs':>9s} "
      f"{'compile ms':>10s} {'max|Δθ|':>8s}")
for (mode, family), r in runs.items():
    diff = max(float(np.abs(p - q).max()) for p, q in zip(r.params, ref))
    print(f"{mode:6s} {family:15s} {r.losses[-1]:9.6f} {1e3 * r.step_s:8.2f} {r.programs:9d} "
          f"{1e3 * r.compile_s:10.1f} {diff:8.1e}")
    assert diff < 1e-12
assert [r.programs for r in runs.values()] == [0, 0, 0, 2, 1, 2]

# %% [markdown]
# The times are one measurement on whatever machine runs this; the zeros are not. The
# functional family gains most in graph mode: its whole gradient, forward and adjoint, is
# one program. In the other two only the model is compiled (as `torch.compile(model)` or
# MXNet's `hybridize()`), the loss and the optimizer stay eager.
#
# ## What graph mode takes away
#
# A compiled model is traced once for all values: `print` inside `forward` shows a
# placeholder, and a branch on a value cannot be decided. The eager tape does both.

# %%
for mode in ("eager", "graph"):
    print(f"{mode}:")
    print("\n".join(ex.cannot(mode)))
