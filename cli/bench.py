"""``diffkit bench``: the race against peer libraries, as a markdown table of ratios.

The measuring is :mod:`diffkit.bench.race`; this command runs it in a fresh process (the
race fixes every library's thread count before they start) and passes its options through.
"""

from __future__ import annotations

import subprocess
import sys

import click

from .output import output_option, quiet_option


@click.command()
@click.option("--quick", is_flag=True, help="tiny sizes: a smoke test in seconds (its ratios "
              "are not the targets' sizes)")
@click.option("--repeat", type=click.IntRange(min=1), help="timing samples per measure; the "
              "median is kept (default 15, --quick 3)")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="threads per library (BLAS, OpenMP, PyTorch, XLA)")
@click.option("--warm-malloc", is_flag=True, help="glibc keeps freed memory instead of "
              "returning it (default: glibc as it comes)")
@output_option
@quiet_option
def bench(quick: bool, repeat: int | None, threads: int, warm_malloc: bool,
          output: str | None, quiet: bool) -> None:
    """Race diffkit's eager backends against autograd, JAX, PyTorch and compiled
    symbolic code, and write a markdown table: each ratio diffkit / opponent measured
    in one run (interleaved calls, median of repeats), its target and whether it is
    met, with the date, the machine and the versions. Peers not installed are skipped.

    \b
    Examples:
      diffkit bench -o race.md
      diffkit bench --quick
    """
    from diffkit.core import DiffkitError

    argv = [sys.executable, "-m", "diffkit.bench.race", "--threads", str(threads)]
    argv += ["--quick"] * quick + ["--repeat", str(repeat)] * (repeat is not None)
    argv += ["--warm-malloc"] * warm_malloc + ["--quiet"] * quiet + ["--output", output] * (output is not None)
    done = subprocess.run(argv, stdout=None if output else subprocess.PIPE, text=True,
                          check=False)
    if done.returncode:
        raise DiffkitError(f"the race stopped with exit code {done.returncode}")
    if not output:
        click.echo(done.stdout.rstrip("\n"))
