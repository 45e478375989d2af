"""`squarepeg config [show]`: print the merged, interpolated config and where it came from.

stdout: the merged config as YAML (profile applied, `profiles` removed), and nothing else.
stderr: one `[squarepeg] <path> (<origin>)` line per file, or "no config files loaded".
Options given on the group (`squarepeg config --profile gpu show`) pass down to `show`; an option
given to `show` itself wins. A bare `squarepeg config` is `config show`, as in squarepeg 0.4.1.
"""

from __future__ import annotations

from typing import Any

import click

from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import CONTEXT_SETTINGS, document_output_option
from pegboard.app.squarepeg.cli.options import client_side_seams, config_layer_options
from pegboard.app.squarepeg.config_show import show_config


@examples(
    "squarepeg config",
    "squarepeg config --profile gpu show",
    "squarepeg config show --config ./team.yaml --no-default-config",
    "squarepeg config -o json",
)
@click.group("config", invoke_without_command=True, context_settings=CONTEXT_SETTINGS)
@config_layer_options
@document_output_option
@click.pass_context
def config(
    ctx: click.Context,
    config_paths: tuple[str, ...],
    no_default_config: bool,
    profile: str | None,
    output: str,
) -> int | None:
    """Inspect the merged configuration (a bare `config` is `config show`)."""
    if ctx.invoked_subcommand is None:
        return show_config(
            client_side_seams(ctx),
            config_paths=config_paths,
            no_default_config=no_default_config,
            profile=profile,
            output=output,
        )
    # Group options become the defaults of `show`; what `show` is given explicitly wins.
    defaults: dict[str, Any] = {}
    if config_paths:
        defaults["config_paths"] = config_paths
    if no_default_config:
        defaults["no_default_config"] = True
    if profile is not None:
        defaults["profile"] = profile
    if output != "yaml":
        defaults["output"] = output
    ctx.default_map = {"show": defaults}
    return None


@examples(
    "squarepeg config show",
    "squarepeg config show --profile gpu > merged.yaml",
    "squarepeg config show -o json",
)
@config.command("show", context_settings=CONTEXT_SETTINGS)
@config_layer_options
@document_output_option
@click.pass_context
def show(
    ctx: click.Context,
    config_paths: tuple[str, ...],
    no_default_config: bool,
    profile: str | None,
    output: str,
) -> int:
    """Print the merged config as YAML or JSON (stdout) and its source files (stderr)."""
    return show_config(
        client_side_seams(ctx),
        config_paths=config_paths,
        no_default_config=no_default_config,
        profile=profile,
        output=output,
    )
