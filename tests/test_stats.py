"""The harness asks, never peeks: ``Backend.stats()`` and the typed ``NotApplicable``."""

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.backends import STATS, Backend
from diffkit.bench.cells import run_isolated

EPS = np.finfo(float).eps


def counted(f):
    """``f`` that counts its calls in ``f.calls``."""
    def g(x):
        g.calls += 1
        return f(x)
    g.calls = 0
    return g


def test_forward_and_reverse_report_the_tape_length():
    f = lambda x: dnp.sin(x) * x + 1.0  # noqa: E731  (sin, mul, add)
    assert dk.backend("forward").stats(f, 0.5) == {"tape_ops": 3}
    assert dk.backend("reverse").stats(f, 0.5)["tape_ops"] == 3


def test_reverse_reports_the_bytes_its_tape_keeps():
    rev = dk.backend("reverse")
    f = lambda x: dnp.sum(dnp.exp(x))  # noqa: E731
    small, large = (rev.stats(f, np.linspace(0.0, 1.0, n))["tape_bytes"] for n in (1000, 2000))
    assert small > 0 and small % 8000 == 0  # whole float64 arrays of the input's size
    assert large == 2 * small  # the tape keeps arrays, linear in the input's size


def test_symbolic_reports_its_setup_and_the_size_of_the_derivative():
    sym = dk.backend("symbolic")
    f = lambda x: dnp.sin(x) * x  # noqa: E731
    assert sym.stats(f, 0.5) == {}  # nothing derived yet
    assert dk.derivative(f, backend=sym)(0.5) == pytest.approx(np.sin(0.5) + 0.5 * np.cos(0.5))
    stats = sym.stats(f, 0.5)
    # x*cos(x) + sin(x): Add, Mul, x, cos, x, sin, x; CSE finds nothing to share
    assert stats["expr_nodes"] == 7 and stats["expr_dag_nodes"] == 7
    assert stats["setup_s"] > 0


def test_numeric_reports_its_evaluations_and_step():
    num = dk.backend("numeric", batched=False)
    f = counted(lambda x: dnp.sum(x ** 2))
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(dk.grad(f, backend=num)(x), 2 * x, rtol=1e-9)
    stats = num.stats(f, x)
    assert stats["fevals"] == f.calls - 1  # every call but the one for the value
    # the automatic central step: eps^(1/3) max(|x|, 1), rounded down to a power of two
    np.testing.assert_array_equal(stats["step"], 2.0 ** np.floor(np.log2(EPS ** (1 / 3) * x)))


def test_scipy_reports_its_evaluations():
    sp = dk.backend("scipy")
    f = counted(lambda v: (v[0] + 2.0 * v[1] - 7.0) ** 2)
    np.testing.assert_allclose(dk.grad(f, backend=sp)(np.array([0.5, 1.0])), [-9.0, -18.0])
    assert sp.stats(f, None) == {"fevals": f.calls - 1}


@pytest.mark.parametrize("name", ["forward", "reverse", "symbolic", "numeric", "autograd",
                                  "numdifftools", "scipy", "jax", "torch"])
def test_every_backend_reports_only_documented_figures(name):
    try:
        b = dk.backend(name)
    except dk.DiffkitError as exc:  # a peer whose library is not installed
        pytest.skip(str(exc))
    f = lambda x: dnp.sum(dnp.sin(x))  # noqa: E731
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(dk.grad(f, backend=b)(x), np.cos(x), rtol=1e-7)
    stats = b.stats(f, x)
    assert set(stats) <= set(STATS), set(stats) - set(STATS)
    if name in ("autograd", "numdifftools", "torch"):
        assert stats == {}  # nothing beyond time and memory to tell


class GradientOnly(Backend):
    """A backend that has no Jacobians and says so for everything else."""

    name = "gradient-only"

    def value_and_grad(self, fun, x, has_aux):
        raise dk.NotApplicable("gradients of this kind are beyond it")


def test_not_applicable_is_a_typed_diffkit_error():
    assert issubclass(dk.NotApplicable, dk.DiffkitError)
    with pytest.raises(dk.NotApplicable, match="does not compute Jacobians"):
        dk.jacobian(dnp.sin, backend=GradientOnly())(0.5)
    with pytest.raises(dk.NotApplicable, match="needs a closed form"):
        dk.grad(lambda x: x if x > 0 else -x, backend="symbolic")(0.5)
    with pytest.raises(dk.NotApplicable, match="not complex-step safe"):
        dk.derivative(dnp.abs, backend=dk.backend("numeric", method="complex"))(0.5)


def test_cells_turn_not_applicable_into_n_a_by_type_not_by_text():
    def raising(exc):
        def job():
            raise exc
        return job

    assert run_isolated(raising(dk.NotApplicable("no reason given")))["status"] == "n/a"
    wrong = run_isolated(raising(dk.DiffkitError("the symbolic backend needs a closed form")))
    assert wrong["status"] == "error"  # the words do not matter, the type does


def test_a_not_applicable_backend_is_an_n_a_row_in_a_comparison():
    result = dk.compare("rosenbrock", backends=[GradientOnly(), "reverse"], repeat=1)
    by = {r["backend"]: r for r in result.records()}
    assert by["gradient-only"]["status"] == "n/a"
    assert "beyond it" in by["gradient-only"]["message"]
    assert by["reverse"]["status"] == "ok" and by["reverse"]["tape_ops"] > 0
