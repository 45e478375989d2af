"""The GPU commands: `gpu-list`, `gpu-prices`, `gpu-inventory`, `estimate`, over GpuCloud.

    runpod-deploy gpu-list --datacenter D [--cloud-type T] [--spot] [--no-prices] [--provider P]
    runpod-deploy gpu-prices [--cloud-type T] [--spot] [--no-price-cache] [--provider P]
    runpod-deploy gpu-inventory --config PATH [--var K=V ...] [--provider P]
    runpod-deploy estimate CONFIG [--var K=V ...] [--provider P]

Without a config the provider is `--provider` (default runpod); with one, the config's
`pod.provider` unless `--provider` says otherwise. The local provider answers with its
synthetic GPU (every GPU a config asks for is in stock there, at no price). Stock is classified
once, as `run` selects (inventory.classify_stock over provisioning.AVAILABLE_STOCK).
Exit: 0; gpu-prices 1 when no price is known; gpu-inventory 3 when no configured GPU is in stock
in any configured datacenter; estimate 1 when no GPU can be picked; 2 usage/config error or a
provider not available in this build.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from pegboard.app.runpod_deploy.cli_options import (
    config_path_option,
    template_var_options,
    verbosity_options,
)
from pegboard.domain.errors import PortError
from pegboard.domain.gpujob.inventory import (
    build_inventory,
    forecast,
    gpu_list_lines,
    inventory_lines,
    price_lines,
)
from pegboard.domain.gpujob.provisioning import plan_candidates
from pegboard.domain.ports.gpu_cloud import GpuCloud, GpuStock

from .job_loading import LoadedJob
from .pod_tools import (
    PROVIDERS,
    PodToolDeps,
    cloud_for_flag,
    load_config,
    tool_deps,
)

logger = logging.getLogger(__name__)

EXIT_NO_PRICES = 1
EXIT_NO_GPU = 1
EXIT_STOCKOUT = 3
CLOUD_TYPES = ("SECURE", "COMMUNITY", "ALL")


def _cloud(deps: PodToolDeps, provider: str) -> GpuCloud:
    return cloud_for_flag(deps, provider)


def _prices(cloud: GpuCloud, *, cloud_type: str, spot: bool) -> dict[str, float]:
    """Prices are an extra: a failure is a warning and no prices."""
    try:
        return cloud.gpu_prices(cloud_type=cloud_type, spot=spot)
    except PortError as exc:
        logger.warning("GPU prices unavailable (%s)", exc)
        return {}


def list_gpus(
    *,
    datacenter: str,
    cloud_type: str,
    spot: bool,
    with_prices: bool,
    provider: str,
    deps: PodToolDeps,
) -> int:
    cloud = _cloud(deps, provider)
    entries = cloud.datacenter_stock(datacenter_ids=[datacenter], cloud_type=cloud_type)
    prices: dict[str, float] | None = None
    if with_prices:
        prices = _prices(cloud, cloud_type=cloud_type, spot=spot) or None
        if prices is None:
            logger.info("no GPU prices known (%s): stock only", provider)
    if not entries:
        logger.warning("datacenter %s lists no GPU (%s, %s)", datacenter, provider, cloud_type)
        return 0
    for line in gpu_list_lines(entries, prices):
        deps.out(line)
    return 0


def list_prices(*, cloud_type: str, spot: bool, provider: str, deps: PodToolDeps) -> int:
    prices = _cloud(deps, provider).gpu_prices(cloud_type=cloud_type, spot=spot)
    if not prices:
        logger.error("no GPU prices known (provider %s, %s)", provider, cloud_type)
        return EXIT_NO_PRICES
    for line in price_lines(prices):
        deps.out(line)
    return 0


def _config_cloud(deps: PodToolDeps, loaded: LoadedJob, override: str | None) -> GpuCloud:
    """`--provider` if given, else the config's pod.provider (unavailable: usage error)."""
    if override is not None:
        return cloud_for_flag(deps, override)
    return deps.backend_for(str(loaded.spec.pod.provider)).cloud


