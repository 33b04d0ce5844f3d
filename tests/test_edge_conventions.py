"""diffkit's conventions at the edges, beside JAX's and PyTorch's: docs/edge-cases.md,
"Beside JAX and PyTorch".

That table is the specification: for each case it gives f's value and the derivative that
diffkit, JAX and PyTorch return (``grad``, i.e. reverse mode, unless the case says forward
mode). This file parses it and checks the value and the diffkit cell against diffkit
always, and the JAX and PyTorch cells against those libraries where they are installed
(the tests marked ``jax`` and ``torch``), so the page cannot drift from any of the three.
Cells are numbers to six digits, lists per argument or entry, or ``error`` (the call
raises, as numpy does for the maximum of nothing).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
import diffkit.scipy.special as dsp

DOC = Path(__file__).resolve().parent.parent / "docs" / "edge-cases.md"
SECTION = "## Beside JAX and PyTorch"
NINF = -np.inf


class Case:
    """One row: f in each library (``xp`` is the namespace: diffkit.numpy, jax.numpy,
    torch), its arguments, and the mode (``grad``: reverse; ``jacfwd``: forward)."""

    def __init__(self, what: str, dk_f: Callable, jax_f: Callable | None,
                 torch_f: Callable | None, *args: Any, mode: str = "grad") -> None:
        self.what, self.dk_f, self.jax_f, self.torch_f = what, dk_f, jax_f, torch_f
        self.args, self.mode = args, mode


def _jsp() -> Any:
    import jax.scipy.special as jsp  # (deferred: a peer library, marked tests only)
    return jsp


CASES: dict[str, Case] = {
    # zero variance
    "std_of_one_element": Case("`std(x)` at `[2]`", dnp.std, lambda x: _jnp().std(x),
                               lambda x: _torch().std(x, correction=0), [2.0]),
    "std_of_equal_entries": Case("`std(x)` at `[2, 2, 2]`", dnp.std, lambda x: _jnp().std(x),
                                 lambda x: _torch().std(x, correction=0), [2.0, 2.0, 2.0]),
    "var_of_one_element": Case("`var(x)` at `[2]`", dnp.var, lambda x: _jnp().var(x),
                               lambda x: _torch().var(x, correction=0), [2.0]),
    "std_ddof_1_of_one_element": Case("`std(x, ddof=1)` at `[2]`", lambda x: dnp.std(x, ddof=1),
                                      lambda x: _jnp().std(x, ddof=1),
                                      lambda x: _torch().std(x, correction=1), [2.0]),
    # logsumexp and empty reductions
    "logsumexp_of_empty": Case("`logsumexp(x)` at `[]`", dsp.logsumexp,
                               lambda x: _jsp().logsumexp(x), lambda x: _torch().logsumexp(x, 0), []),
    "logsumexp_all_minus_inf": Case("`logsumexp(x)` at `[-inf, -inf]`", dsp.logsumexp,
                                    lambda x: _jsp().logsumexp(x),
                                    lambda x: _torch().logsumexp(x, 0), [NINF, NINF]),
    "logsumexp_one_minus_inf": Case("`logsumexp(x)` at `[-inf, 0]`", dsp.logsumexp,
                                    lambda x: _jsp().logsumexp(x),
                                    lambda x: _torch().logsumexp(x, 0), [NINF, 0.0]),
    "log_softmax_with_minus_inf": Case("`log_softmax(x)[1]` at `[-inf, 0]`",
                                       lambda x: dsp.log_softmax(x)[1],
                                       lambda x: _jax().nn.log_softmax(x)[1],
                                       lambda x: _torch().log_softmax(x, 0)[1], [NINF, 0.0]),
    "logaddexp_both_minus_inf": Case("`logaddexp(x, y)` at `(-inf, -inf)`", dnp.logaddexp,
                                     lambda x, y: _jnp().logaddexp(x, y),
                                     lambda x, y: _torch().logaddexp(x, y), NINF, NINF),
    "sum_of_empty": Case("`sum(x)` at `[]`", dnp.sum, lambda x: _jnp().sum(x),
                         lambda x: _torch().sum(x), []),
    "mean_of_empty": Case("`mean(x)` at `[]`", dnp.mean, lambda x: _jnp().mean(x),
                          lambda x: _torch().mean(x), []),
    "prod_of_empty": Case("`prod(x)` at `[]`", dnp.prod, lambda x: _jnp().prod(x),
                          lambda x: _torch().prod(x), []),
    "max_of_empty": Case("`max(x)` at `[]`", dnp.max, lambda x: _jnp().max(x),
                         lambda x: _torch().max(x), []),
    "min_of_empty": Case("`min(x)` at `[]`", dnp.min, lambda x: _jnp().min(x),
                         lambda x: _torch().min(x), []),
    # kinks and ties
    "abs_at_0": Case("`abs(x)` at `0`", dnp.abs, lambda x: _jnp().abs(x),
                     lambda x: _torch().abs(x), 0.0),
    "relu_at_0": Case("`relu(x)` at `0`", dnp.relu, lambda x: _jax().nn.relu(x),
                      lambda x: _torch().relu(x), 0.0),
    "maximum_tie": Case("`maximum(x, y)` at `(1, 1)`", dnp.maximum,
                        lambda x, y: _jnp().maximum(x, y), lambda x, y: _torch().maximum(x, y),
                        1.0, 1.0),
    "fmax_tie": Case("`fmax(x, y)` at `(1, 1)`", dnp.fmax, lambda x, y: _jnp().fmax(x, y),
                     lambda x, y: _torch().fmax(x, y), 1.0, 1.0),
    "maximum_with_nan": Case("`maximum(x, y)` at `(nan, 1)`", dnp.maximum,
                             lambda x, y: _jnp().maximum(x, y),
                             lambda x, y: _torch().maximum(x, y), np.nan, 1.0),
    "max_reduction_tie": Case("`max(x)` at `[1, 1, 0]`", dnp.max, lambda x: _jnp().max(x),
                              lambda x: _torch().max(x), [1.0, 1.0, 0.0]),
    "max_along_an_axis_tie": Case("`max(x, axis=0)` at `[1, 1, 0]`", lambda x: dnp.max(x, axis=0),
                                  lambda x: _jnp().max(x, axis=0),
                                  lambda x: _torch().max(x, dim=0).values, [1.0, 1.0, 0.0]),
    "min_reduction_tie": Case("`min(x)` at `[1, 1, 3]`", dnp.min, lambda x: _jnp().min(x),
                              lambda x: _torch().min(x), [1.0, 1.0, 3.0]),
    "median_tie": Case("`median(x)` at `[1, 2, 2, 3]`", dnp.median, lambda x: _jnp().median(x),
                       lambda x: _torch().quantile(x, 0.5), [1.0, 2.0, 2.0, 3.0]),
    "sort_tie": Case("`sum(sort(x) * [1, 2, 3])` at `[2, 1, 2]`",
                     lambda x: dnp.sum(dnp.sort(x) * np.array([1.0, 2.0, 3.0])),
                     lambda x: _jnp().sum(_jnp().sort(x) * _jnp().array([1.0, 2.0, 3.0])),
                     lambda x: _torch().sum(_torch().sort(x).values
                                            * _torch().tensor([1.0, 2.0, 3.0], dtype=_f64())),
                     [2.0, 1.0, 2.0]),
    "argmax_index_tie": Case("`x[argmax(x)]` at `[1, 1, 0]`", lambda x: x[dnp.argmax(x)],
                             lambda x: x[_jnp().argmax(x)], lambda x: x[_torch().argmax(x)],
                             [1.0, 1.0, 0.0]),
    "clip_at_upper_bound": Case("`clip(x, -1, 1)` at `1`", lambda x: dnp.clip(x, -1.0, 1.0),
                                lambda x: _jnp().clip(x, -1.0, 1.0),
                                lambda x: _torch().clamp(x, -1.0, 1.0), 1.0),
    "clip_at_lower_bound": Case("`clip(x, -1, 1)` at `-1`", lambda x: dnp.clip(x, -1.0, 1.0),
                                lambda x: _jnp().clip(x, -1.0, 1.0),
                                lambda x: _torch().clamp(x, -1.0, 1.0), -1.0),
    "sign_at_0": Case("`sign(x)` at `0`", dnp.sign, lambda x: _jnp().sign(x),
                      lambda x: _torch().sign(x), 0.0),
    "floor": Case("`floor(x)` at `1.5`", dnp.floor, lambda x: _jnp().floor(x),
                  lambda x: _torch().floor(x), 1.5),
    # roots, norms and angles at 0
    "sqrt_at_0": Case("`sqrt(x)` at `0`", dnp.sqrt, lambda x: _jnp().sqrt(x),
                      lambda x: _torch().sqrt(x), 0.0),
    "cbrt_at_0": Case("`cbrt(x)` at `0`", dnp.cbrt, lambda x: _jnp().cbrt(x), None, 0.0),
    "norm_at_0": Case("`linalg.norm(x)` at `[0, 0]`", dnp.linalg.norm,
                      lambda x: _jnp().linalg.norm(x), lambda x: _torch().linalg.norm(x),
                      [0.0, 0.0]),
    "sqrt_of_sum_of_squares_at_0": Case("`sqrt(sum(x * x))` at `[0, 0]`",
                                        lambda x: dnp.sqrt(dnp.sum(x * x)),
                                        lambda x: _jnp().sqrt(_jnp().sum(x * x)),
                                        lambda x: _torch().sqrt(_torch().sum(x * x)), [0.0, 0.0]),
    "hypot_at_0": Case("`hypot(x, y)` at `(0, 0)`", dnp.hypot, lambda x, y: _jnp().hypot(x, y),
                       lambda x, y: _torch().hypot(x, y), 0.0, 0.0),
    "arctan2_at_origin": Case("`arctan2(y, x)` at `(0, 0)`", dnp.arctan2,
                              lambda y, x: _jnp().arctan2(y, x),
                              lambda y, x: _torch().atan2(y, x), 0.0, 0.0),
    "sinc_at_0": Case("`sinc(x)` at `0`", dnp.sinc, lambda x: _jnp().sinc(x),
                      lambda x: _torch().sinc(x), 0.0),
    "log_at_0": Case("`log(x)` at `0`", dnp.log, lambda x: _jnp().log(x),
                     lambda x: _torch().log(x), 0.0),
    # 0 / 0, powers, xlogy
    "x_over_x_at_0": Case("`x / x` at `0`", lambda x: x / x, lambda x: x / x, lambda x: x / x, 0.0),
    "quotient_at_origin": Case("`x / y` at `(0, 0)`", lambda x, y: x / y, lambda x, y: x / y,
                               lambda x, y: x / y, 0.0, 0.0),
    "quotient_at_origin_forward": Case("`x / y` at `(0, 0)`, forward mode", lambda x, y: x / y,
                                       lambda x, y: x / y, lambda x, y: x / y, 0.0, 0.0,
                                       mode="jacfwd"),
    "float_zeroth_power_at_0": Case("`x ** 0.0` at `0`", lambda x: x ** 0.0, lambda x: x ** 0.0,
                                    lambda x: x ** 0.0, 0.0),
    "power_at_0": Case("`x ** y` at `(0, 2)`", lambda x, y: x ** y, lambda x, y: x ** y,
                       lambda x, y: x ** y, 0.0, 2.0),
    "xlogy_at_origin": Case("`xlogy(x, y)` at `(0, 0)`", dsp.xlogy,
                            lambda x, y: _jsp().xlogy(x, y), lambda x, y: _torch().xlogy(x, y),
                            0.0, 0.0),
    # where
    "where_nan_branch": Case("`where(x > 0, sqrt(x), 0)` at `-1`",
                             lambda x: dnp.where(x > 0, dnp.sqrt(x), 0.0),
                             lambda x: _jnp().where(x > 0, _jnp().sqrt(x), 0.0),
                             lambda x: _torch().where(x > 0, _torch().sqrt(x), 0.0), -1.0),
    "where_nan_branch_forward": Case("`where(x > 0, sqrt(x), 0)` at `-1`, forward mode",
                                     lambda x: dnp.where(x > 0, dnp.sqrt(x), 0.0),
                                     lambda x: _jnp().where(x > 0, _jnp().sqrt(x), 0.0),
                                     lambda x: _torch().where(x > 0, _torch().sqrt(x), 0.0), -1.0,
                                     mode="jacfwd"),
    # products with zeros
    "prod_with_a_zero": Case("`prod(x)` at `[2, 0, 3]`", dnp.prod, lambda x: _jnp().prod(x),
                             lambda x: _torch().prod(x), [2.0, 0.0, 3.0]),
    "cumprod_with_a_zero": Case("`sum(cumprod(x))` at `[2, 0, 3]`",
                                lambda x: dnp.sum(dnp.cumprod(x)),
                                lambda x: _jnp().sum(_jnp().cumprod(x)),
                                lambda x: _torch().sum(_torch().cumprod(x, 0)), [2.0, 0.0, 3.0]),
    # inputs
    "integer_input": Case("`2.0 * x` at the int `3`", lambda x: 2.0 * x, lambda x: 2.0 * x,
                          lambda x: 2.0 * x, 3),
}


# ----------------------------------------------------------------------------- the libraries


def _jax() -> Any:
    import jax  # (deferred: a peer library, marked tests only)
    jax.config.update("jax_enable_x64", True)
    return jax


def _jnp() -> Any:
    _jax()
    import jax.numpy as jnp  # (deferred: a peer library, marked tests only)
    return jnp


def _torch() -> Any:
    import torch  # (deferred: a peer library, marked tests only)
    return torch


def _f64() -> Any:
    return _torch().float64


def _arrays(args: tuple, convert: Callable[[Any], Any]) -> list[Any]:
    """Lists become float arrays; numbers stay (an int stays an int: the integer case)."""
    return [convert(np.array(a, dtype=float)) if isinstance(a, list) else a for a in args]


def fmt(v: Any) -> str:
    v = np.asarray(v, dtype=float)
    if v.ndim:
        return "[" + ", ".join(fmt(e) for e in v) + "]"
    return f"{float(v):.6g}"


def _grads(g: Any, n: int) -> str:
    return fmt(g) if n == 1 else "[" + ", ".join(fmt(gi) for gi in g) + "]"


def observe_diffkit(case: Case) -> tuple[str, str]:
    """(value, derivative) as the table writes them."""
    args = [np.float64(a) if isinstance(a, float) else a for a in _arrays(case.args, lambda a: a)]
    nums = 0 if len(args) == 1 else tuple(range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = fmt(case.dk_f(*args))
        except Exception:  # noqa: BLE001  (the cell says error)
            return "error", "error"
        try:
            if case.mode == "jacfwd":
                g = dk.jacfwd(case.dk_f, argnums=nums)(*args)
            else:
                g = dk.grad(case.dk_f, argnums=nums)(*args)
        except Exception:  # noqa: BLE001
            return value, "error"
    return value, _grads(g, len(args))


def observe_jax(case: Case) -> str:
    jax, jnp = _jax(), _jnp()
    args = _arrays(case.args, jnp.asarray)
    args = [jnp.asarray(a) if isinstance(a, (int, float)) else a for a in args]
    nums = 0 if len(args) == 1 else tuple(range(len(args)))
    try:
        transform = jax.jacfwd if case.mode == "jacfwd" else jax.grad
        g = transform(case.jax_f, argnums=nums)(*args)
    except Exception:  # noqa: BLE001
        return "error"
    return _grads(g if len(args) == 1 else [np.asarray(gi) for gi in g], len(args))


def observe_torch(case: Case) -> str:
    torch = _torch()
    try:
        args = [torch.tensor(a, dtype=_f64() if isinstance(a, (float, list)) else None,
                             requires_grad=True) for a in case.args]
        if case.mode == "jacfwd":
            from torch.func import jacfwd  # (deferred: a peer library)
            nums = 0 if len(args) == 1 else tuple(range(len(args)))
            g = jacfwd(case.torch_f, argnums=nums)(*[a.detach() for a in args])
            g = g if len(args) == 1 else [gi.numpy() for gi in g]
        else:
            y = case.torch_f(*args)
            g = torch.autograd.grad(y, args)
            g = g[0].numpy() if len(args) == 1 else [gi.numpy() for gi in g]
    except Exception:  # noqa: BLE001
        return "error"
    return _grads(np.asarray(g) if len(args) == 1 else g, len(args))


# ----------------------------------------------------------------------------- the doc's table


def parse_doc() -> dict[str, dict[str, str]]:
    """id -> {what, value, diffkit, jax, torch, note}, from the section's table only."""
    text = DOC.read_text()
    if SECTION not in text:
        return {}
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`([a-z0-9_]+)`\s*\|(.*)\|\s*$", line)
        if not m:
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
        assert len(cells) == 6, line
        rows[m.group(1)] = dict(zip(("what", "value", "diffkit", "jax", "torch", "note"), cells))
    return rows


