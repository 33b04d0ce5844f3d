"""What diffkit covers of numpy and SciPy, read from the namespaces themselves:
``python -m diffkit.nplib.coverage`` prints ``docs/numpy-coverage.md`` (a test holds the
committed page to what this prints).

Each public function of numpy, ``numpy.linalg``, ``numpy.fft``, ``scipy.special``,
``scipy.linalg`` and each distribution of ``scipy.stats`` is one of

* **differentiable**: diffkit has it and carries derivatives through it (grouped by the
  module of diffkit that defines it: its family);
* **value only**: diffkit has it, and its result is an integer, a boolean or a constant
  (``argmax``, ``isnan``, ``fftfreq`` ...): no derivative to carry;
* **missing**;
* **not numerical** (numpy only): printing, files, error settings, dtypes, dates.

>>> status("numpy", "median"), status("numpy", "argmax"), status("numpy", "loadtxt")
('differentiable', 'value only', 'not numerical')
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import numpy as np

NAMESPACES = {"numpy": "numpy", "numpy.linalg": "numpy.linalg", "numpy.fft": "numpy.fft",
              "scipy.special": "scipy.special", "scipy.linalg": "scipy.linalg",
              "scipy.stats": "scipy.stats"}
OURS = {"numpy": "diffkit.numpy", "numpy.linalg": "diffkit.nplib.linalg",
        "numpy.fft": "diffkit.nplib.fft", "scipy.special": "diffkit.scipy.special",
        "scipy.linalg": "diffkit.scipy.linalg", "scipy.stats": "diffkit.scipy.stats"}
# results that are integers, booleans or constants, whatever the inputs
VALUE_ONLY = {"argmax", "argmin", "argsort", "nonzero", "any", "all", "nanargmax", "nanargmin",
              "matrix_rank", "fftfreq", "rfftfreq", "arange", "eye", "zeros", "ones",
              "zeros_like", "ones_like", "floor_divide"}
NOT_NUMERICAL = {
    "array2string", "array_repr", "array_str", "base_repr", "binary_repr", "busday_count",
    "busday_offset", "datetime_as_string", "datetime_data", "format_float_positional",
    "format_float_scientific", "from_dlpack", "frombuffer", "fromfile", "fromfunction",
    "fromiter", "frompyfunc", "fromregex", "fromstring", "genfromtxt", "get_include",
    "get_printoptions", "getbufsize", "geterr", "geterrcall", "info", "is_busday", "isdtype",
    "isfortran", "isnat", "issubdtype", "iterable", "load", "loadtxt", "may_share_memory",
    "min_scalar_type", "mintypecode", "nested_iters", "printoptions", "save", "savetxt",
    "savez", "savez_compressed", "set_printoptions", "setbufsize", "seterr", "seterrcall",
    "shares_memory", "show_config", "show_runtime", "typename", "common_type", "asmatrix",
    "bmat", "einsum_path", "copyto", "place", "put", "putmask", "put_along_axis",
    "fill_diagonal", "require", "ascontiguousarray", "asfortranarray", "asanyarray",
    "asarray_chkfinite", "packbits", "unpackbits", "bitwise_and", "bitwise_count",
    "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "invert", "left_shift", "right_shift", "test"}


def _public(module: Any, namespace: str) -> list[str]:
    """The functions a namespace offers (for scipy.stats: its distributions)."""
    if namespace == "scipy.stats":
        import scipy.stats as st

        kinds = (st.rv_continuous, st.rv_discrete)
        multi = type(st.multivariate_normal)
        return sorted(n for n in dir(st) if not n.startswith("_")
                      and (isinstance(getattr(st, n), kinds) or type(getattr(st, n)) is multi
                           or type(getattr(st, n)).__name__.endswith("_gen")))
    names = getattr(module, "__all__", None) or dir(module)
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if name.startswith("_") or obj is None or inspect.isclass(obj) or inspect.ismodule(obj):
            continue
        if isinstance(obj, np.ufunc) or callable(obj):
            out.append(name)
    if namespace == "numpy":
        out += ["r_", "c_"]
    return sorted(set(out))


def status(namespace: str, name: str) -> str:
    """``differentiable``, ``value only``, ``missing`` or ``not numerical``."""
    ours = importlib.import_module(OURS[namespace])
    if name in getattr(ours, "__all__", dir(ours)):
        return "value only" if name in VALUE_ONLY or _family(namespace, name) == "value_only" \
            else "differentiable"
    if namespace == "numpy" and name in NOT_NUMERICAL:
        return "not numerical"
    return "missing"


# where each namespace's functions are defined, in the order a name is looked up
FAMILIES = {"numpy": ["base", "math", "shaping", "stats", "contract", "convolve", "numpy2",
                      "building", "nanfunctions", "polynomial", "quantiles", "sampled",
                      "rearranging", "value_only"],
            "numpy.linalg": ["linalg", "base", "contract"],
            "numpy.fft": ["fft"]}


def _family(namespace: str, name: str) -> str:
    """The diffkit module that defines ``name`` (scipy's namespaces are one family each)."""
    for family in FAMILIES.get(namespace, []):
        if name in importlib.import_module(f"diffkit.nplib.{family}").__all__:
            return family
    return namespace.rsplit(".", 1)[-1]


def table() -> dict[str, dict[str, list[str]]]:
    """For each namespace: status -> names."""
    out: dict[str, dict[str, list[str]]] = {}
    for namespace, module_name in NAMESPACES.items():
        module = importlib.import_module(module_name)
        rows: dict[str, list[str]] = {}
        for name in _public(module, namespace):
            rows.setdefault(status(namespace, name), []).append(name)
        out[namespace] = rows
    return out


def families(namespace: str, names: list[str]) -> dict[str, list[str]]:
    """Differentiable names by the diffkit module that defines them."""
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(_family(namespace, name), []).append(name)
    return dict(sorted(out.items()))


def _names(names: list[str]) -> str:
    return " ".join(f"`{n}`" for n in names) if names else "(none)"


def page() -> str:
    """The markdown of docs/numpy-coverage.md."""
    import scipy

    rows = table()
    lines = [
        "# What `diffkit.numpy` and `diffkit.scipy` cover",
        "",
        "Generated by `python -m diffkit.nplib.coverage` from the namespaces themselves "
        f"(numpy {np.__version__}, SciPy {scipy.__version__}); `tests/test_coverage_page.py` "
        "holds this page to what the script prints. Conventions, conditions and derivative "
        "notes of each family: [numpy-conventions.md](numpy-conventions.md).",
        "",
        "Every differentiable function runs on the `forward`, `reverse`, `numeric` and "
        "`compiled` backends, to any order, and on `symbolic` where it has a closed form "
        "(matrix factorizations, sorts and the matrix functions do not: `n/a`). The ones JAX "
        "also has are compared with `jax.numpy`/`jax.scipy`, values and gradients, in "
        "`tests/test_jax_differential.py`.",
        "",
        "| namespace | differentiable | value only | missing | not numerical |",
        "|---|---|---|---|---|",
    ]
    for namespace, by_status in rows.items():
        counts = [len(by_status.get(s, [])) for s in
                  ("differentiable", "value only", "missing", "not numerical")]
        lines.append(f"| `{namespace}` | " + " | ".join(map(str, counts)) + " |")
    for namespace, by_status in rows.items():
        lines += ["", f"## `{namespace}`", "", "Differentiable, by family (the diffkit module):"]
        for family, names in families(namespace, by_status.get("differentiable", [])).items():
            lines.append(f"- *{family}*: {_names(names)}")
        for label in ("value only", "missing", "not numerical"):
            if by_status.get(label):
                lines += ["", f"{label.capitalize()} ({len(by_status[label])}): "
                          f"{_names(by_status[label])}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(page(), end="")