def gpu_inventory(*, loaded: LoadedJob, provider: str | None, deps: PodToolDeps) -> int:
    pod = loaded.spec.pod
    cloud = _config_cloud(deps, loaded, provider)
    cloud_type = str(pod.cloud_type)
    stock = cloud.gpu_availability(
        gpu_ids=pod.gpu_order, datacenter_ids=pod.datacenters, cloud_type=cloud_type
    )
    listed: list[GpuStock] = []
    try:
        listed = cloud.datacenter_stock(datacenter_ids=pod.datacenters, cloud_type=cloud_type)
    except PortError as exc:
        logger.warning("no widening hint: datacenter listing failed (%s)", exc)
    inventory = build_inventory(
        gpu_order=pod.gpu_order, datacenters=pod.datacenters, stock=stock, listed=listed
    )
    for line in inventory_lines(inventory):
        deps.out(line)
    if not inventory.any_available:
        logger.error(
            "stock-out: no configured GPU is in stock in any configured datacenter; "
            "widen gpu_order or datacenters (see the widening hints)"
        )
        return EXIT_STOCKOUT
    return 0


def estimate_job(*, loaded: LoadedJob, provider: str | None, deps: PodToolDeps) -> int:
    """The live selection `run` would make, then the spend it allows."""
    pod = loaded.spec.pod
    cloud = _config_cloud(deps, loaded, provider)
    stock = cloud.gpu_availability(
        gpu_ids=pod.gpu_order, datacenter_ids=pod.datacenters, cloud_type=str(pod.cloud_type)
    )
    plan = plan_candidates(
        gpu_order=pod.gpu_order,
        datacenters=pod.datacenters,
        stock=stock,
        prices=_prices(cloud, cloud_type=str(pod.cloud_type), spot=pod.spot),
        max_gpu_price_usd=None,
    )
    if not plan.candidates:
        logger.error("%s", plan.no_candidate_message())
        return EXIT_NO_GPU
    for line in forecast(candidate=plan.candidates[0], budget=loaded.spec.budget).lines():
        deps.out(line)
    return 0


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
    "--provider", type=click.Choice(PROVIDERS), default="runpod", show_default=True
)
_provider_override_option = click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    default=None,
    help="Ask this provider instead of the config's pod.provider.",
)


@click.command("gpu-list")
@click.option("--datacenter", required=True, help="Datacenter id, e.g. EU-RO-1.")
@_cloud_type_option
@_spot_option
@click.option("--no-prices", is_flag=True, help="Stock only; do not ask for prices.")
@_provider_option
@verbosity_options
def gpu_list(datacenter: str, cloud_type: str, spot: bool, no_prices: bool, provider: str) -> int:
    """Stock of every GPU in one datacenter (high, medium, low), with $/hr when known."""
    return list_gpus(
        datacenter=datacenter,
        cloud_type=cloud_type,
        spot=spot,
        with_prices=not no_prices,
        provider=provider,
        deps=tool_deps(),
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
@verbosity_options
def gpu_prices(cloud_type: str, spot: bool, no_price_cache: bool, provider: str) -> int:
    """GPU prices per hour, cheapest first; exit 1 when none is known."""
    return list_prices(cloud_type=cloud_type, spot=spot, provider=provider, deps=tool_deps())


@click.command("gpu-inventory")
@config_path_option("The job's YAML config.")
@template_var_options
@_provider_override_option
@verbosity_options
def gpu_inventory_command(
    config_path: Path, var_args: tuple[str, ...], vars_file: Path | None, provider: str | None
) -> int:
    """Stock of each configured GPU in each configured datacenter; exit 3 on stock-out."""
    deps = tool_deps()
    loaded = load_config(deps, config_path, var_args, vars_file)
    return gpu_inventory(loaded=loaded, provider=provider, deps=deps)


@click.command("estimate")
@click.argument("config_path", metavar="CONFIG", type=click.Path(path_type=Path, dir_okay=False))
@template_var_options
@_provider_override_option
@verbosity_options
def estimate(
    config_path: Path, var_args: tuple[str, ...], vars_file: Path | None, provider: str | None
) -> int:
    """Pick the GPU `run` would pick, then forecast spend at the timeout and runtime at the cap."""
    deps = tool_deps()
    loaded = load_config(deps, config_path, var_args, vars_file)
    return estimate_job(loaded=loaded, provider=provider, deps=deps)
