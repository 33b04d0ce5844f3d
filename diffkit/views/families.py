"""The three families of autodiff APIs, and each framework's names for one training step.

* **tensor-centred** (PyTorch, PaddlePaddle, OneFlow, MegEngine): tensors carry
  ``requires_grad``, ``grad_fn`` and ``.grad``; ``loss.backward()`` *adds* into ``.grad``,
  so gradients must be cleared, and accumulation is just several ``backward()`` calls.
* **functional** (JAX, MindSpore): a transform turns the forward function into one that
  *returns* gradients; nothing is stored, so accumulation needs a sum of its own.
* **tape-scoped** (TensorFlow's ``GradientTape``, MXNet's ``autograd.record``): only a
  ``with`` block is recorded; the tape returns the gradients (TensorFlow) or
  ``backward()`` writes them to the parameters (MXNet).

diffkit has all three on one reverse-mode tape (``loss.backward()``,
``dk.value_and_grad(..., weights=params)``, ``with dk.record() as tape:``), so one
model gives the same numbers in each (``examples/three_families.py``).
``diffkit styles`` prints :data:`VOCABULARY`.

>>> [row["concept"] for row in table(["MindSpore"])][:3]
['family', 'model base class', 'forward method']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FRAMEWORKS = ("PyTorch", "PaddlePaddle", "MindSpore", "JAX", "TensorFlow", "MXNet")
FAMILIES = {"tensor-centred": ("PyTorch", "PaddlePaddle"), "functional": ("MindSpore", "JAX"),
            "tape-scoped": ("TensorFlow", "MXNet")}

# concept, one cell per framework (FRAMEWORKS order), then diffkit's: one spelling, or
# one per family (tensor-centred, functional, tape-scoped)
VOCABULARY: list[tuple[Any, ...]] = [
    ("family", "tensor-centred", "tensor-centred", "functional", "functional", "tape-scoped",
     "tape-scoped", "all three"),
    ("model base class", "torch.nn.Module", "paddle.nn.Layer", "mindspore.nn.Cell",
     "flax.linen.Module", "tf.keras.Model", "gluon.Block", "nn.Module"),
    ("forward method", "forward(self, x)", "forward(self, x)", "construct(self, x)",
     "__call__(self, x)", "call(self, x)", "forward(self, x)", "forward(self, x)"),
    ("dense layer", "nn.Linear(n_in, n_out)", "nn.Linear(n_in, n_out)", "nn.Dense(n_in, n_out)",
     "nn.Dense(n_out)", "layers.Dense(n_out)", "nn.Dense(n_out)", "nn.Linear(n_in, n_out)"),
    ("sequential container", "nn.Sequential", "nn.Sequential", "nn.SequentialCell",
     "nn.Sequential", "tf.keras.Sequential", "nn.Sequential", "nn.Sequential, nn.mlp"),
    ("parameters", "model.parameters()", "model.parameters()", "model.trainable_params()",
     "params (a pytree)", "model.trainable_variables", "net.collect_params()",
     "model.parameters(), model.trainable_params()"),
    ("optimizer", "optim.SGD(model.parameters(), lr)", "optimizer.SGD(lr, parameters=...)",
     "nn.SGD(model.trainable_params(), lr)", "optax.sgd(lr)", "optimizers.SGD(lr)",
     "gluon.Trainer(params, 'sgd')", "optim.SGD(model.parameters(), lr)"),
    ("get the gradients", "loss.backward()", "loss.backward()",
     "ops.value_and_grad(forward_fn, None, weights, has_aux=True)",
     "grad_fn = jax.value_and_grad(loss_fn); grad_fn(params)",
     "with tf.GradientTape() as tape: ...; tape.gradient(loss, vars)",
     "with autograd.record(): ...; loss.backward()",
     ("loss.backward()", "dk.value_and_grad(forward_fn, None, weights=params, has_aux=True)",
      "with dk.record() as tape: ...; tape.gradient(loss, params)")),
    ("where gradients live", "param.grad (adds up)", "param.grad (adds up)", "returned tuple",
     "returned pytree", "returned list", "param.grad() (overwritten)",
     ("param.grad (adds up)", "returned tuple", "returned list")),
    ("update", "optimizer.step()", "opt.step()", "optimizer(grads)",
     "optax.apply_updates(params, updates)", "opt.apply_gradients(zip(grads, vars))",
     "trainer.step(batch_size)", ("opt.step()", "opt.step(grads)", "opt.step(grads)")),
    ("clearing gradients", "optimizer.zero_grad()", "opt.clear_grad()", "nothing to clear",
     "nothing to clear", "nothing to clear", "nothing (grad_req='write')",
     ("opt.zero_grad() or opt.clear_grad()", "nothing to clear", "nothing to clear")),
    ("accumulate k micro-batches", "k backward(), step, zero_grad", "k backward(), step, clear_grad",
     "an Accumulator sums grads, then optimizer(sum)", "sum the pytrees (optax.MultiSteps)",
     "sum the lists, then apply_gradients", "grad_req='add', k backward(), step",
     ("k backward(), step, zero_grad", "optim.Accumulator: add, value, reset",
      "sum the lists, then opt.step(sum)")),
    ("pause recording", "torch.no_grad()", "paddle.no_grad()", "ops.stop_gradient(x)",
     "jax.lax.stop_gradient(x)", "tape.stop_recording()", "autograd.pause()", "dk.no_grad()"),
    ("static graph", "torch.compile(model)", "paddle.jit.to_static(model)",
     "set_context(mode=GRAPH_MODE)", "jax.jit(step)", "@tf.function", "net.hybridize()",
     "dk.set_mode('graph')"),
]
FAMILY_ROW = {"tensor-centred": 0, "functional": 1, "tape-scoped": 2}


def table(frameworks: Sequence[str] | None = None) -> list[dict[str, str]]:
    """:data:`VOCABULARY` as records ``{concept, <framework>..., diffkit}``, for the given
    frameworks (all by default, matched without regard to case). diffkit's cell gives
    the spelling of the frameworks' family, or of each family present (``a | b``)."""
    wanted = list(FRAMEWORKS) if not frameworks else \
        [f for f in FRAMEWORKS if f.lower() in {w.lower() for w in frameworks}]
    cols = [FRAMEWORKS.index(f) + 1 for f in wanted]
    fams = [fam for fam, members in FAMILIES.items() if set(members) & set(wanted)]
    records = []
    for row in VOCABULARY:
        ours = row[-1] if isinstance(row[-1], str) else \
            " | ".join(dict.fromkeys(row[-1][FAMILY_ROW[f]] for f in fams))
        records.append({"concept": row[0], **{f: row[i] for f, i in zip(wanted, cols)},
                        "diffkit": ours})
    return records
