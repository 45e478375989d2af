"""`squarepeg rm NAME...`: delete squarepeg Pods/Jobs by name (what `--keep` left, say)."""

from __future__ import annotations

from typing import Any

import click

from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import CONTEXT_SETTINGS, quiet_option, verbose_option
from pegboard.app.squarepeg.cli.completion_values import contexts, namespaces
from pegboard.app.squarepeg.cli.options import (
    ask_on_terminal,
    composition_root,
    config_layer_options,
)
from pegboard.app.squarepeg.remove_use_case import execute_remove


@examples(
    "squarepeg rm squarepeg-alpine-1a2b3c",
    "squarepeg rm -n team --yes my-job other-pod",
)
@click.command("rm", context_settings=CONTEXT_SETTINGS)
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@click.option(
    "-n", "--namespace", metavar="NS", help="Namespace of the resources.", shell_complete=namespaces
)
@click.option("--context", metavar="CTX", help="kubeconfig context.", shell_complete=contexts)
@quiet_option()
@verbose_option()
@click.option("--no-color", is_flag=True, help="No colour or animation on stderr.")
@config_layer_options
@click.pass_context
def rm(ctx: click.Context, /, verbose: bool, **params: Any) -> int:
    """Delete squarepeg Pods or Jobs by name, kept ones included (asks first unless --yes)."""
    container = composition_root(ctx)
    return execute_remove(
        container.seams(), container.cluster_ports(), confirm=ask_on_terminal, **params
    )
