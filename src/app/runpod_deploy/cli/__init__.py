"""The `runpod-deploy` command: a click group whose subcommands (one module per group in this
package: run, validate, records, pods, gpu) are imported on first use.

Only the CLI decides exit codes (runpod-deploy 0.8.4 printed tracebacks instead), all of them
from exit_codes.py: an error maps to 1 (runtime failure), 2 (usage or config) or 130
(interrupted); a command may return its own documented code (`gpu-inventory` 3 on stock-out,
`cleanup --all-stopped` 4 when some deletes failed).
Expected errors print one line `runpod-deploy: <message>` on stderr, never a traceback.
The `run` and pod commands take their dependencies from container.py (dependency-injector);
`--help`, `validate`, `run --offline-dry-run` and the record readers use the plain seams only,
and stay fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from pegboard.app.runpod_deploy.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_STDOUT_CLOSED,
    EXIT_USAGE,
)
from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import CONTEXT_SETTINGS
from pegboard.app.shared.cli.version import version_option
from pegboard.app.shared.console import exit_now, run_group
from pegboard.app.shared.error_exit_codes import ErrorExitCodes
from pegboard.app.shared.lazy_group import LazyGroup

PROG = "runpod-deploy"

# name -> ("module:attribute", one-line help). A command's module is imported only when that
# command runs; `runpod-deploy --help` prints these lines without importing any of them.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "pegboard.app.runpod_deploy.cli.run:run",
        "Provision a pod, run the job, pull artifacts, apply the lifecycle action.",
    ),
    "validate": (
        "pegboard.app.runpod_deploy.cli.validate:validate",
        "Check a config (parse, render, budget) without creating anything.",
    ),
    "ls-runs": (
        "pegboard.app.runpod_deploy.cli.records:ls_runs",
        "List past runs of a project.",
    ),
    "manifest-summary": (
        "pegboard.app.runpod_deploy.cli.records:manifest_summary",
        "Summarise a manifest, or every manifest under --root.",
    ),
    "compare-runs": (
        "pegboard.app.runpod_deploy.cli.records:compare_runs",
        "Diff two runs; exit 1 if either failed.",
    ),
    "events": (
        "pegboard.app.runpod_deploy.cli.records:events",
        "Timeline of one run's events.",
    ),
    "events-query": (
        "pegboard.app.runpod_deploy.cli.records:events_query",
        "Search the events of every run.",
    ),
    "capture-env": (
        "pegboard.app.runpod_deploy.cli.records:capture_env",
        "Print git and lockfile facts of a project as JSON.",
    ),
    "cleanup": ("pegboard.app.runpod_deploy.cli.pods:cleanup", "Release pods left behind."),
    "ls-stale": ("pegboard.app.runpod_deploy.cli.pods:ls_stale", "List stopped pods, cost."),
    "logs": ("pegboard.app.runpod_deploy.cli.pods:logs", "Tail the job log of a pod."),
    "gpu-list": ("pegboard.app.runpod_deploy.cli.gpu:gpu_list", "GPU stock in a datacenter."),
    "gpu-prices": ("pegboard.app.runpod_deploy.cli.gpu:gpu_prices", "GPU prices per hour."),
    "gpu-inventory": (
        "pegboard.app.runpod_deploy.cli.gpu:gpu_inventory_command",
        "Stock of a config's GPUs; exit 3 on stock-out.",
    ),
    "estimate": ("pegboard.app.runpod_deploy.cli.gpu:estimate", "Forecast a config's cost."),
    "sandbox": (
        "pegboard.app.runpod_deploy.cli.sandbox:sandbox",
        "Serve a loopback RunPod API sandbox (for demos and tests) until interrupted.",
    ),
    "completion": (
        "pegboard.app.runpod_deploy.cli.completion:completion",
        "Print the shell completion script (bash, zsh or fish).",
    ),
}


@examples(
    "runpod-deploy validate --config examples/local/hello.yaml",
    "runpod-deploy run --config examples/local/hello.yaml --var greeting=hi",
    "# the runs of that config's project, then the latest one's timeline",
    "runpod-deploy ls-runs --project-root examples/local",
    "runpod-deploy events --project-root examples/local",
    "runpod-deploy ls-stale",
)
@click.group(cls=LazyGroup, lazy_commands=COMMANDS, context_settings=CONTEXT_SETTINGS)
@version_option(PROG, compatible_with="runpod-deploy 0.8.4")
def runpod_deploy() -> None:
    """Run a config-driven GPU job on a RunPod (or local) pod, and read its records back."""


EXIT_CODES = ErrorExitCodes(
    usage=EXIT_USAGE,
    interrupted=EXIT_INTERRUPTED,
    failure=EXIT_FAILED,
    stdout_refused=EXIT_FAILED,  # `> /dev/full`: one line
    stdout_closed=EXIT_STDOUT_CLOSED,  # `| head`: silent
)


def main(argv: Sequence[str] | None = None) -> None:
    """Run runpod-deploy and exit with the documented code (tests call this in-process)."""
    sys.exit(run_group(runpod_deploy, prog=PROG, argv=argv, codes=EXIT_CODES))


def console_main() -> None:
    """The `runpod-deploy` console script: main() without the interpreter's teardown."""
    exit_now(run_group(runpod_deploy, prog=PROG, argv=None, codes=EXIT_CODES))
