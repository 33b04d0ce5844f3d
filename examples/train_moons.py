"""Train a 2-32-32-2 tanh MLP on two moons with diffkit's reverse tape.

    python examples/train_moons.py                          # Adam, full batch, 300 epochs
    python examples/train_moons.py --optimizer sgd --epochs 200 --plot out/moons.png
    python examples/train_moons.py --style functional --batch-size 200 --accumulate 4

Two ways to get gradients, the same numbers:

* ``--style tensor`` (PyTorch): ``loss.backward()`` adds into every parameter's
  ``.grad``; ``opt.step()`` reads it; ``opt.zero_grad()`` resets it.
* ``--style functional`` (JAX): ``dk.value_and_grad`` of the loss as a function of the
  parameter dict returns the gradients; ``opt.step(grads)`` takes them; ``.grad`` is
  never used.

``--accumulate k`` splits every batch into k micro-batches and makes one update from
their summed gradients (each micro-batch loss weighted by its share of the batch), the
way a batch too large for memory is handled: tensor style lets ``.grad`` accumulate
across k ``backward()`` calls; functional style sums the returned dicts. The script
ends by checking that both give the full-batch update.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # before numpy loads: for these small matrices one BLAS thread
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # is fastest
        os.environ.setdefault(_var, "1")  # and keeps timings steady (override by env)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too
import diffkit as dk  # noqa: E402
from diffkit import data, nn, optim  # noqa: E402

DEFAULT_LR = {"sgd": 0.5, "adam": 0.02, "rmsprop": 0.003}


def make_optimizer(name: str, model: nn.Module, lr: float | None) -> optim.Optimizer:
    lr = DEFAULT_LR[name] if lr is None else lr
    params = model.named_parameters()  # named: step() also takes a dict of gradients
    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9)
    return optim.Adam(params, lr=lr) if name == "adam" else optim.RMSprop(params, lr=lr)


def micro_batches(batch: np.ndarray, k: int) -> list[tuple[np.ndarray, float]]:
    """``k`` index arrays and the weight (share of the batch) of each one's mean loss."""
    return [(idx, len(idx) / len(batch)) for idx in np.array_split(batch, k) if len(idx)]


def tensor_update(model: nn.Module, opt: optim.Optimizer, X: np.ndarray, y: np.ndarray,
                  batch: np.ndarray, k: int) -> float:
    """One update, PyTorch style: .grad accumulates over the k micro-batches."""
    opt.zero_grad()
    total = 0.0
    for idx, weight in micro_batches(batch, k):
        loss = nn.cross_entropy(model(X[idx]), y[idx]) * weight
        loss.backward()  # adds weight * d(loss_i)/dθ into every .grad
        total += loss.item()
    opt.step()
    return total


def functional_update(model: nn.Module, opt: optim.Optimizer, X: np.ndarray, y: np.ndarray,
                      batch: np.ndarray, k: int) -> float:
    """One update, JAX style: gradients are returned dicts, summed explicitly."""
    vg = dk.value_and_grad(lambda p, Xb, yb: nn.cross_entropy(nn.functional_call(model, p, Xb), yb))
    params = model.parameters_dict()  # the live arrays; opt.step writes into them
    total_loss, total = 0.0, None
    for idx, weight in micro_batches(batch, k):
        loss, g = vg(params, X[idx], y[idx])  # a dict like params; .grad is not touched
        total_loss += weight * float(loss)
        g = {name: weight * v for name, v in g.items()}
        total = g if total is None else {name: total[name] + g[name] for name in g}
    opt.step(total)
    return total_loss


def accuracy(model: nn.Module, X: np.ndarray, y: np.ndarray) -> float:
    with dk.no_grad():
        return float(np.mean(model(X).numpy().argmax(axis=1) == y))


