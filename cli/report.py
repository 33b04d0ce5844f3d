"""``diffkit report``: run a report spec's sweeps and write figures, tables and HTML."""

from __future__ import annotations

from pathlib import Path

import click

from .output import Progress, cluster_option, quiet_option, writable_folder

@click.command()
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), callback=writable_folder,
              help="output folder (default: out/<spec name>); a rerun into the same folder "
              "resumes from its results.jsonl")
@click.option("--gallery", is_flag=True, help="write only the figures as small PNGs, "
              "measured afresh (the README gallery: -o reports/gallery)")
@cluster_option
@quiet_option
@click.option("--verbose", is_flag=True, help="print where the time went, phase by phase "
              "(planning, starting the cluster, cells, figures, the page) on stderr")
def report(spec: str, out_dir: str | None, gallery: bool, cluster: str | None,
           quiet: bool, verbose: bool) -> None:
    """Run the sweeps a TOML SPEC describes (functions, backends, sizes, depths, figures,
    limits) and write DIR/index.html with the figures (PNG and SVG), tables, the
    machine and package versions, and the raw results (results.jsonl, results.csv).

    Every cell runs isolated under the spec's time and memory limits; a failed cell
    shows its status and the report still builds. Standard specs: reports/*.toml.

    \b
    Examples:
      diffkit report reports/quick.toml -o out/quick
      diffkit report reports/accuracy.toml --quiet
      diffkit report reports/quick.toml -o reports/gallery --gallery
      diffkit report reports/accuracy.toml --cluster tcp://10.0.0.5:8786
      diffkit report reports/quick.toml --cluster local:2 --verbose
      diffkit report reports/gradients.toml -o out/gradients   (vanishing gradients)
    """
    from diffkit.reporting import report as rp
    from diffkit.reporting.runner import Phases, plan
    from diffkit.reporting.spec import experiment

    out = Path(out_dir) if out_dir else Path("out") / Path(spec).stem
    if experiment(spec):  # e.g. reports/gradients.toml: trains models, no harness cells
        click.echo(str(rp.build(spec, out, cluster=cluster)))
        return
    progress = Progress(None if cluster else len(plan(spec)), quiet)
    try:
        if gallery:
            paths = rp.gallery(spec, out, progress=progress.step, cluster=cluster)
        else:
            phases = Phases() if verbose else None
            paths = [rp.build(spec, out, progress=progress.step, cluster=cluster, phases=phases)]
            if phases:
                click.echo(f"report: {phases}", err=True)
    finally:
        progress.close()
    click.echo("\n".join(str(p) for p in paths))
