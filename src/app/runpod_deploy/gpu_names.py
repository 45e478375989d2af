"""GPU names no catalog lists: a typo, not a stock-out (`run`, `gpu-inventory` and `validate
--check-availability` all ask here).

The provider's catalog is every GPU type it prices (any cloud type) and every GPU type its
datacenters list. A `pod.gpu_order` entry in neither is a config error naming its key and the
closest names (exit 2), where RunPod itself would only ever answer "no stock". A provider
that answers with no catalog at all (the local and ssh providers, a failed call) is not
checked: the stock answer stays the only word.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pegboard.domain.errors import ConfigError, ConfigProblem, PortError

if TYPE_CHECKING:  # annotations only: validate must not import the ports (startup)
    from pegboard.domain.documents import SourceDocument
    from pegboard.domain.gpujob.spec import PodSpec
    from pegboard.domain.ports.gpu_cloud import GpuCloud, GpuStock

logger = logging.getLogger(__name__)

CLOSEST = 3


def gpu_catalog(cloud: GpuCloud, pod: PodSpec, *, listed: bool) -> frozenset[str]:
    """Every GPU type id the provider knows (empty: no catalog, or it could not be read).

    `listed`: the provider has a catalog (ProviderPlugin.gpu_catalog); on a machine you
    already have (local, ssh) a "GPU type" is a label."""
    if not listed:
        return frozenset()
    try:
        priced = cloud.gpu_prices(cloud_type="ALL")
        stocked = cloud.datacenter_stock(
            datacenter_ids=list(pod.datacenters), cloud_type=str(pod.cloud_type)
        )
    except PortError as exc:
        logger.debug("GPU catalog unavailable (%s): GPU names not checked", exc)
        return frozenset()
    return frozenset(priced) | {entry.gpu_id for entry in stocked}


def unknown_gpu_message(name: str, catalog: frozenset[str]) -> str:
    import difflib  # only for a name no catalog lists: a run does not import it (~2 ms)

    close = difflib.get_close_matches(name, sorted(catalog), n=CLOSEST, cutoff=0.5)
    if not close:  # difflib's ratio is case-sensitive: compare folded too
        folded = {gpu.casefold(): gpu for gpu in catalog}
        close = [
            folded[match]
            for match in difflib.get_close_matches(name.casefold(), sorted(folded), n=CLOSEST)
        ]
    hint = f"; closest: {', '.join(close)}" if close else ""
    return (
        f"unknown GPU type {name!r}: no GPU catalog lists it{hint} "
        "(all names: runpod-deploy gpu-prices)"
    )


def unknown_gpu_problems(
    names: Sequence[str], catalog: frozenset[str], document: SourceDocument
) -> list[ConfigProblem]:
    """One problem per `pod.gpu_order[i]` no catalog lists (none when there is no catalog)."""
    if not catalog:
        return []
    return [
        ConfigProblem(
            source=document.source,
            line=document.line_of(("pod", "gpu_order", index)),
            path=f"pod.gpu_order[{index}]",
            message=unknown_gpu_message(name, catalog),
        )
        for index, name in enumerate(names)
        if name not in catalog
    ]


def refuse_unknown_gpus(
    cloud: GpuCloud,
    pod: PodSpec,
    document: SourceDocument,
    *,
    stock: Sequence[GpuStock],
    prices: Mapping[str, float] | None = None,
    listed: bool = True,
) -> None:
    """ConfigError naming each gpu_order entry no catalog lists. A name in stock or priced in
    what the caller already fetched is known; only when one is neither is the catalog read."""
    seen = set(prices or ()) | {entry.gpu_id for entry in stock if entry.available}
    if all(name in seen for name in pod.gpu_order):
        return
    catalog = gpu_catalog(cloud, pod, listed=listed)
    if not catalog:
        return  # no catalog to tell a typo from a stock-out: the stock answer stands
    problems = unknown_gpu_problems(pod.gpu_order, catalog | seen, document)
    if problems:
        raise ConfigError(problems)
