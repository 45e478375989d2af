"""`squarepeg clean`: the orphan sweep on demand (no run to exclude, no `orphan_sweep` switch).

`--dry-run` prints an aligned `kind/name  category  detail` table on stdout and deletes nothing.
Exit 125 when the list or any delete failed, 0 otherwise ("nothing to clean" included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from pegboard.app.squarepeg.clean_use_case import execute_clean
from pegboard.app.squarepeg.cli.options import composition_root, config_layer_options

if TYPE_CHECKING:
    pass


@click.command("clean", context_settings={"help_option_names": ["--help"]})
@click.option(
    "--dry-run", is_flag=True, help="List what would be deleted (stdout); delete nothing."
)
@click.option(
    "--min-age",
    type=int,
    metavar="SECONDS",
    help="Only resources finished/stuck this long (default: config orphan_sweep_min_age, 300).",
)
@click.option("-n", "--namespace", metavar="NS", help="Namespace to clean.")
@click.option("--context", metavar="CTX", help="kubeconfig context.")
@click.option("--quiet", is_flag=True, help="Only errors on stderr.")
@click.option("--no-color", is_flag=True, help="No colour or animation on stderr.")
@config_layer_options
@click.pass_context
def clean(ctx: click.Context, /, **params: Any) -> int:
    """Delete your orphaned squarepeg Pods and Jobs (finished or stuck) in a namespace."""
    container = composition_root(ctx)
    return execute_clean(container.seams(), container.cluster_ports(), **params)
