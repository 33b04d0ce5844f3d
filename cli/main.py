"""Entry point: the ``diffkit`` command group and its one-line error handling.

Heavy modules (numpy, sympy, matplotlib, rich) are imported inside the commands, so
``diffkit --help`` answers at once.
"""

from __future__ import annotations

import os
import sys

import click

COMMANDS = {  # name -> module in this package holding a click command of that name
    "compare": "compare", "list": "listing", "steps": "steps", "swell": "swell",
    "trace": "trace", "graph": "graph", "rules": "rules",
    "show": "show", "report": "report", "bench": "bench", "advise": "advise",
    "styles": "styles", "accuracy": "accuracy",
}


class Group(click.Group):
    """Loads each command's module only when that command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        import importlib

        module = importlib.import_module(f"diffkit_cli.{COMMANDS[name]}")
        return getattr(module, name)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="diffkit")
def cli() -> None:
    """Differentiate a function five ways and measure how they compare.

    FUNC, wherever a command takes one, is a catalog name (see `diffkit list`), a
    formula in quotes such as "log(x1) + x1*x2 - sin(x2)" (parsed, never evaluated as
    Python), or path/to/file.py:func or module:func. Timings run BLAS on one thread
    unless OPENBLAS_NUM_THREADS (or OMP_/MKL_NUM_THREADS) says otherwise.

    \b
    Examples:
      diffkit compare rosenbrock
      diffkit compare "x^3 - 2*x" --at x=1.5 --format json
      diffkit steps "sin(x)" --at x=1
      diffkit swell logistic_map --depth 1..8
    """


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; any mistake ends in one line on stderr and a non-zero exit."""
    for var in BLAS_THREADS:  # one BLAS thread unless told otherwise: multi-threaded matrix
        os.environ.setdefault(var, "1")  # products time erratically on shared machines
    if not (sys.argv[1:] if argv is None else argv):
        argv = ["--help"]  # no command: the help, on stdout, exit 0
    try:
        code = cli.main(args=argv, prog_name="diffkit", standalone_mode=False)
        if isinstance(code, int) and code:  # a command's documented exit status (Exit(n))
            sys.exit(code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("diffkit: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        hint = f" (see: diffkit {exc.ctx.command.name} --help)" if exc.ctx and exc.ctx.parent else \
            " (see: diffkit --help)"
        click.echo(f"diffkit: error: {exc.format_message()}{hint}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("diffkit: interrupted; finished cells are kept in the results file", err=True)
        sys.exit(130)
    except (ValueError, OSError, ImportError, TypeError) as exc:
        if os.environ.get("DIFFKIT_DEBUG"):
            raise
        click.echo(f"diffkit: error: {_one_line(exc)}", err=True)
        sys.exit(2)
    except Exception as exc:  # a bug in diffkit: still one line, details on request
        if os.environ.get("DIFFKIT_DEBUG"):
            raise
        click.echo(f"diffkit: internal error: {type(exc).__name__}: {_one_line(exc)} "
                   "(rerun with DIFFKIT_DEBUG=1 for the traceback)", err=True)
        sys.exit(1)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


if __name__ == "__main__":
    main()
