"""`squarepeg clean`: the orphan sweep on demand (no run to exclude, no `orphan_sweep` switch).

`--dry-run` lists what would be deleted on stdout (`-o table|json|yaml`) and deletes nothing.
Exit 125 when the list or any delete failed, 0 otherwise ("nothing to clean" included).
"""

from __future__ import annotations

from typing import Any

import click

from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import (
    CONTEXT_SETTINGS,
    output_option,
    quiet_option,
    verbose_option,
)
from pegboard.app.squarepeg.clean_use_case import execute_clean
from pegboard.app.squarepeg.cli.completion_values import contexts, namespaces
from pegboard.app.squarepeg.cli.options import (
    ask_on_terminal,
    composition_root,
    config_layer_options,
)


@examples(
    "squarepeg clean --dry-run",
    "squarepeg clean --dry-run -o json -n team",
    "squarepeg clean --min-age 0 -v",
    "squarepeg clean --include-kept --yes",
)
@click.command("clean", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--dry-run", is_flag=True, help="List what would be deleted (stdout); delete nothing."
)
@click.option(
    "--min-age",
    type=int,
    metavar="SECONDS",
    help="Only resources finished/stuck this long (default: config orphan_sweep_min_age, 300).",
)
@click.option(
    "--include-kept",
    is_flag=True,
    help="Also delete kept (--keep) resources that are finished or stuck; asks first.",
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask before deleting kept resources.")
@click.option(
    "-n", "--namespace", metavar="NS", help="Namespace to clean.", shell_complete=namespaces
)
@click.option("--context", metavar="CTX", help="kubeconfig context.", shell_complete=contexts)
@quiet_option()
@verbose_option()
@click.option("--no-color", is_flag=True, help="No colour or animation on stderr.")
@output_option
@config_layer_options
@click.pass_context
def clean(ctx: click.Context, /, verbose: bool, **params: Any) -> int:
    """Delete your orphaned squarepeg Pods and Jobs (finished or stuck) in a namespace."""
    container = composition_root(ctx)
    return execute_clean(
        container.seams(), container.cluster_ports(), confirm=ask_on_terminal, **params
    )