def same(documented: str, observed: str) -> bool:
    """The same numbers (nan equals nan, -0 equals 0, 6 digits), or both errors."""
    if documented == "error" or observed == "error":
        return documented == observed
    d = [float(t) for t in re.findall(r"-?inf|nan|-?[0-9.]+(?:e[-+]?[0-9]+)?", documented)]
    o = [float(t) for t in re.findall(r"-?inf|nan|-?[0-9.]+(?:e[-+]?[0-9]+)?", observed)]
    return documented.count("[") == observed.count("[") and len(d) == len(o) and all(
        (np.isnan(a) and np.isnan(b)) or a == b or abs(a - b) <= 1e-5 * abs(a) for a, b in zip(d, o))


DOCUMENTED = parse_doc() if DOC.exists() else {}


def test_the_doc_lists_exactly_these_cases() -> None:
    assert DOCUMENTED, f"no table under {SECTION!r} in {DOC}"
    assert set(DOCUMENTED) == set(CASES), sorted(set(DOCUMENTED) ^ set(CASES))
    for name, case in CASES.items():
        assert DOCUMENTED[name]["what"] == case.what, name


@pytest.mark.parametrize("name", sorted(CASES))
def test_diffkit_gives_the_documented_value_and_derivative(name: str) -> None:
    row = DOCUMENTED.get(name)
    assert row, f"{name}: no row in {DOC}"
    value, derivative = observe_diffkit(CASES[name])
    assert same(row["value"], value), (name, row["value"], value)
    assert same(row["diffkit"], derivative), (name, row["diffkit"], derivative)


@pytest.mark.parametrize("name", sorted(CASES))
def test_differences_from_jax_or_pytorch_are_explained(name: str) -> None:
    row = DOCUMENTED[name]
    others = [row[k] for k in ("jax", "torch") if row[k] != "—"]
    if any(not same(row["diffkit"], o) for o in others):
        assert len(row["note"]) >= 20, f"{name}: diffkit differs without a note"


@pytest.mark.jax
@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_gives_what_the_doc_says(name: str) -> None:
    needs("jax")
    case, row = CASES[name], DOCUMENTED[name]
    if case.jax_f is None:
        assert row["jax"] == "—"
        return
    observed = observe_jax(case)
    assert same(row["jax"], observed), (name, row["jax"], observed)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_pytorch_gives_what_the_doc_says(name: str) -> None:
    needs("torch")
    case, row = CASES[name], DOCUMENTED[name]
    if case.torch_f is None:
        assert row["torch"] == "—"
        return
    observed = observe_torch(case)
    assert same(row["torch"], observed), (name, row["torch"], observed)
