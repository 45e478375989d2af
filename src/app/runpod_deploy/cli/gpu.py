"""The GPU commands: `gpu-list`, `gpu-prices`, `gpu-inventory`, `estimate` (use cases in
gpu_queries.py)."""

from __future__ import annotations

from pathlib import Path

import click

from pegboard.app.runpod_deploy.gpu_queries import (
    estimate_job,
    gpu_inventory,
    list_gpus,
    list_prices,
)
from pegboard.app.runpod_deploy.pod_access import load_config
from pegboard.app.runpod_deploy.seams import provider_names
from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import output_option
from pegboard.domain.gpujob.spec import DEFAULT_PROVIDER

from .options import config_path_option, template_var_options, verbosity_options
from .pods import pod_command_deps

CLOUD_TYPES = ("SECURE", "COMMUNITY", "ALL")


# Options two commands each take; click builds a fresh Option each time one is applied.
_cloud_type_option = click.option(
    "--cloud-type",
    type=click.Choice(CLOUD_TYPES),
    default="SECURE",
    show_default=True,
    help="RunPod cloud type.",
)
_spot_option = click.option("--spot", is_flag=True, help="Spot (interruptible) prices.")
_provider_option = click.option(
    "--provider", type=click.Choice(provider_names()), default=DEFAULT_PROVIDER, show_default=True
)
_provider_override_option = click.option(
    "--provider",
    type=click.Choice(provider_names()),
    default=None,
    help="Ask this provider instead of the config's pod.provider.",
)


@examples(
    "runpod-deploy gpu-list --datacenter EU-RO-1",
    "runpod-deploy gpu-list --datacenter EU-RO-1 --cloud-type ALL --no-prices",
)
@click.command("gpu-list")
@click.option("--datacenter", required=True, help="Datacenter id, e.g. EU-RO-1.")
@_cloud_type_option
@_spot_option
@click.option("--no-prices", is_flag=True, help="Stock only; do not ask for prices.")
@_provider_option
@output_option
@verbosity_options
def gpu_list(
    datacenter: str, cloud_type: str, spot: bool, no_prices: bool, provider: str, output: str
) -> int:
    """Stock of every GPU in one datacenter (high, medium, low), with $/hr when known."""
    return list_gpus(
        datacenter=datacenter,
        cloud_type=cloud_type,
        spot=spot,
        with_prices=not no_prices,
        provider=provider,
        deps=pod_command_deps(),
        output=output,
    )


@examples(
    "runpod-deploy gpu-prices",
    "runpod-deploy gpu-prices --cloud-type COMMUNITY --spot",
)
@click.command("gpu-prices")
@_cloud_type_option
@_spot_option
@click.option(
    "--no-price-cache",
    is_flag=True,
    help="Accepted for 0.8.4 scripts: this build never caches prices.",
)
@_provider_option
@output_option
@verbosity_options
def gpu_prices(
    cloud_type: str, spot: bool, no_price_cache: bool, provider: str, output: str
) -> int:
    """GPU prices per hour, cheapest first; exit 1 when none is known."""
    return list_prices(
        cloud_type=cloud_type, spot=spot, provider=provider, deps=pod_command_deps(), output=output
    )


@examples(
    "runpod-deploy gpu-inventory --config job.yaml",
    "# exit 3 when nothing configured is in stock",
    "runpod-deploy gpu-inventory --config job.yaml || echo stock-out",
)
@click.command("gpu-inventory")
@config_path_option("The job's YAML config.")
@template_var_options
@_provider_override_option
@output_option
@verbosity_options
def gpu_inventory_command(
    config_path: Path,
    var_args: tuple[str, ...],
    vars_file: Path | None,
    provider: str | None,
    output: str,
) -> int:
    """Stock of each configured GPU in each configured datacenter; exit 3 on stock-out."""
    deps = pod_command_deps()
    loaded = load_config(deps, config_path, var_args, vars_file)
    return gpu_inventory(loaded=loaded, provider=provider, deps=deps, output=output)


@examples(
    "runpod-deploy estimate job.yaml",
    "runpod-deploy estimate job.yaml --var seed=7",
)
@click.command("estimate")
@click.argument("config_path", metavar="CONFIG", type=click.Path(path_type=Path, dir_okay=False))
@template_var_options
@_provider_override_option
@output_option
@verbosity_options
def estimate(
    config_path: Path,
    var_args: tuple[str, ...],
    vars_file: Path | None,
    provider: str | None,
    output: str,
) -> int:
    """Pick the GPU `run` would pick, then forecast spend at the timeout and runtime at the cap."""
    deps = pod_command_deps()
    loaded = load_config(deps, config_path, var_args, vars_file)
    return estimate_job(loaded=loaded, provider=provider, deps=deps, output=output)
