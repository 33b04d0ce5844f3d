"""autograd's own test suite, run against diffkit through a stand-in; prints passed/total.

The tests are autograd's (github.com/HIPS/autograd, tests/), copied into a temporary
directory at run time from a git checkout or mirror (not kept in this repository). They
import ``autograd``, ``autograd.numpy``, ``autograd.scipy...`` and ``autograd.test_util``;
the stand-in package in benchmarks/autograd_standin/ answers those imports with diffkit
(its differential operators are ``dk.vjp``/``dk.jvp``, its numpy is ``diffkit.numpy``
with numpy behind it, its ``check_grads`` compares diffkit's derivatives with central
differences). What fails is a function diffkit does not differentiate, a convention that
differs, or one of autograd's internals (vector spaces, tracers, its own boxes) that a
stand-in does not reproduce: the per-file table and the first line of each failure say
which.

    python benchmarks/autograd_suite.py [--git-dir DIR | --tests DIR] [--show-failures]

DIR defaults to the mirror that diffkit's helpers fetch (HIPS+autograd), else ``--tests``
names a directory holding autograd's tests/.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "autograd_standin"
MIRRORS = [Path("/work/.mirror/HIPS+autograd/repo")]


def copy_tests(into: Path, git_dir: Path | None, tests: Path | None) -> Path:
    """autograd's tests/ under ``into``, from a directory or a git repository's HEAD."""
    target = into / "tests"
    if tests is not None:
        shutil.copytree(tests, target)
        return target
    for candidate in ([git_dir] if git_dir else MIRRORS):
        if candidate is not None and candidate.exists():
            archive = subprocess.run(["git", f"--git-dir={candidate}", "archive", "HEAD", "tests"],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
            return target
    sys.exit("autograd's tests were not found: pass --git-dir (a clone of HIPS/autograd) or "
             "--tests (its tests/ directory)")


def run(tests: Path, show: bool) -> tuple[int, int]:
    env = {**os.environ, "COLUMNS": "300", "PYTHONPATH": os.pathsep.join(
        [str(STANDIN), str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "pytest", str(tests), "-q", "-rfE", "-p",
                          "no:cacheprovider", "-o", "addopts=", "--tb=line", "-W", "ignore",
                          "-rA"], capture_output=True, text=True, env=env, cwd=tests.parent)
    outcomes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures = []
    for line in out.stdout.splitlines():
        m = re.match(r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (?:\[\d+\] )?(?:tests/)?([\w/]+\.py)", line)
        if m:
            outcomes[m.group(2)][m.group(1)] += 1
            if m.group(1) in ("FAILED", "ERROR"):
                failures.append(line[:300])
    if not outcomes:
        print(out.stdout[-3000:], out.stderr[-3000:])
        sys.exit("pytest reported nothing")
    print(f"{'file':28s} passed / total")
    passed = total = 0
    for name in sorted(outcomes):
        c = outcomes[name]
        n = c["PASSED"] + c["FAILED"] + c["ERROR"]
        print(f"{name:28s} {c['PASSED']:4d} / {n:4d}" + (f"   ({c['SKIPPED']} skipped)"
                                                         if c["SKIPPED"] else ""))
        passed, total = passed + c["PASSED"], total + n
    print(f"{'all':28s} {passed:4d} / {total:4d}")
    if show:
        print("\n".join(failures))
    return passed, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", type=Path, help="a git clone or mirror of HIPS/autograd")
    parser.add_argument("--tests", type=Path, help="autograd's tests/ directory")
    parser.add_argument("--show-failures", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tests = copy_tests(Path(tmp), args.git_dir, args.tests)
        passed, total = run(tests, args.show_failures)
    print(f"autograd's suite through diffkit: {passed} of {total} passed")


if __name__ == "__main__":
    main()
