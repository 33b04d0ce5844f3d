# %% [markdown]
# # Evaluation traces: Baydin et al.'s Tables 2 and 3
#
# Baydin, Pearlmutter, Radul and Siskind, *Automatic differentiation in machine
# learning: a survey* (JMLR 2018), explain forward and reverse mode on
# f(x₁, x₂) = ln(x₁) + x₁x₂ − sin(x₂) at (x₁, x₂) = (2, 5). `dk.trace` prints the same
# evaluation trace (Wengert list): one row per primitive, v₋₁ and v₀ the inputs, numbered
# as the paper numbers them.
#
# Python evaluates `log(x1) + x1*x2 - sin(x2)` left to right: ln x₁, then x₁x₂, then
# their sum, and only then sin x₂. The paper numbers each operation as soon as its
# operands exist (sin x₂ is v₃, the sum v₄). Both are valid orders of the same graph,
# since each operation still comes after its operands, so every value, tangent and
# adjoint is the same; only the names differ. `dk.trace` uses the textbook's numbering by
# default, and `order="evaluation"` shows Python's.

# %%
import numpy as np

import diffkit as dk
import diffkit.numpy as dnp


def f(x1, x2):
    return dnp.log(x1) + x1 * x2 - dnp.sin(x2)


# %% [markdown]
# ## Table 2: forward mode
#
# Each row carries a tangent v̇ beside its value; seeding ẋ₁ = 1, ẋ₂ = 0 gives
# ∂f/∂x₁ = 1/x₁ + x₂ = 5.5 at the end.

# %%
forward = dk.trace(f, 2.0, 5.0, mode="forward")
print(forward)
assert [r["formula"] for r in forward.rows][2:] == ["ln v-1", "v-1 × v0", "sin v0",
                                                     "v1 + v2", "v4 − v3"]
last = forward.records()[-1]
assert np.isclose(last["value"], np.log(2) + 10 - np.sin(5), rtol=1e-15)  # 11.652
assert np.isclose(last["tangent"], 5.5, rtol=1e-15)

# %% [markdown]
# ## Table 3: reverse mode
#
# The forward sweep records the values; the reverse sweep pushes adjoints v̄ = ∂f/∂v
# back from v̄₅ = 1 and gives both partial derivatives at once:
# x̄₁ = 5.5, x̄₂ = x₁ − cos(x₂) = 1.716.

# %%
reverse = dk.trace(f, 2.0, 5.0, mode="reverse")
print(reverse)
adjoints = {r["var"]: r["adjoint"] for r in reverse.rows}  # the table (records() adds the sweep)
assert np.isclose(adjoints["v-1"], 5.5, rtol=1e-15)
assert np.isclose(adjoints["v0"], 2 - np.cos(5), rtol=1e-15)

# %% [markdown]
# In Python's own order the names change (the sum is v₃, sin x₂ is v₄), the numbers do not:

# %%
print(dk.trace(f, 2.0, 5.0, order="evaluation"))

# %% [markdown]
# The same graph as a picture (Jupyter shows it as SVG): each node with its value and
# its gradient after the backward pass.

# %%
dk.graph(f, 2.0, 5.0)

# %% [markdown]
# ## Your own function
#
# Change `mine` and the point, and rerun: the trace of any function written with
# `diffkit.numpy` (loops and branches included) comes out the same way.

# %%
def mine(x, y):
    return dnp.exp(x * y) / (1 + x * x)


at = (0.5, 2.0)
print(dk.trace(mine, *at, mode="reverse"))
gx, gy = dk.grad(mine, argnums=(0, 1))(*at)
x, y = at  # by hand: quotient rule
assert np.isclose(gx, (y * np.exp(x * y) * (1 + x * x) - 2 * x * np.exp(x * y)) / (1 + x * x) ** 2)
assert np.isclose(gy, x * np.exp(x * y) / (1 + x * x))
