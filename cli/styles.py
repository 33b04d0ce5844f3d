"""``diffkit styles``: the frameworks' names for one training step beside diffkit's."""

from __future__ import annotations

import click

from .output import emit, format_option, output_option, render


@click.command()
@click.option("-f", "--framework", "frameworks", multiple=True, metavar="NAME",
              help="only this framework's column: PyTorch, PaddlePaddle, MindSpore, JAX, "
              "TensorFlow or MXNet (repeat the option for several)")
@format_option
@output_option
def styles(frameworks: tuple[str, ...], fmt: str, output: str | None) -> None:
    """Print the three families of autodiff APIs (tensor-centred, functional, tape-scoped)
    as a vocabulary map: for one training step, each framework's names (base class, dense
    layer, container, parameters, gradients, clearing, accumulation) beside diffkit's.

    \b
    Examples:
      diffkit styles
      diffkit styles -f mindspore -f pytorch
      diffkit styles --format markdown
    """
    from diffkit.views import families

    known = {f.lower() for f in families.FRAMEWORKS}
    for name in frameworks:
        if name.lower() not in known:
            raise click.UsageError(f"unknown framework {name!r}; choose from "
                                   f"{', '.join(families.FRAMEWORKS)}")
    if frameworks or fmt != "table":
        records = families.table(frameworks)
        emit(render(records, fmt, list(records[0]), title="one training step"), output)
        return
    emit("\n\n".join(render(families.table(members), fmt, ["concept", *members, "diffkit"],
                             title=f"{family}: {', '.join(members)}")
                      for family, members in families.FAMILIES.items()), output)
