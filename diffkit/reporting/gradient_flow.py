"""Gradient flow experiment: per-layer gradient norms at initialization and the effect
of gradient clipping, as described by a TOML spec (``reports/gradients.toml``, marked
``experiment = "gradient_flow"``), run by ``diffkit report``:

    diffkit report reports/gradients.toml -o out/gradients
    python -m diffkit.reporting.gradient_flow reports/gradients.toml -o out/gradients --only clipping

Writes one PNG per ``[[figure]]`` (title on top, caption underneath), ``gradients.json``
(every measured number) and ``captions.md`` (file, title and caption of each figure).
"""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .. import data
from ..bench import cnn_flow
from ..bench.training import mean_norms, train_clipped
from ..core import DiffkitError
from .page import experiment_page
from .spec import read_toml

# --------------------------------------------------------------------------- figures


def grid(fig_spec: dict) -> tuple[str, list[str], str, list[str], dict[str, list[str]]]:
    """The panel and line variables and their values; the other variables have one value."""
    values = {"activation": fig_spec["activations"], "architecture": fig_spec["architectures"],
              "init": fig_spec["inits"]}
    p, ln = fig_spec["panels"], fig_spec["lines"]
    for k, v in values.items():
        if k not in (p, ln) and len(v) != 1:
            raise DiffkitError(f"figure {fig_spec['name']}: {k} is neither panels nor lines, "
                               f"so it must have one value, got {v}")
    return p, values[p], ln, values[ln], values


def setting(values: dict, p: str, pv: str, ln: str, lv: str) -> dict[str, str]:
    out = {k: v[0] for k, v in values.items()}
    out.update({p: pv, ln: lv})
    return out


def each_line(fig_spec: dict, ax_row: Any, curve: Callable[[dict[str, str]], tuple],
              **style: Any) -> dict:
    """One panel per panel value, one line per line value: ``curve(setting)`` gives
    ``(xs, ys, result)``, drawn on a log y axis; returns the results keyed ``panel/line``."""
    p, pvals, ln, lvals, values = grid(fig_spec)
    results = {}
    for ax, pv in zip(ax_row, pvals):
        for lv in lvals:
            xs, ys, results[f"{pv}/{lv}"] = curve(setting(values, p, pv, ln, lv))
            ax.semilogy(xs, ys, label=lv, **style)
        ax.set(title=f"{p}: {pv}")
    return results


def layer_profile(fig_spec: dict, setup: dict, X: np.ndarray, y: np.ndarray, ax_row: Any) -> dict:
    def curve(s: dict[str, str]) -> tuple:
        norms = mean_norms(setup, fig_spec["depth"], s["activation"], s["architecture"],
                           s["init"], X, y)
        return np.arange(1, len(norms) + 1), norms, norms.tolist()

    results = each_line(fig_spec, ax_row, curve)
    for ax in ax_row:
        ax.set(xlabel="Linear layer (1 = input side)", ylabel="‖∂L/∂W_l‖")
    return results


def cnn_profile(fig_spec: dict, setup: dict, X: np.ndarray, y: np.ndarray, ax_row: Any) -> dict:
    """The same profile for the convolutions of a CNN on generated images (bench.cnn_flow)."""
    images, labels = cnn_flow.bars(fig_spec["images"], seed=setup["seed"])
    cnn_setup = {**setup, "channels": fig_spec["channels"]}

    def curve(s: dict[str, str]) -> tuple:
        norms = cnn_flow.mean_conv_norms(cnn_setup, fig_spec["depth"], s["activation"],
                                         s["architecture"], images, labels)
        return np.arange(1, len(norms) + 1), norms, norms.tolist()

    results = each_line(fig_spec, ax_row, curve)
    for ax in ax_row:
        ax.set(xlabel="convolution (1 = input side)", ylabel="‖∂L/∂W_l‖")
    return results


def depth_sweep(fig_spec: dict, setup: dict, X: np.ndarray, y: np.ndarray, ax_row: Any) -> dict:
    depths = fig_spec["depths"]

    def curve(s: dict[str, str]) -> tuple:
        ratio = [float(n[0] / n[-1]) for n in (
            mean_norms(setup, d, s["activation"], s["architecture"], s["init"], X, y)
            for d in depths)]
        return depths, ratio, dict(zip(map(str, depths), ratio))

    results = each_line(fig_spec, ax_row, curve, marker="o")
    for ax in ax_row:
        ax.axhline(1.0, color="gray", lw=0.8, ls=":")
        ax.set(xlabel="hidden layers", ylabel="‖∂L/∂W_1‖ / ‖∂L/∂W_last‖")
    return results


