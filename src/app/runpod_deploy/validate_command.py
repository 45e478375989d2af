"""`runpod-deploy validate`: everything a run would check before a pod exists, and no more.

Always: strict parse (every problem at once, with file:line), `--cost-cap-usd` /
`--max-runtime-minutes` overrides, the $HOME project_root guard, eager rendering of every
template with the given `--var`/`--vars-file`, the budget rule, every secret's source present
(environment variable set, file there), and a warning when a network volume is paired with
several datacenters (the run goes to the volume's). Opt-ins: `--check-local` (required_paths exist), `--scan-consumer`,
`--check-availability` and `--check-image-registry` (network; honest "skipped" when this
process has no provider access), `--all` for every opt-in.
The verdict goes to stdout (`ok: <config>`); notes and warnings go to stderr.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import click

from pegboard.app.runpod_deploy.cli_options import (
    config_path_option,
    template_var_options,
    verbosity_options,
)
from pegboard.app.runpod_deploy.job_loading import LoadedJob, load_job, merge_cli_vars
from pegboard.domain.errors import ConfigError, ConfigProblem, PegboardError
from pegboard.domain.gpujob.network_volume import several_datacenters_warning
from pegboard.domain.gpujob.secret_sources import missing_secret_sources
from pegboard.domain.gpujob.spec import Provider

logger = logging.getLogger(__name__)


@click.command("validate")
@config_path_option("The job config (YAML, schema_version 2).")
@template_var_options
@click.option(
    "--cost-cap-usd", type=float, help="Validate with this cost cap instead of budget.cost_cap_usd."
)
@click.option(
    "--max-runtime-minutes",
    type=int,
    help="Validate with this runtime instead of budget.max_runtime_minutes.",
)
@click.option("--check-local", is_flag=True, help="Check that local.required_paths exist.")
@click.option(
    "--scan-consumer", is_flag=True, help="Scan pyproject.toml and staged files for known hazards."
)
@click.option(
    "--check-availability",
    is_flag=True,
    help="Ask the provider whether a configured GPU is in stock (network).",
)
@click.option(
    "--check-image-registry",
    is_flag=True,
    help="Check that pod.image exists on Docker Hub (network).",
)
@click.option(
    "--skip-registry-check", is_flag=True, help="With --all: leave out the registry check."
)
@click.option("--all", "check_all", is_flag=True, help="Every opt-in check.")
@verbosity_options
def validate(
    config_path: Path,
    var_args: tuple[str, ...],
    vars_file: Path | None,
    cost_cap_usd: float | None,
    max_runtime_minutes: int | None,
    check_local: bool,
    scan_consumer: bool,
    check_availability: bool,
    check_image_registry: bool,
    skip_registry_check: bool,
    check_all: bool,
) -> int:
    """Check a config without creating anything: parse, render, budget, and opt-in checks."""
    # Reads local files only: plain seams, no dependency-injector import (see wiring.py).
    from pegboard.app.runpod_deploy.wiring import client_side

    container = client_side()
    cli_vars = merge_cli_vars(var_args, vars_file)
    loaded = load_job(
        config_path=config_path,
        read_document=container.read_document(),
        cli_vars=cli_vars,
        home=container.home(),
        now=container.utc_now(),
        unique_suffix=container.random_hex(),
        cost_cap_usd=cost_cap_usd,
        max_runtime_minutes=max_runtime_minutes,
    )
    logger.info(loaded.budget.summary())
    _check_secret_sources(loaded, container.environ())
    warning = several_datacenters_warning(loaded.spec)
    if warning is not None:
        logger.warning("[validate] %s", warning)
    if check_local or check_all:
        _check_required_paths(loaded)
    if scan_consumer or check_all:
        from pegboard.app.runpod_deploy.consumer_scan import scan_consumer as scan

        for finding in scan(loaded.job):
            logger.warning("[scan-consumer] %s", finding)
    if check_availability or check_all:
        _check_availability(loaded, container)
    if check_image_registry or (check_all and not skip_registry_check):
        logger.warning(
            "[check-image-registry] skipped: needs network access to the image registry, "
            "which this build does not use; pod.image was not checked"
        )
    click.echo(f"ok: {config_path} (job {loaded.job.job_name})")
    return 0


def _check_required_paths(loaded: LoadedJob) -> None:
    document = loaded.document
    problems = []
    for index, path in enumerate(loaded.job.required_paths):
        if not os.path.exists(path):
            key = ("local", "required_paths", index)
            problems.append(
                ConfigProblem(
                    source=document.source,
                    line=document.line_of(key),
                    path=f"local.required_paths[{index}]",
                    message=f"does not exist: {path}",
                )
            )
    if problems:
        raise ConfigError(problems)
    logger.info("[check-local] %d required path(s) present", len(loaded.job.required_paths))


def _check_secret_sources(loaded: LoadedJob, environ: Any) -> None:
    """Each secret's environment variable set and file present, as `run` will need them."""
    document = loaded.document
    missing = missing_secret_sources(
        loaded.job.secrets, is_set=lambda name: name in environ, is_file=os.path.isfile
    )
    if missing:
        raise ConfigError(
            [
                ConfigProblem(
                    source=document.source,
                    line=document.line_of(("secrets", item.index)),
                    path=f"secrets[{item.index}]",
                    message=item.message,
                )
                for item in missing
            ]
        )


def _check_availability(loaded: LoadedJob, container: Any) -> None:
    pod = loaded.spec.pod
    if pod.provider is Provider.LOCAL:
        logger.info("[check-availability] provider local: this machine is the pod")
        return
    cloud_provider = getattr(container, "gpu_cloud", None)
    if cloud_provider is None:
        logger.warning("[check-availability] skipped: needs RunPod API access (no GpuCloud here)")
        return
    try:
        cloud = cloud_provider()
        stock = cloud.gpu_availability(
            gpu_ids=list(pod.gpu_order),
            datacenter_ids=list(pod.datacenters),
            cloud_type=str(pod.cloud_type),
        )
    except PegboardError as exc:
        logger.warning("[check-availability] skipped: needs provider access (%s)", exc)
        return
    available = [s for s in stock if s.available]
    for entry in stock:
        logger.info(
            "[check-availability] %s in %s: %s", entry.gpu_id, entry.datacenter_id, entry.stock
        )
    if not available:
        raise PegboardError(
            f"{loaded.document.source}: pod.gpu_order: no configured GPU is in stock in "
            f"{', '.join(pod.datacenters)} ({pod.cloud_type})"
        )
