"""`runpod-deploy validate` (client-side: plain seams, no dependency-injector, so it starts
fast). The checks are config_checks.py; the verdict goes to stdout (`ok: <config>`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pegboard.app.runpod_deploy import seams
from pegboard.app.runpod_deploy.config_checks import ValidateRequest, check_config
from pegboard.app.runpod_deploy.exit_codes import EXIT_OK
from pegboard.app.runpod_deploy.job_loading import merge_cli_vars
from pegboard.app.shared import seams as shared_seams
from pegboard.app.shared.cli.examples import examples

from .options import config_path_option, template_var_options, verbosity_options

if TYPE_CHECKING:
    from pegboard.domain.ports.gpu_cloud import GpuCloud


def _provider_cloud(provider: str) -> GpuCloud:
    """`--check-availability` asks the config's provider (RunPod: RUNPOD_API_KEY,
    RUNPOD_API_BASE_URL) directly."""
    return seams.provider_gpu_cloud(provider, os.environ)


@examples(
    "runpod-deploy validate --config job.yaml",
    "runpod-deploy validate --config job.yaml --var seed=7 --cost-cap-usd 4 --all",
)
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
    help="Not performed by this build (it has no registry client): prints `skipped`, "
    "never a pass. Accepted so 0.8.4 scripts keep working.",
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
    request = ValidateRequest(
        config_path=config_path,
        cli_vars=merge_cli_vars(var_args, vars_file),
        cost_cap_usd=cost_cap_usd,
        max_runtime_minutes=max_runtime_minutes,
        check_local=check_local or check_all,
        scan_consumer=scan_consumer or check_all,
        check_availability=check_availability or check_all,
        check_image_registry=check_image_registry or (check_all and not skip_registry_check),
    )
    loaded = check_config(
        request,
        read_document=shared_seams.read_yaml_document,
        providers=seams.provider_registry(),
        home=shared_seams.home_dir(os.environ),
        now=shared_seams.utc_now(shared_seams.system_clock()),
        unique_suffix=shared_seams.random_hex(),
        environ=os.environ,
        gpu_cloud=_provider_cloud,
    )
    click.echo(f"ok: {config_path} (job {loaded.job.job_name})")
    return EXIT_OK