def clipping(fig_spec: dict, setup: dict, X: np.ndarray, y: np.ndarray, ax_row: Any) -> dict:
    runs = [("no clipping", None, None)] if "none" in fig_spec["max_norms"] else []
    runs += [(f"clip_grad_norm_ {m:g}", m, None) for m in fig_spec["max_norms"] if m != "none"]
    runs += [(f"clip_grad_value_ {v:g}", None, v) for v in fig_spec.get("clip_values", [])]
    seeds = fig_spec.get("seeds", setup["seeds"])
    results: dict[str, list[dict]] = {}
    finite: list[list[dict]] = []
    for label, max_norm, clip_value in runs:
        per_seed = [train_clipped(fig_spec, setup, X, y, s, max_norm, clip_value)
                    for s in range(seeds)]
        results[label] = per_seed
        accs = [r["accuracy"] for r in per_seed]
        color = None
        for k, key in enumerate(("loss", "grad_norm")):
            curves = [np.array(r[key]) for r in per_seed]
            n = min(len(c) for c in curves)  # the median is drawn while every seed runs
            med = np.median(np.stack([c[:n] for c in curves]), axis=0)
            text = label + (f"  (accuracy {min(accs):.0%}–{max(accs):.0%})" if k == 0 else "")
            line = ax_row[k].semilogy(np.arange(n), med, lw=1.8, color=color, label=text)
            color = line[0].get_color()
            for c in curves:
                ax_row[k].semilogy(np.arange(len(c)), c, lw=0.6, alpha=0.35, color=color)
        stops = [r["overflow_at"] for r in per_seed if r["overflow_at"] is not None]
        if stops:
            ax_row[0].annotate(f"{len(stops)} of {seeds} seeds overflow (step {min(stops)}"
                               + (f"–{max(stops)})" if max(stops) > min(stops) else ")"),
                               (min(stops), 1.0), xycoords=("data", "axes fraction"),
                               xytext=(12, -12), textcoords="offset points", color=color,
                               fontsize=8, arrowprops={"arrowstyle": "->", "color": color})
        else:
            finite.append(per_seed)
    lo = min(min(r["loss"]) for runs in finite for r in runs) if finite else None
    hi = max(max(r["loss"]) for runs in finite for r in runs) if finite else None
    g_hi = max(max(r["grad_norm"]) for runs in finite for r in runs) if finite else None
    if finite:  # runs that overflow leave through the top
        ax_row[0].set_ylim(max(lo / 3, hi * 1e-8), hi * 10)
        ax_row[1].set_ylim(top=g_hi * 1e3)
    ax_row[0].set(title=f"training loss (median bold, {seeds} seeds thin)", xlabel="step",
                  ylabel="cross-entropy")
    ax_row[1].set(title="global gradient norm before clipping", xlabel="step", ylabel="‖∇L‖₂")
    ax_row[0].legend(fontsize=8, loc="lower left")
    ax_row[1].legend(fontsize=8, loc="lower left")
    return results


FIGURE_KINDS = {"layer_profile": layer_profile, "depth_sweep": depth_sweep, "clipping": clipping,
                "cnn_profile": cnn_profile}


def panel_count(fig_spec: dict) -> int:
    if fig_spec["kind"] == "clipping":
        return 2
    return len(fig_spec[{"activation": "activations", "architecture": "architectures",
                         "init": "inits"}[fig_spec["panels"]]])


def caption_text(fig_spec: dict, setup: dict) -> str:
    """The spec's caption on one line, ``{name}`` filled from the figure and setup keys."""
    return " ".join(fig_spec["caption"].split()).format(**{**setup, **fig_spec})


