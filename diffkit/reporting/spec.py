"""A report's spec: the TOML schema, its defaults and its checks.

A spec names a title, the functions and backends, sizes and depths, the figures to draw
and the limits every cell runs under (see ``reports/*.toml``; :data:`DEFAULTS` holds
every key). :func:`load_spec` fills in every default and checks every value, so a
mistake is one line before anything is measured.

>>> load_spec({"figures": ["accuracy"], "functions": ["exp"]})["accuracy"]["backends"]
['symbolic', 'numeric', 'forward', 'reverse']
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..backends import as_backend, label
from ..backends.finite_diff import METHODS
from ..bench import catalog
from ..bench.targets import find_target
from ..core import DiffkitError
from . import atlas, gradbench, solvers, sparse_taylor, which

FIGURES = ("steps", "swell", "scaling", "cost", "jacobian", "memory", "accuracy", "graphmode",
           *sparse_taylor.DEFAULTS)
ALL_BACKENDS = ["symbolic", "numeric", "forward", "reverse"]
DEFAULTS: dict[str, Any] = {
    "title": "diffkit report", "description": "",
    "functions": ["exp", "sin_large", "rosenbrock", "logistic_map", "babylonian_sqrt",
                  "tanh_ax"],
    "backends": ALL_BACKENDS,
    "figures": list(FIGURES),
    "limits": {"timeout": 60.0, "memory_mb": 2048.0, "repeat": 5},
    "steps": {"functions": ["sin_large"],
              "methods": ["forward", "central", "richardson", "complex"]},
    "swell": {"functions": ["logistic_map", "nested_sin"], "depths": "1..8"},
    "scaling": {"function": "rosenbrock", "sizes": [10, 100, 1000, 10000]},
    "cost": {"bound": 4.0},
    "jacobian": {"inputs": [4, 64, 1024], "outputs": [1, 16, 256]},
    "memory": {"function": "nested_sin", "size": 10000, "depths": [1, 2, 4, 8, 16, 32, 64],
               "backends": ["forward", "reverse"]},
    "accuracy": {},
    "graphmode": {"function": "rosenbrock", "sizes": [10, 100, 1000, 10000, 100000]},
    "which": which.DEFAULTS,
    "solvers": solvers.DEFAULTS,
    "atlas": atlas.DEFAULTS,
    "gradbench": gradbench.DEFAULTS,
    **sparse_taylor.DEFAULTS,
}
INHERITED = {"steps": ("backends",), "cost": ("functions", "backends"),
             "scaling": ("backends",), "accuracy": ("functions", "backends")}
SECTION_KEYS = {"steps": {"functions", "methods", "backends"},
                "swell": {"functions", "depths"},
                "scaling": {"function", "sizes", "backends"},
                "cost": {"functions", "backends", "n", "bound"},
                "jacobian": {"inputs", "outputs"},
                "memory": {"function", "size", "depths", "backends"},
                "accuracy": {"functions", "backends"},
                "graphmode": {"function", "sizes"}, **sparse_taylor.SECTION_KEYS}



def read_toml(path: str | os.PathLike) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DiffkitError(f"{path}: not valid TOML: {exc}") from None


EXPERIMENTS = {  # a spec's `experiment = NAME` -> "module:function(spec, out_dir) -> Path"
    "gradient_flow": "diffkit.reporting.gradient_flow:build",
    "memory_vs_recompute": "diffkit.reporting.recompute:build",
    "fusion": "diffkit.reporting.fusion:build",
}


def experiment(spec: str | os.PathLike | dict[str, Any]) -> str | None:
    """The experiment a spec runs instead of harness sweeps (e.g. ``gradient_flow``), if any.

    >>> experiment({"experiment": "gradient_flow"}), experiment({"functions": ["exp"]})
    ('gradient_flow', None)
    """
    name = (spec if isinstance(spec, dict) else read_toml(spec)).get("experiment")
    if name is not None and name not in EXPERIMENTS:
        raise DiffkitError(f"unknown experiment {name!r}; experiments: {', '.join(EXPERIMENTS)}")
    return name


def load_spec(spec: str | os.PathLike | dict[str, Any]) -> dict[str, Any]:
    """The spec (a TOML file or a dict) with every default filled in and checked.

    >>> load_spec({"limits": {"timeout": 5}})["limits"]
    {'timeout': 5.0, 'memory_mb': 2048.0, 'repeat': 5}
    """
    if isinstance(spec, dict):
        raw, where = copy.deepcopy(spec), "spec"
    else:
        raw, where = read_toml(spec), str(spec)
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise DiffkitError(f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(DEFAULTS)}")
    out = {k: copy.deepcopy(raw.get(k, v)) for k, v in DEFAULTS.items()
           if k not in FIGURES and k not in ("limits", "which", "solvers", "atlas", "gradbench")}
    out["title"], out["description"] = str(out["title"]), str(out["description"])
    out["functions"] = _names(out["functions"], f"{where}: functions")
    for fn in out["functions"]:
        find_target(fn)  # a misspelt name is an error even if no figure uses the list
    out["backends"] = _backends(out["backends"], f"{where}: backends")
    out["figures"] = out["figures"] if out["figures"] == [] else \
        _names(out["figures"], f"{where}: figures")  # none: a spec of sections only
    bad = [f for f in out["figures"] if f not in FIGURES]
    if bad:
        raise DiffkitError(f"{where}: unknown figure {bad[0]!r}; figures: {', '.join(FIGURES)}")
    out["limits"] = _limits(raw.get("limits", {}), f"{where}: [limits]")
    out["which"] = which.load(raw.get("which", {}), where)
    out["solvers"] = solvers.load(raw.get("solvers", {}), where)
    out["atlas"] = atlas.load(raw.get("atlas", {}), where)
    out["gradbench"] = gradbench.load(raw.get("gradbench", {}), where, out["limits"])
    for fn in out["which"]["functions"]:
        find_target(fn)
    for fig in FIGURES:
        section = raw.get(fig, {})
        if not isinstance(section, dict):
            raise DiffkitError(f"{where}: {fig} must be a table, e.g. [{fig}]")
        extra = sorted(set(section) - SECTION_KEYS[fig])
        if extra:
            raise DiffkitError(f"{where}: [{fig}] has no key {extra[0]!r}; its keys: "
                               f"{', '.join(sorted(SECTION_KEYS[fig]))}")
        merged = {**{k: out[k] for k in INHERITED.get(fig, ())}, **DEFAULTS[fig], **section}
        out[fig] = _section(fig, merged, f"{where}: [{fig}]", check=fig in out["figures"])
    return out


def _names(v: Any, where: str) -> list[str]:
    if not isinstance(v, list) or not v or not all(isinstance(s, str) and s for s in v):
        raise DiffkitError(f"{where} must be a non-empty list of names, e.g. [\"exp\"]")
    return list(v)


def _ints(v: Any, where: str) -> list[int]:
    if not isinstance(v, list) or not v or not all(type(i) is int and i > 0 for i in v):
        raise DiffkitError(f"{where} must be a non-empty list of positive integers")
    return list(v)


def _backends(v: Any, where: str) -> list[str]:
    return [label(as_backend(b)) for b in _names(v, where)]


def _limits(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict) or set(v) - set(DEFAULTS["limits"]):
        raise DiffkitError(f"{where} takes timeout (s), memory_mb and repeat")
    lim = {**DEFAULTS["limits"], **v}
    for key in ("timeout", "memory_mb"):
        if not isinstance(lim[key], (int, float)) or lim[key] <= 0:
            raise DiffkitError(f"{where}: {key} must be a positive number")
        lim[key] = float(lim[key])
    if type(lim["repeat"]) is not int or lim["repeat"] < 1:
        raise DiffkitError(f"{where}: repeat must be a positive integer")
    return lim


def _section(fig: str, s: dict[str, Any], where: str, check: bool) -> dict[str, Any]:
    from ..bench.sweeps import parse_depths  # sympy (the sweeps' reference): when a spec is read

    for key in ("functions", "methods"):
        if key in s:
            s[key] = _names(s[key], f"{where} {key}")
    if "backends" in s:
        s["backends"] = _backends(s["backends"], f"{where} backends")
    for key in ("sizes", "inputs", "outputs"):
        if key in s:
            s[key] = _ints(s[key], f"{where} {key}")
    if "depths" in s:
        s["depths"] = (parse_depths(s["depths"]) if isinstance(s["depths"], str)
                       else _ints(s["depths"], f"{where} depths"))
    for key in ("size", "n"):
        if key in s and (type(s[key]) is not int or s[key] < 1):
            raise DiffkitError(f"{where}: {key} must be a positive integer")
    if "bound" in s:
        if not isinstance(s["bound"], (int, float)) or s["bound"] <= 0:
            raise DiffkitError(f"{where}: bound must be a positive number")
        s["bound"] = float(s["bound"])
    bad = [m for m in s.get("methods", []) if m not in METHODS]
    if bad:
        raise DiffkitError(f"{where}: unknown method {bad[0]!r}; methods: {', '.join(METHODS)}")
    if check:
        for fn in s.get("functions", []) if fig in ("steps", "cost", "accuracy") else []:
            find_target(fn)  # an unknown name or a bad formula is a clear error now
        needs = {"swell": "depth", "memory": "depth", "scaling": "scalable",
                 "graphmode": "scalable"}.get(fig)
        for fn in s.get("functions", [s.get("function")]) if needs else []:
            entry = catalog.get(fn)
            if (needs == "depth" and entry.depth is None) or (needs == "scalable"
                                                              and not entry.scalable):
                fits = [e.name for e in catalog.ENTRIES
                        if (e.depth if needs == "depth" else e.scalable)]
                raise DiffkitError(f"{where}: {fn} has no {'depth' if needs == 'depth' else 'n'}"
                                   f"; try one of: {', '.join(fits)}")
    return s


def to_toml(spec: dict[str, Any]) -> str:
    """A loaded spec back as TOML (scalars, lists, one level of tables).

    >>> print(to_toml({"title": "t", "limits": {"repeat": 1}}))
    title = "t"
    <BLANKLINE>
    [limits]
    repeat = 1
    <BLANKLINE>
    """
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(value(i) for i in v) + "]"
        if isinstance(v, float) and not np.isfinite(v):
            return "nan" if np.isnan(v) else "inf" if v > 0 else "-inf"
        return json.dumps(v, ensure_ascii=False)

    top = [f"{k} = {value(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    tables = [f"\n[{k}]\n" + "".join(f"{kk} = {value(vv)}\n" for kk, vv in v.items())
              for k, v in spec.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n" + "".join(tables)
