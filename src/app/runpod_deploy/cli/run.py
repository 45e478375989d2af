"""`runpod-deploy run`: flags -> RunRequest -> run_job(request, deps from the composition root),
with SIGTERM treated like Ctrl-C.

stdout carries the job's log as raw bytes, chunk by chunk (and `RUN_DIR=<abs>` first with
--print-run-dir); every message of the tool goes to stderr. With `-o json` the log and RUN_DIR go
to stderr too and stdout holds one JSON summary, printed at the end (run_summary.py). Exit: 0 success (or dry run),
1 the job failed, 2 usage/config error, 130 interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pegboard.app.runpod_deploy.job_loading import merge_cli_vars
from pegboard.app.runpod_deploy.run_job import run_job
from pegboard.app.runpod_deploy.run_types import RunRequest
from pegboard.app.runpod_deploy.sigterm import sigterm_as_interrupt
from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import stream_output_option
from pegboard.domain.errors import UsageError
from pegboard.domain.input_limits import MAX_CONFIG_NUMBER

from .options import config_path_option, template_var_options, verbosity_options

if TYPE_CHECKING:  # `run --help` does not load dependency-injector
    from pegboard.app.runpod_deploy.container import RunpodDeployContainer


@examples(
    "runpod-deploy run --config job.yaml",
    "# stdout is the job log; the run directory first, for scripts",
    "runpod-deploy run --config job.yaml --print-run-dir --var seed=7",
    "runpod-deploy run --config job.yaml --offline-dry-run",
    "# for CI: the job log on stderr, a JSON summary on stdout at the end",
    "runpod-deploy run --config job.yaml -o json > summary.json",
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
@stream_output_option
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
    output: str,
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
    from pegboard.app.runpod_deploy.container import current_container

    container = current_container()  # an offline dry run asks no provider of it
    if output == "json":
        return _run_with_summary(request, container)
    deps = container.run_deps()
    with sigterm_as_interrupt():
        result = run_job(request, deps)
    return result.exit_code


def _run_with_summary(request: RunRequest, container: RunpodDeployContainer) -> int:
    """`-o json`: the job's output and RUN_DIR= on stderr, one JSON summary on stdout at the end,
    on every path that reaches the command (a refused config too, then re-raised for its line)."""
    import json

    from pegboard.app.runpod_deploy.cli import EXIT_CODES
    from pegboard.app.runpod_deploy.run_summary import refused_summary, run_summary
    from pegboard.app.shared.error_exit_codes import exit_code_for

    stderr = container.tool_output()

    def to_stderr(line: str) -> None:
        stderr(line.encode() + b"\n")

    deps = container.run_deps(job_output=stderr, result_line=to_stderr)
    try:
        with sigterm_as_interrupt():
            result = run_job(request, deps)
    except BaseException as exc:
        code = exit_code_for(exc, EXIT_CODES)
        if isinstance(exc, KeyboardInterrupt):
            code = EXIT_CODES.interrupted
        click.echo(json.dumps(refused_summary(code if code is not None else 1, exc), indent=2))
        raise
    click.echo(json.dumps(run_summary(result), indent=2))
    return result.exit_code
