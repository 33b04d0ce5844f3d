"""One model, three API families: the two-moons MLP trained each way, the same numbers.

    python examples/three_families.py                  # 50 steps, 4 micro-batches each
    python examples/three_families.py --steps 200 --micro-batches 8

Every step takes a batch, splits it into k micro-batches and makes one SGD update from
their summed gradients (each micro-batch loss divided by k). Where the gradient lives
decides what accumulation looks like:

* **tensor-centred** (PyTorch, PaddlePaddle, OneFlow, MegEngine): ``loss.backward()``
  adds into every parameter's ``.grad``; k ``backward()`` calls *are* the accumulation,
  then ``opt.step()`` reads ``.grad`` and ``opt.zero_grad()`` (``clear_grad()``) resets it.
* **functional** (JAX, MindSpore): ``dk.value_and_grad(forward_fn, None, weights=params,
  has_aux=True)`` returns the gradients as a tuple in ``params`` order and stores
  nothing, so the sum needs a place of its own: ``optim.Accumulator``.
* **tape-scoped** (TensorFlow's ``GradientTape``, MXNet's ``autograd.record``): only the
  block ``with dk.record() as tape:`` is recorded; ``tape.gradient(loss, params)``
  returns a list, and you keep the running sum yourself.

Same data, same initialization, same optimizer: the script prints the losses and how far
the final parameters of the three are apart (0 up to rounding, below 1e-12), then trains
all three again after ``dk.set_mode("graph")``, unchanged: the functional family's
gradient function becomes one compiled program (the micro-batch its arguments), and in
the other two the model becomes one compiled operation on the tape (``torch.compile``,
``hybridize``). The table gives time per step, the first step (which traces and compiles)
and how many programs were compiled; last, what a print and a branch on a value inside
the model do in each mode.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

if __name__ == "__main__":  # before numpy loads: one BLAS thread keeps timings steady
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too
import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit import data, nn, optim  # noqa: E402
from diffkit.nn.graph_mode import graph_call  # noqa: E402

Parts = list[tuple[np.ndarray, np.ndarray]]
Step = Callable[[Parts], float]


def tensor_family(model: nn.Module, opt: optim.Optimizer) -> Step:
    """PyTorch's loop: gradients accumulate in ``.grad`` across backward() calls."""
    def step(parts: Parts) -> float:
        opt.zero_grad()
        total = 0.0
        for Xb, yb in parts:
            loss = nn.cross_entropy(model(Xb), yb) / len(parts)
            loss.backward()                     # adds into every parameter's .grad
            total += loss.item()
        opt.step()                              # reads .grad
        return total
    return step


def functional_family(model: nn.Module, opt: optim.Optimizer) -> Step:
    """MindSpore's loop: a gradient function of the forward function, an Accumulator."""
    def forward_fn(Xb: np.ndarray, yb: np.ndarray, k: int) -> tuple:
        logits = model(Xb)
        return nn.cross_entropy(logits, yb) / k, logits

    grad_fn = dk.value_and_grad(forward_fn, None, weights=model.trainable_params(),
                                has_aux=True)
    acc = optim.Accumulator()

    def step(parts: Parts) -> float:
        total = 0.0
        for Xb, yb in parts:
            (loss, _), grads = grad_fn(Xb, yb, len(parts))  # a tuple; .grad is untouched
            acc.add(grads)
            total += float(loss)
        opt.step(acc.value)
        acc.reset()
        return total
    step.grad_fn = grad_fn  # type: ignore[attr-defined]  (for the table's program count)
    return step


def tape_family(model: nn.Module, opt: optim.Optimizer) -> Step:
    """TensorFlow's loop: record a block, ask the tape, sum the returned gradients."""
    params = model.trainable_params()

    def step(parts: Parts) -> float:
        total, summed = 0.0, None
        for Xb, yb in parts:
            with dk.record() as tape:           # nothing outside the block is recorded
                loss = nn.cross_entropy(model(Xb), yb) / len(parts)
            grads = tape.gradient(loss, params)  # a list; .grad is untouched
            summed = grads if summed is None else [s + g for s, g in zip(summed, grads)]
            total += loss.item()                # the number, after its block
        opt.step(summed)
        return total
    return step


FAMILIES = {"tensor-centred": tensor_family, "functional": functional_family,
            "tape-scoped": tape_family}
WHERE = {"tensor-centred": ("param.grad (adds up)", "k backward(), one step"),
         "functional": ("returned tuple", "optim.Accumulator"),
         "tape-scoped": ("returned by tape.gradient", "a list you sum")}