def make_figure(fig_spec: dict, setup: dict, X: np.ndarray, y: np.ndarray, out: Path) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = panel_count(fig_spec)
    width = max(8.0, 4.6 * n + 0.6)
    fig, axes = plt.subplots(1, n, figsize=(width, 4.8), squeeze=False)
    results = FIGURE_KINDS[fig_spec["kind"]](fig_spec, setup, X, y, axes[0])
    for ax in axes[0]:
        ax.grid(True, which="major", alpha=0.3)
        if ax.get_legend() is None:
            ax.legend(fontsize=8)
    fig.suptitle(fig_spec["title"], fontsize=12)
    caption = textwrap.fill(caption_text(fig_spec, setup), width=int(15 * width))
    lines = caption.count("\n") + 1
    fig.text(0.01, 0.01, caption, fontsize=8.5, va="bottom", ha="left")
    fig.tight_layout(rect=(0, 0.03 + 0.035 * lines, 1, 0.95))
    fig.savefig(out / f"{fig_spec['name']}.png", dpi=110)
    plt.close(fig)
    return results


def run(spec: dict[str, Any], out: Path, only: list[str] | None = None,
        log: Any = print) -> list[Path]:
    """Make the spec's figures in ``out`` (all, or those named in ``only``); returns them."""
    setup = spec["setup"]
    out.mkdir(parents=True, exist_ok=True)
    X, y = data.two_moons(setup["batch"], noise=setup["noise"], seed=setup["seed"])
    figures = [f for f in spec["figure"] if only is None or f["name"] in only]
    if only and len(figures) != len(only):
        names = [f["name"] for f in spec["figure"]]
        raise DiffkitError(f"unknown figure name(s) in {only}; the spec has {names}")
    results, md = {"setup": setup}, ["# Gradient flow figures\n"]
    for fig_spec in figures:
        t = time.perf_counter()
        results[fig_spec["name"]] = make_figure(fig_spec, setup, X, y, out)
        md.append(f"## {fig_spec['title']}\n\n![{fig_spec['name']}]({fig_spec['name']}.png)\n\n"
                  f"{caption_text(fig_spec, setup)}\n")
        log(f"{fig_spec['name']}.png  ({time.perf_counter() - t:.1f} s)")
    (out / "gradients.json").write_text(json.dumps(results, indent=1))
    (out / "captions.md").write_text("\n".join(md), encoding="utf-8")
    return [out / f"{f['name']}.png" for f in figures]


def findings(results: dict[str, Any]) -> list[str]:
    """The opening summary, from the measured numbers: per profile, how much smaller the
    input side's gradient is than the output side's; per clipping run, how it ended.

    >>> findings({"p": {"plain/sigmoid": [1e-6, 1e-3, 1.0]},
    ...           "c": {"no clipping": [{"overflow_at": 12, "accuracy": 0.5}]}})
    ["p, plain/sigmoid: the first layer's gradient norm is 1e-06× the last's.", 'c, no clipping: 1 of 1 seeds overflow; accuracy 50%.']
    """
    out = []
    for name, result in results.items():
        if not isinstance(result, dict):
            continue
        for line, v in result.items():
            if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
                out.append(f"{name}, {line}: the first layer's gradient norm is "
                           f"{v[0] / v[-1]:.2g}× the last's.")
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                over = sum(r["overflow_at"] is not None for r in v)
                accs = [r["accuracy"] for r in v]
                out.append(f"{name}, {line}: {over} of {len(v)} seeds overflow; accuracy "
                           + (f"{min(accs):.0%}" if min(accs) == max(accs) else
                              f"{min(accs):.0%}–{max(accs):.0%}") + ".")
    return out


def build(spec: dict[str, Any], out: Path, command: str = "") -> Path:
    """Every figure of the spec, quietly, as ``diffkit report`` runs it, with its page;
    returns ``index.html``."""
    run(spec, out, log=lambda line: None)
    results = json.loads((out / "gradients.json").read_text())
    figures = [{"name": f["name"], "title": f["title"], "caption": caption_text(f, spec["setup"])}
               for f in spec["figure"]]
    (out / "index.html").write_text(experiment_page(
        spec.get("title", "Gradient flow"), findings(results), figures, out, "gradients.json",
        command))
    return out / "index.html"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", help="the experiment's TOML spec, e.g. reports/gradients.toml")
    ap.add_argument("-o", "--out", required=True, help="folder for the figures")
    ap.add_argument("--only", nargs="*", default=None, help="figure names to make")
    args = ap.parse_args(argv)
    spec = read_toml(args.spec)
    made = run(spec, Path(args.out), args.only)
    print(f"wrote {len(made)} figure(s), gradients.json and captions.md to {args.out}")


if __name__ == "__main__":
    main()
