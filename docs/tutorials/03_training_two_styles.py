# %% [markdown]
# # Training a small network, two ways, the same numbers
#
# The same two-layer network on the two-moons data, trained
#
# * in the **PyTorch style**: `loss.backward()` adds into each parameter's `.grad`,
#   `opt.step()` reads it, `opt.zero_grad()` resets it;
# * in the **JAX / MindSpore style**: `dk.value_and_grad` of the loss as a function of
#   the parameters returns the gradients; nothing is stored on the parameters.
#
# Each step splits its batch into k micro-batches and makes one update from their
# gradients (gradient accumulation, as for a batch too big for memory). Both styles must
# give the same parameters as one full-batch step.

# %%
import numpy as np

import diffkit as dk
from diffkit import data, nn, optim

X, y = data.two_moons(400, noise=0.1, seed=0)
k = 4  # micro-batches per step
parts = [(X[i::k], y[i::k]) for i in range(k)]  # equal sizes: the mean of means is the mean


def fresh():
    return nn.mlp([2, 16, 2], nn.Tanh, rng=0)


# %% [markdown]
# ## PyTorch style: `.grad` accumulates

# %%
torch_style = fresh()
opt = optim.SGD(torch_style.named_parameters(), lr=0.5)
for step in range(20):
    opt.zero_grad()
    for Xb, yb in parts:
        (nn.cross_entropy(torch_style(Xb), yb) / k).backward()  # adds into .grad
    opt.step()
print("loss after 20 steps:", float(nn.cross_entropy(torch_style(X), y).data))

# %% [markdown]
# ## JAX / MindSpore style: gradients are returned, summed by hand

# %%
functional = fresh()
opt = optim.SGD(functional.named_parameters(), lr=0.5)
vg = dk.value_and_grad(lambda p, Xb, yb: nn.cross_entropy(nn.functional_call(functional, p, Xb), yb))
for step in range(20):
    total = None
    for Xb, yb in parts:
        _, g = vg(functional.parameters_dict(), Xb, yb)
        total = g if total is None else {n: total[n] + g[n] for n in g}
    opt.step({n: v / k for n, v in total.items()})
print("loss after 20 steps:", float(nn.cross_entropy(functional(X), y).data))

# %% [markdown]
# ## The same numbers, and the same as one full batch

# %%
full = fresh()
opt = optim.SGD(full.named_parameters(), lr=0.5)
for step in range(20):
    opt.zero_grad()
    nn.cross_entropy(full(X), y).backward()
    opt.step()

a, b, c = (m.parameters_dict() for m in (torch_style, functional, full))
for name in a:
    np.testing.assert_allclose(np.asarray(a[name]), np.asarray(b[name]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(a[name]), np.asarray(c[name]), rtol=1e-10, atol=1e-12)
print("tensor style == functional style == full batch, for every parameter")