def plan(n: int, steps: int, batch: int, k: int, seed: int = 0) -> list[list[np.ndarray]]:
    """For each step, the index arrays of its k micro-batches (a fresh batch per step)."""
    return [np.array_split(np.random.default_rng((seed, s)).choice(n, batch, replace=False), k)
            for s in range(steps)]


class Run(NamedTuple):
    """One family trained in one mode: its losses, final parameters and costs."""

    losses: list[float]
    params: list[np.ndarray]
    step_s: float       # median seconds per step, the first step left out
    first_s: float      # the first step (in graph mode: tracing and compiling included)
    programs: int       # compiled programs built (cache misses; 0 in eager mode)
    compile_s: float    # seconds spent tracing, optimizing and compiling them (one-off)


def train(family: str, X: np.ndarray, y: np.ndarray, steps: list[list[np.ndarray]],
          lr: float = 0.5, seed: int = 0) -> Run:
    """Train ``family`` from the initialization given by ``seed``, in the current mode."""
    model = nn.mlp([2, 32, 32, 2], nn.Tanh, rng=seed)
    opt = optim.SGD(model.trainable_params(), lr=lr, momentum=0.9)
    step = FAMILIES[family](model, opt)
    losses, times = [], []
    for parts in steps:
        start = time.perf_counter()
        losses.append(step([(X[idx], y[idx]) for idx in parts]))
        times.append(time.perf_counter() - start)
    # the compiled programs: the gradient function's (functional), else the model's
    programs = getattr(step, "grad_fn", None)
    programs = programs if hasattr(programs, "cache_info") else graph_call(model)
    return Run(losses, [p.data.copy() for p in model.parameters()],
               float(np.median(times[1:] or times)), times[0],
               programs.cache_info().misses, programs.setup_s())


def cannot(mode: str) -> list[str]:
    """What a print and a branch on a value inside a model's forward do in ``mode``."""
    class Printing(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = dk.tensor([2.0], requires_grad=True)

        def forward(self, x):  # noqa: ANN001, ANN201
            h = self.w * x
            print(f"    print(h) inside forward shows {h!r}")
            return h if dnp.sum(h) > 0 else -h  # a branch on a value

    lines = []
    dk.set_mode(mode)
    try:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            try:
                (Printing()(np.array([1.5])) ** 2).sum().backward()
                lines.append("    the branch on a value ran")
            except dk.DiffkitError as exc:
                lines.append(f"    the branch on a value: {type(exc).__name__}: {exc}")
        return buf.getvalue().splitlines() + lines
    finally:
        dk.set_mode("eager")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    X, y = data.two_moons(args.n, noise=0.1, seed=args.seed)
    steps = plan(args.n, args.steps, args.batch, args.micro_batches, args.seed)
    runs: dict[tuple[str, str], Run] = {}
    for mode in ("eager", "graph"):
        dk.set_mode(mode)
        try:
            runs.update({(mode, name): train(name, X, y, steps, seed=args.seed)
                         for name in FAMILIES})
        finally:
            dk.set_mode("eager")
    print(f"2-32-32-2 tanh MLP, SGD(lr=0.5, momentum=0.9), {args.steps} steps of "
          f"{args.batch} points in {args.micro_batches} micro-batches\n")
    print(f"{'family':15s} {'where the gradient lives':26s} accumulation")
    for name in FAMILIES:
        print(f"{name:15s} {WHERE[name][0]:26s} {WHERE[name][1]}")
    marks = sorted({0, args.steps // 2, args.steps - 1})
    head = "".join(f"  loss@{m + 1:<5d}" for m in marks)
    print(f"\n{'mode':6s} {'family':15s}{head}  ms/step  1st step ms  programs"
          "  compile ms  max|Δθ| vs eager tensor")
    ref = runs["eager", "tensor-centred"].params
    for (mode, name), r in runs.items():
        diff = max(float(np.abs(p - q).max()) for p, q in zip(r.params, ref))
        cells = "".join(f"  {r.losses[m]:<11.6f}" for m in marks)
        print(f"{mode:6s} {name:15s}{cells}  {1e3 * r.step_s:7.2f}  {1e3 * r.first_s:11.1f}"
              f"  {r.programs:8d}  {1e3 * r.compile_s:10.1f}  {diff:.1e}")
    for mode in ("eager", "graph"):
        print(f"\na model that prints and branches on a value, {mode} mode:")
        print("\n".join(cannot(mode)))


if __name__ == "__main__":
    main()
