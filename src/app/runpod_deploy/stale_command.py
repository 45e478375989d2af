"""`runpod-deploy ls-stale`: stopped pods that still bill their disk, and dangling pointers.

    runpod-deploy ls-stale [--json] [--provider runpod|local]

Read-only. One list call: every EXITED pod of the account with its volume size, how long ago it
stopped, and its storage cost at 0.10 $/GB-month ($/day, $/mo), then a TOTAL line; then this
user's state files whose pod no longer exists ("dangling": safe to delete). 0.8.4 aged pods by
uptimeSeconds, which is 0 for every EXITED pod (its §17.13); the age here is from the stop.
The local provider's disk is this machine's, so its cost column is 0. Exit 0 (1 if the provider
fails, 2 for a usage error or a provider not available in this build).
"""

from __future__ import annotations

import json
import logging

import click

from pegboard.app.runpod_deploy.cli_options import verbosity_options
from pegboard.domain.gpujob.stale import stale_json, stale_report, stale_table, storage_rate

from .pod_tools import PROVIDERS, PodToolDeps, cloud_for_flag, tool_deps, user_pointers

logger = logging.getLogger(__name__)


def list_stale(*, provider: str, as_json: bool, deps: PodToolDeps) -> int:
    cloud = cloud_for_flag(deps, provider)
    report = stale_report(
        pods=cloud.list_pods(),
        pointers=user_pointers(deps.home),
        provider=provider,
        now=deps.clock.now(),
        usd_per_gb_month=storage_rate(provider),
    )
    if as_json:
        deps.out(json.dumps(stale_json(report), indent=2))
        return 0
    if report.pods:
        for line in stale_table(report):
            deps.out(line)
        logger.info(
            "release one: runpod-deploy cleanup --state-file <path> --mode delete; "
            "all of yours: runpod-deploy cleanup --all-stopped --provider %s",
            provider,
        )
    else:
        logger.info("no stopped pods (%s)", provider)
    if report.dangling:
        if report.pods:
            deps.out("")
        deps.out("dangling state files (their pod is gone; safe to delete):")
        for pointer in report.dangling:
            deps.out(f"  {pointer.state_file}  (pod {pointer.pod_id})")
    return 0


@click.command("ls-stale")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    default="runpod",
    show_default=True,
    help="Whose pods to list.",
)
@verbosity_options
def ls_stale(as_json: bool, provider: str) -> int:
    """List stopped pods that still bill their disk, with a TOTAL, and dangling state files."""
    return list_stale(provider=provider, as_json=as_json, deps=tool_deps())