def progress(epochs: int) -> tuple[Callable[[int, float], None], Callable[[], None]]:
    """(advance(epoch, loss), close()) with rich's bar when installed, plain lines otherwise."""
    try:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
    except ImportError:
        every = max(1, epochs // 10)

        def plain(epoch: int, loss: float) -> None:
            if (epoch + 1) % every == 0 or epoch == 0:
                print(f"epoch {epoch + 1:5d}/{epochs}  loss {loss:.5f}", flush=True)
        return plain, lambda: None
    bar = Progress(TextColumn("training"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TextColumn("loss {task.fields[loss]:.5f}"), TimeRemainingColumn())
    task = bar.add_task("train", total=epochs, loss=float("nan"))
    bar.start()
    return lambda epoch, loss: bar.update(task, advance=1, loss=loss), bar.stop


def median_ms(fns: list[Callable[[], object]], repeat: int = 50) -> list[float]:
    """Median milliseconds per call of each function, calls interleaved after a warm-up."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, s in zip(fns, samples):
            t = time.perf_counter()
            fn()
            s.append(time.perf_counter() - t)
    return [1e3 * statistics.median(s) for s in samples]


def check_accumulation(X: np.ndarray, y: np.ndarray, optimizer: str, k: int = 4) -> None:
    """One update from the same start: full batch vs k micro-batches, both styles."""
    batch, results = np.arange(len(X)), {}
    for label, update, kk in [("full batch", tensor_update, 1), ("tensor", tensor_update, k),
                              ("functional", functional_update, k)]:
        model = nn.mlp([2, 32, 32, 2], nn.Tanh, rng=0)
        update(model, make_optimizer(optimizer, model, None), X, y, batch, kk)
        results[label] = np.concatenate([p.data.ravel() for p in model.parameters()])
    for label in ("tensor", "functional"):
        diff = np.abs(results[label] - results["full batch"]).max()
        print(f"  {label:10s} style, {k} micro-batches vs full batch: max |Δθ| = {diff:.1e}")


def plot(path: str, model: nn.Module, X: np.ndarray, y: np.ndarray, losses: list[float],
         title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    ax1.semilogy(np.arange(1, len(losses) + 1), losses)
    ax1.set(xlabel="epoch", ylabel="cross-entropy (training)", title="loss curve")
    ax1.grid(True, which="both", alpha=0.3)
    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 200))
    with dk.no_grad():
        logits = model(np.column_stack([gx.ravel(), gy.ravel()])).numpy()
    p1 = np.exp(logits[:, 1] - np.logaddexp(logits[:, 0], logits[:, 1])).reshape(gx.shape)
    ax2.contourf(gx, gy, p1, levels=20, cmap="RdBu_r", alpha=0.6)
    ax2.contour(gx, gy, p1, levels=[0.5], colors="k", linewidths=1.5)
    ax2.scatter(X[:, 0], X[:, 1], c=y, cmap="RdBu_r", s=8, edgecolors="k", linewidths=0.2)
    ax2.set(title="decision boundary (black: p = 0.5)", xlabel="x₁", ylabel="x₂")
    fig.suptitle(title)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--optimizer", choices=["sgd", "adam", "rmsprop"], default="adam")
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--lr", type=float, default=None, help="default: sgd 0.5, adam 0.02, rmsprop 0.003")
    ap.add_argument("--style", choices=["tensor", "functional"], default="tensor")
    ap.add_argument("--batch-size", type=int, default=None, help="default: the full batch")
    ap.add_argument("--accumulate", type=int, default=1, help="micro-batches per update")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--noise", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", metavar="OUT.png", default=None)
    args = ap.parse_args(argv)

    X, y = data.two_moons(args.n, noise=args.noise, seed=args.seed)
    model = nn.mlp([2, 32, 32, 2], nn.Tanh, rng=args.seed)
    opt = make_optimizer(args.optimizer, model, args.lr)
    update = tensor_update if args.style == "tensor" else functional_update
    bs = args.batch_size or args.n
    print(f"{model}\n{model.num_parameters()} parameters; {args.n} points; {opt}; "
          f"{args.style} style, batch {bs}, {args.accumulate} micro-batch(es) per update")

    losses: list[float] = []
    advance, close = progress(args.epochs)
    start = time.perf_counter()
    try:
        for epoch in range(args.epochs):
            order = np.random.default_rng((args.seed, epoch)).permutation(args.n) if bs < args.n \
                else np.arange(args.n)
            epoch_loss = 0.0
            for i in range(0, args.n, bs):
                batch = order[i:i + bs]
                epoch_loss += update(model, opt, X, y, batch, args.accumulate) * len(batch) / args.n
            losses.append(epoch_loss)
            advance(epoch, epoch_loss)
    finally:
        close()
    elapsed = time.perf_counter() - start

    marks = sorted({0, args.epochs // 10, args.epochs // 4, args.epochs // 2, args.epochs - 1})
    print("loss curve: " + ", ".join(f"epoch {m + 1}: {losses[m]:.4f}" for m in marks))
    print(f"min loss {min(losses):.5f} at epoch {int(np.argmin(losses)) + 1}; "
          f"training accuracy {accuracy(model, X, y):.1%}; {elapsed:.2f} s in all "
          f"({1e3 * elapsed / args.epochs:.2f} ms per epoch, with bookkeeping)")

    def forward_alone() -> object:
        with dk.no_grad():
            return nn.cross_entropy(model(X), y)

    fwd, rec, step = median_ms([forward_alone, lambda: nn.cross_entropy(model(X), y),
                                lambda: tensor_update(model, opt, X, y, np.arange(args.n), 1)])
    print(f"timing, full batch of {args.n} points (median of 50, interleaved; BLAS threads: "
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}): forward + loss {fwd:.2f} ms "
          f"({rec:.2f} ms while recording the tape); training step (forward, backward, "
          f"{args.optimizer} update) {step:.2f} ms = {step / fwd:.1f} x the forward pass")

    print("gradient accumulation check (one update from the same start):")
    check_accumulation(X, y, args.optimizer)
    if args.plot:
        plot(args.plot, model, X, y, losses,
             f"2-32-32-2 tanh MLP, {args.optimizer}, {args.style} style: "
             f"{accuracy(model, X, y):.1%} training accuracy")
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
