"""The pod commands: `cleanup`, `ls-stale` and `logs` (flags -> request -> use case).

Each asks the composition root for its dependencies (`pod_command_deps()`) and hands them to
the use case in pod_release.py, stale_pods.py or log_tail.py.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from pegboard.app.runpod_deploy.pod_access import PodCommandDeps, load_config
from pegboard.app.runpod_deploy.pod_release import (
    MODES,
    BulkCleanup,
    PointerCleanup,
    cleanup_all_stopped,
    cleanup_pod_id,
    cleanup_pointer,
)
from pegboard.app.runpod_deploy.seams import provider_names
from pegboard.app.runpod_deploy.stale_pods import list_stale
from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import output_option
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.spec import DEFAULT_PROVIDER

from .options import config_path_option, template_var_options, verbosity_options

logger = logging.getLogger(__name__)


def pod_command_deps() -> PodCommandDeps:
    """The pod commands' dependencies, from the composition root."""
    from pegboard.app.runpod_deploy.container import current_container

    return current_container().pod_command_deps()


@examples(
    "# the command printed for a pod left behind",
    "runpod-deploy cleanup --state-file ~/.local/state/runpod-deploy/runs/<run>.json --pod-id <id>",
    "runpod-deploy cleanup --config job.yaml --mode stop",
    "runpod-deploy cleanup --all-stopped --dry-run",
)
@click.command("cleanup")
@click.option(
    "--state-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The pod pointer `run` wrote (printed by `run` when it leaves a pod).",
)
@config_path_option(
    "Find the state file through this config (rendered like `run`).", required=False
)
@template_var_options
@click.option("--all-stopped", is_flag=True, help="Delete your stopped (EXITED) pods in bulk.")
@click.option(
    "--pod-id",
    default=None,
    metavar="ID",
    help="The pod to release: with --state-file, refuse unless the file names it; "
    "alone (with --provider), that pod.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help="What to do with the pod: preserve, stop or delete (default delete).",
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask before a bulk delete.")
@click.option("--dry-run", is_flag=True, help="Say what would be done; change nothing.")
@click.option(
    "--provider",
    type=click.Choice(provider_names()),
    default=None,
    help="With --all-stopped or --pod-id alone: whose pods (default " + DEFAULT_PROVIDER + ").",
)
@click.option(
    "--name-prefix",
    "name_prefixes",
    multiple=True,
    metavar="P",
    help="With --all-stopped: also pods whose name starts with P (repeatable).",
)
@click.option(
    "--all-owners", is_flag=True, help="With --all-stopped: every stopped pod of the account."
)
@click.option(
    "--include-recycled",
    is_flag=True,
    help="With --all-stopped: also pods a state file keeps for recycle (or for an unknown reason).",
)
@verbosity_options
def cleanup(
    state_file: Path | None,
    config_path: Path | None,
    var_args: tuple[str, ...],
    vars_file: Path | None,
    all_stopped: bool,
    pod_id: str | None,
    mode: str | None,
    yes: bool,
    dry_run: bool,
    provider: str | None,
    name_prefixes: tuple[str, ...],
    all_owners: bool,
    include_recycled: bool,
) -> int:
    """Release a pod `run` left behind (--state-file [--pod-id] / --config / --pod-id), or
    your stopped pods."""
    chosen = [
        flag
        for flag, on in (
            ("--state-file", state_file is not None),
            ("--config", config_path is not None),
            ("--all-stopped", all_stopped),
        )
        if on
    ]
    if pod_id is not None and not pod_id.strip():
        raise UsageError("--pod-id: empty")
    if len(chosen) > 1 or (not chosen and pod_id is None):
        raise UsageError(
            "cleanup needs exactly one of --state-file, --config, --pod-id or --all-stopped"
            + (f" (got {', '.join(chosen)})" if chosen else "")
        )
    if pod_id is not None and (all_stopped or config_path is not None):
        raise UsageError("--pod-id goes with --state-file, or alone with --provider")
    if (var_args or vars_file) and config_path is None:
        raise UsageError("--var and --vars-file go with --config")
    deps = pod_command_deps()
    if all_stopped:
        if mode not in (None, "delete"):
            raise UsageError(f"--mode {mode}: --all-stopped only deletes")
        return cleanup_all_stopped(
            BulkCleanup(
                provider=provider or DEFAULT_PROVIDER,
                yes=yes,
                dry_run=dry_run,
                name_prefixes=name_prefixes,
                all_owners=all_owners,
                include_recycled=include_recycled,
            ),
            deps,
        )
    if not chosen:  # --pod-id alone
        if name_prefixes or all_owners or include_recycled:
            raise UsageError(
                "--name-prefix, --all-owners and --include-recycled go with --all-stopped"
            )
        assert pod_id is not None
        return cleanup_pod_id(
            PointerCleanup(
                state_file=None, mode=mode or "delete", dry_run=dry_run, expect_pod_id=pod_id
            ),
            provider or DEFAULT_PROVIDER,
            deps,
        )
    bulk_only = [
        flag
        for flag, on in (
            ("--provider", provider is not None),
            ("--name-prefix", bool(name_prefixes)),
            ("--all-owners", all_owners),
            ("--include-recycled", include_recycled),
        )
        if on
    ]
    if bulk_only:
        raise UsageError(f"{bulk_only[0]} goes with --all-stopped (a state file names its pod)")
    if config_path is not None:
        loaded = load_config(deps, config_path, var_args, vars_file)
        state_file = Path(loaded.job.state_file)
        logger.info("state file of %s: %s", config_path, state_file)
    assert state_file is not None
    return cleanup_pointer(
        PointerCleanup(
            state_file=state_file, mode=mode or "delete", dry_run=dry_run, expect_pod_id=pod_id
        ),
        deps,
    )


@examples(
    "runpod-deploy ls-stale",
    "runpod-deploy ls-stale --provider local --json",
)
@click.command("ls-stale")
@output_option
@click.option(
    "--provider",
    type=click.Choice(provider_names()),
    default=DEFAULT_PROVIDER,
    show_default=True,
    help="Whose pods to list.",
)
@verbosity_options
def ls_stale(output: str, provider: str) -> int:
    """List pods that still bill (stopped and running) with a TOTAL and the command that
    releases each, then dangling state files."""
    return list_stale(provider=provider, output=output, deps=pod_command_deps())


@examples(
    "runpod-deploy logs --config job.yaml",
    "runpod-deploy logs --config job.yaml --lines 50 --no-follow",
)
@click.command("logs")
@config_path_option("The job's YAML config (its state file names the pod).")
@template_var_options
@click.option(
    "--lines",
    type=click.IntRange(min=0),
    default=200,
    show_default=True,
    help="How many lines of the log to print first.",
)
@click.option("--no-follow", is_flag=True, help="Print the last lines and exit.")
@verbosity_options
def logs(
    config_path: Path,
    var_args: tuple[str, ...],
    vars_file: Path | None,
    lines: int,
    no_follow: bool,
) -> int:
    """Print the job log of the config's pod, then follow it (Ctrl-C to stop)."""
    from pegboard.app.runpod_deploy.log_tail import LogsRequest, tail_logs

    request = LogsRequest(
        config_path=config_path,
        var_args=var_args,
        vars_file=vars_file,
        lines=lines,
        follow=not no_follow,
    )
    return tail_logs(request, pod_command_deps())
