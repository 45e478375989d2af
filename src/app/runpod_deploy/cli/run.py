"""`runpod-deploy run`: flags -> RunRequest -> run_job(request, deps from the composition root),
with SIGTERM treated like Ctrl-C.

stdout carries the job's log as raw bytes, chunk by chunk (and `RUN_DIR=<abs>` first with
--print-run-dir); every message of the tool goes to stderr. Exit: 0 success (or dry run),
1 the job failed, 2 usage/config error, 130 interrupted.
"""

from __future__ import annotations

from pathlib import Path

import click

from pegboard.app.runpod_deploy.job_loading import merge_cli_vars
from pegboard.app.runpod_deploy.run_job import run_job
from pegboard.app.runpod_deploy.run_types import RunRequest
from pegboard.app.runpod_deploy.seams import client_side_run_deps
from pegboard.app.runpod_deploy.sigterm import sigterm_as_interrupt
from pegboard.app.shared.cli.examples import examples
from pegboard.domain.errors import UsageError
from pegboard.domain.input_limits import MAX_CONFIG_NUMBER

from .options import config_path_option, template_var_options, verbosity_options


@examples(
    "runpod-deploy run --config job.yaml",
    "# stdout is the job log; the run directory first, for scripts",
    "runpod-deploy run --config job.yaml --print-run-dir --var seed=7",
    "runpod-deploy run --config job.yaml --offline-dry-run",
)
@click.command("run")
@config_path_option("The job's YAML config.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Walk every phase without creating anything (read-only provider queries).",
)
@click.option(
    "--offline-dry-run",
    is_flag=True,
    help="Like --dry-run with no external call at all: no provider, git or secrets.",
)
@template_var_options
@click.option("--print-run-dir", is_flag=True, help="Print RUN_DIR=<abs path> on stdout first.")
@click.option("--cost-cap-usd", type=float, help="Override budget.cost_cap_usd.")
@click.option("--max-runtime-minutes", type=int, help="Override budget.max_runtime_minutes.")
@click.option(
    "--ssh-ready-timeout-sec",
    type=click.IntRange(min=1),
    help="Override budget.ssh_ready_timeout_sec.",
)
@click.option(
    "--force-fresh",
    is_flag=True,
    help="With lifecycle recycle: delete the paused pod and create a fresh one.",
)
@click.option("--gpu-id", help="Use this GPU (needs --datacenter-id); skips the stock lookup.")
@click.option("--datacenter-id", help="Use this datacenter (needs --gpu-id).")
@click.option(
    "--max-gpu-price",
    "max_gpu_price",
    type=float,
    help="Skip GPUs whose known price is above this many USD per hour.",
)
@verbosity_options
def run(
    config_path: Path,
    dry_run: bool,
    offline_dry_run: bool,
    var_args: tuple[str, ...],
    vars_file: Path | None,
    print_run_dir: bool,
    cost_cap_usd: float | None,
    max_runtime_minutes: int | None,
    ssh_ready_timeout_sec: int | None,
    force_fresh: bool,
    gpu_id: str | None,
    datacenter_id: str | None,
    max_gpu_price: float | None,
) -> int:
    """Provision a pod, run the job, pull artifacts, apply the lifecycle action."""
    if bool(gpu_id) != bool(datacenter_id):
        raise UsageError("--gpu-id and --datacenter-id must be given together")
    if max_gpu_price is not None and not 0 < max_gpu_price <= MAX_CONFIG_NUMBER:  # nan, inf
        raise UsageError(f"--max-gpu-price must be > 0 and finite, got {max_gpu_price}")
    cli_vars = merge_cli_vars(var_args, vars_file)
    request = RunRequest(
        config_path=config_path,
        cli_vars=cli_vars,
        dry_run=dry_run or offline_dry_run,
        offline=offline_dry_run,
        print_run_dir=print_run_dir,
        cost_cap_usd=cost_cap_usd,
        max_runtime_minutes=max_runtime_minutes,
        ssh_ready_timeout_sec=ssh_ready_timeout_sec,
        force_fresh=force_fresh,
        gpu_id=gpu_id,
        datacenter_id=datacenter_id,
        max_gpu_price_usd=max_gpu_price,
    )
    if offline_dry_run:  # never leaves this machine: no dependency-injector (~100 ms)
        deps = client_side_run_deps()
    else:
        from pegboard.app.runpod_deploy.container import current_container

        deps = current_container().run_deps()
    with sigterm_as_interrupt():
        result = run_job(request, deps)
    return result.exit_code
