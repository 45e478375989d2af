"""GPU stock, prices and forecasts (`gpu-list`, `gpu-prices`, `gpu-inventory`, `estimate`),
over GpuCloud.

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

import attrs

from pegboard.app.shared.output import render
from pegboard.domain.errors import PortError
from pegboard.domain.gpujob.inventory import (
    build_inventory,
    by_stock,
    forecast,
    gpu_list_lines,
    inventory_lines,
    price_lines,
)
from pegboard.domain.gpujob.provisioning import plan_candidates
from pegboard.domain.ports.gpu_cloud import GpuCloud, GpuStock

from .exit_codes import EXIT_FAILED, EXIT_OK, EXIT_STOCKOUT
from .gpu_names import refuse_unknown_gpus
from .job_loading import LoadedJob
from .pod_access import PodCommandDeps, cloud_for_flag

logger = logging.getLogger(__name__)


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
    deps: PodCommandDeps,
    output: str = "table",
) -> int:
    cloud = cloud_for_flag(deps, provider)
    entries = cloud.datacenter_stock(datacenter_ids=[datacenter], cloud_type=cloud_type)
    prices: dict[str, float] | None = None
    if with_prices:
        prices = _prices(cloud, cloud_type=cloud_type, spot=spot) or None
        if prices is None:
            logger.info("no GPU prices known (%s): stock only", provider)
    if output != "table":
        rows = [
            {
                "gpu_id": entry.gpu_id,
                "stock": entry.stock,
                "usd_per_hour": (prices or {}).get(entry.gpu_id),
            }
            for entry in by_stock(entries)
        ]
        _out(deps, render(rows, output))
        return EXIT_OK
    if not entries:
        logger.warning("datacenter %s lists no GPU (%s, %s)", datacenter, provider, cloud_type)
        return EXIT_OK
    for line in gpu_list_lines(entries, prices):
        deps.out(line)
    return EXIT_OK


def _out(deps: PodCommandDeps, rendered: str) -> None:
    """A rendered JSON/YAML document, as the result lines it is made of."""
    deps.out(rendered.rstrip("\n"))


def list_prices(
    *, cloud_type: str, spot: bool, provider: str, deps: PodCommandDeps, output: str = "table"
) -> int:
    prices = cloud_for_flag(deps, provider).gpu_prices(cloud_type=cloud_type, spot=spot)
    if not prices:
        logger.error("no GPU prices known (provider %s, %s)", provider, cloud_type)
        return EXIT_FAILED
    if output != "table":
        cheapest_first = sorted(prices.items(), key=lambda item: (item[1], item[0]))
        rows = [{"gpu_id": gpu, "usd_per_hour": price} for gpu, price in cheapest_first]
        _out(deps, render(rows, output))
        return EXIT_OK
    for line in price_lines(prices):
        deps.out(line)
    return EXIT_OK


def _config_cloud(deps: PodCommandDeps, loaded: LoadedJob, override: str | None) -> GpuCloud:
    """`--provider` if given, else the config's pod.provider (unavailable: usage error)."""
    if override is not None:
        return cloud_for_flag(deps, override)
    return deps.backend_for(str(loaded.spec.pod.provider)).cloud


def gpu_inventory(
    *, loaded: LoadedJob, provider: str | None, deps: PodCommandDeps, output: str = "table"
) -> int:
    pod = loaded.spec.pod
    cloud = _config_cloud(deps, loaded, provider)
    cloud_type = str(pod.cloud_type)
    stock = cloud.gpu_availability(
        gpu_ids=pod.gpu_order, datacenter_ids=pod.datacenters, cloud_type=cloud_type
    )
    listed_ids = deps.providers.has_gpu_catalog(cloud.provider)
    refuse_unknown_gpus(cloud, pod, loaded.document, stock=stock, listed=listed_ids)  # a typo
    listed: list[GpuStock] = []
    try:
        listed = cloud.datacenter_stock(datacenter_ids=pod.datacenters, cloud_type=cloud_type)
    except PortError as exc:
        logger.warning("no widening hint: datacenter listing failed (%s)", exc)
    inventory = build_inventory(
        gpu_order=pod.gpu_order, datacenters=pod.datacenters, stock=stock, listed=listed
    )
    if output != "table":
        summary = {**attrs.asdict(inventory), "any_available": inventory.any_available}
        _out(deps, render(summary, output))
    else:
        for line in inventory_lines(inventory):
            deps.out(line)
    if not inventory.any_available:
        logger.error(
            "stock-out: no configured GPU is in stock in any configured datacenter; "
            "widen gpu_order or datacenters (see the widening hints)"
        )
        return EXIT_STOCKOUT
    return EXIT_OK


def estimate_job(
    *, loaded: LoadedJob, provider: str | None, deps: PodCommandDeps, output: str = "table"
) -> int:
    """The live selection `run` would make, then the spend it allows."""
    pod = loaded.spec.pod
    cloud = _config_cloud(deps, loaded, provider)
    stock = cloud.gpu_availability(
        gpu_ids=pod.gpu_order, datacenter_ids=pod.datacenters, cloud_type=str(pod.cloud_type)
    )
    listed_ids = deps.providers.has_gpu_catalog(cloud.provider)
    refuse_unknown_gpus(cloud, pod, loaded.document, stock=stock, listed=listed_ids)
    plan = plan_candidates(
        gpu_order=pod.gpu_order,
        datacenters=pod.datacenters,
        stock=stock,
        prices=_prices(cloud, cloud_type=str(pod.cloud_type), spot=pod.spot),
        max_gpu_price_usd=None,
    )
    if not plan.candidates:
        logger.error("%s", plan.no_candidate_message())
        return EXIT_FAILED
    chosen = forecast(candidate=plan.candidates[0], budget=loaded.spec.budget)
    if output != "table":
        _out(deps, render(attrs.asdict(chosen), output))
        return EXIT_OK
    for line in chosen.lines():
        deps.out(line)
    return EXIT_OK
