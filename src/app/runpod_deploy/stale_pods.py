"""Stale pods (`runpod-deploy ls-stale`): pods that still bill (stopped and running), and dangling pointers.

    runpod-deploy ls-stale [--json] [--provider NAME]   (a registered provider)

Read-only. One list call: every pod of the account that is not gone, stopped (EXITED) ones
first, with its status, volume size, age (since the stop; since creation when running) and
cost ($/day, $/mo: volume disk at 0.20 $/GB-month stopped, 0.10 running, plus the GPU rate when running), then a TOTAL
line; then one `release <pod>: <command>` line per pod, the command that deletes exactly that
pod; then this user's state files whose pod no longer exists ("dangling": safe to delete).
0.8.4 aged pods by uptimeSeconds, which is 0 for every EXITED pod (its §17.13), and listed no
running pod (a run killed during monitor leaves one). The disks of a provider that rents
nothing (ProviderPlugin.billed False: local, ssh, kubernetes) cost 0 here, and its running pods
only what they report themselves (kubernetes: price_per_hour); a provider that must be told where its
pods are (ssh) is listed at every place this user's state files recorded.
Exit 0 (1 if the provider fails, 2 for a usage error or a provider not available in this build).
"""

from __future__ import annotations

import logging

from pegboard.app.shared.output import render
from pegboard.domain.gpujob.stale import (
    release_lines,
    stale_json,
    stale_report,
    stale_table,
    storage_rates,
)

from .pod_access import PodCommandDeps, cloud_for_flag
from .pod_pointers import user_pointers
from .state_paths import state_paths

logger = logging.getLogger(__name__)


def list_stale(*, provider: str, output: str, deps: PodCommandDeps) -> int:
    """The table (and the release commands) or, with `-o json|yaml`, one object: pods, total,
    dangling pointers."""
    cloud = cloud_for_flag(deps, provider, listing=True)
    report = stale_report(
        pods=cloud.list_pods(),
        pointers=user_pointers(state_paths(deps.home, deps.environ)),
        provider=provider,
        now=deps.clock.now(),
        volume_rates=storage_rates(billed=deps.providers.billed(provider)),
    )
    if output != "table":
        deps.out(render(stale_json(report), output).rstrip("\n"))
        return 0
    if report.pods:
        for line in stale_table(report):
            deps.out(line)
        deps.out("")
        for line in release_lines(report):
            deps.out(line)
        logger.info(
            "all of your stopped ones: runpod-deploy cleanup --all-stopped --provider %s",
            provider,
        )
    else:
        logger.info("no pods left (%s)", provider)
    if report.dangling:
        if report.pods:
            deps.out("")
        deps.out("dangling state files (their pod is gone, or was never created; safe to delete):")
        for pointer in report.dangling:
            deps.out(f"  {pointer.state_file}  (pod {pointer.pod_id or 'never created'})")
        logger.info(
            "remove one: runpod-deploy cleanup --state-file FILE; all of them (asks first): "
            "runpod-deploy cleanup --all-stopped --provider %s",
            provider,
        )
    return 0
