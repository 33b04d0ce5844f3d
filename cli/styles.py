"""``diffkit styles``: the frameworks' names for one training step beside diffkit's."""

from __future__ import annotations

import click

from .output import emit, format_option, output_option, render

FRAMEWORKS = ("PyTorch", "PaddlePaddle", "MindSpore", "JAX", "TensorFlow", "MXNet")


@click.command()
@click.option("-f", "--framework", "frameworks", multiple=True,
              type=click.Choice(FRAMEWORKS, case_sensitive=False),
              help="only these frameworks' columns (repeat the option for several)")
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
    from diffkit import families

    if frameworks or fmt != "table":
        records = families.table(frameworks)
        emit(render(records, fmt, list(records[0]), title="one training step"), output)
        return
    emit("\n\n".join(render(families.table(members), fmt, ["concept", *members, "diffkit"],
                             title=f"{family}: {', '.join(members)}")
                      for family, members in families.FAMILIES.items()), output)
