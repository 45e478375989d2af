"""The record commands: ls-runs, manifest-summary, compare-runs, events, events-query,
capture-env. Client-side: they read local files through run_history.py and the plain seams,
never the dependency-injector container (so they start fast). Results go to stdout; notes
and warnings go to stderr.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from pathlib import Path

import attrs
import click

from pegboard.app.runpod_deploy import seams
from pegboard.app.runpod_deploy.exit_codes import EXIT_FAILED, EXIT_OK
from pegboard.app.runpod_deploy.run_history import (
    RUNS_SUBDIR,
    load_manifest,
    read_events,
    read_manifest,
    run_dirs,
)
from pegboard.app.shared import seams as shared_seams
from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import output_option
from pegboard.app.shared.output import render
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob import forensics
from pegboard.domain.gpujob.forensics import EVENTS_FILENAME, MANIFEST_FILENAME

from .options import verbosity_options

logger = logging.getLogger(__name__)


def _existing_dir(path: Path, flag: str) -> Path:
    """A directory named on the command line; one that is not there is a usage error (2)."""
    if not path.is_dir():
        raise UsageError(f"{flag}: no such directory: {path}")
    return path


def _existing(command: str, paths: tuple[Path, ...]) -> None:
    """Manifests or run directories named on the command line must exist (else exit 2)."""
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise UsageError(f"{command}: no such manifest or run directory: {', '.join(missing)}")


def _now() -> datetime:
    return shared_seams.utc_now(shared_seams.system_clock())


@examples(
    "runpod-deploy ls-runs",
    "runpod-deploy ls-runs --project-root examples/local --limit 5",
    "runpod-deploy ls-runs -o json",
)
@click.command("ls-runs")
@click.option(
    "--project-root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Project whose artifacts/runpod/ to list.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the N most recent runs.")
@output_option
@verbosity_options
def ls_runs(project_root: Path, limit: int | None, output: str) -> int:
    """List past runs of a project, oldest first."""
    root = _existing_dir(project_root, "--project-root").resolve()
    found = run_dirs(root)
    if limit is not None:
        found = found[-limit:]
    rows = []
    for run_dir in found:
        manifest = read_manifest(run_dir)
        if manifest is not None:
            rows.append(forensics.run_row(run_dir.name, manifest))
    if output != "table":  # 0.8.4's --json list, or the same as YAML
        click.echo(render([row.as_json() for row in rows], output), nl=False)
    elif rows:
        click.echo(forensics.format_runs_table(rows))
    else:
        logger.info(
            "no runs found under %s (a run records under its config's project root, "
            "local.project_root from the config's folder: pass that with --project-root)",
            root / RUNS_SUBDIR,
        )
    return EXIT_OK


@examples(
    "runpod-deploy manifest-summary artifacts/runpod/20260517T120001.123456Z-3fa9c1",
    "runpod-deploy manifest-summary --root artifacts/runpod",
)
@click.command("manifest-summary")
@click.argument("manifest", required=False, type=click.Path(path_type=Path))
@click.option(
    "--root",
    type=click.Path(path_type=Path),
    help="Summarise every manifest under DIR, with totals.",
)
@output_option
@verbosity_options
def manifest_summary(manifest: Path | None, root: Path | None, output: str) -> int:
    """Summarise one manifest, or every manifest under --root with a TOTALS block."""
    if (manifest is None) == (root is None):
        raise UsageError("manifest-summary: give exactly one of MANIFEST or --root DIR")
    if manifest is not None:
        _existing("manifest-summary", (manifest,))
        data = load_manifest(manifest)
        if output != "table":  # the manifest itself
            click.echo(render(data, output), nl=False)
        else:
            click.echo(forensics.format_manifest_summary(data))
        return EXIT_OK
    assert root is not None
    paths = sorted(_existing_dir(root, "--root").rglob(MANIFEST_FILENAME))
    blocks, manifests, totals = [], [], forensics.Totals()
    for path in paths:
        found = read_manifest(path)
        if found is None:
            continue
        blocks.append(f"== {path} ==\n{forensics.format_manifest_summary(found)}")
        manifests.append({"manifest_path": str(path), **found})
        totals = totals.add(found)
    if output != "table":  # every manifest (with its path) and the totals
        summary = {"manifests": manifests, "totals": attrs.asdict(totals)}
        click.echo(render(summary, output), nl=False)
        return EXIT_OK
    if not blocks:
        logger.info("no manifests found under %s", root)
        return EXIT_OK
    click.echo("\n\n".join(blocks) + "\n")
    click.echo(totals.format())
    return EXIT_OK


@examples(
    "runpod-deploy compare-runs artifacts/runpod/<good> artifacts/runpod/<bad>",
)
@click.command("compare-runs")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@verbosity_options
def compare_runs(a: Path, b: Path) -> int:
    """Diff two runs (manifest files or run directories). Exit 1 if either failed or cannot
    be read, 2 if either is not there."""
    _existing("compare-runs", (a, b))
    first, second = load_manifest(a), load_manifest(b)
    click.echo(forensics.format_comparison(str(a), str(b), first, second))
    return EXIT_FAILED if first.get("failed") or second.get("failed") else EXIT_OK


@examples(
    "# the latest run of the project in the current directory",
    "runpod-deploy events",
    "runpod-deploy events artifacts/runpod/20260517T120001.123456Z-3fa9c1",
)
@click.command("events")
@click.argument("run_dir", required=False, type=click.Path(path_type=Path))
@click.option(
    "--project-root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Without RUN_DIR: the latest run of this project (its artifacts/runpod/).",
)
@output_option
@verbosity_options
def events(run_dir: Path | None, project_root: Path, output: str) -> int:
    """Timeline of a run's events.jsonl (default: the project's latest run), as offsets from
    the first event."""
    if run_dir is None:
        recorded = run_dirs(_existing_dir(project_root, "--project-root"))
        if not recorded:
            raise UsageError(
                f"events: no runs under {project_root / RUNS_SUBDIR}; give RUN_DIR, or the "
                "project of the config with --project-root"
            )
        run_dir = recorded[-1]
        logger.info("events of %s", run_dir)
    elif not run_dir.exists():
        raise UsageError(f"events: no such run directory: {run_dir}")
    found = read_events(run_dir)
    if output != "table":  # the events as recorded, a list
        click.echo(render(found, output), nl=False)
    elif not found:
        logger.info("no events in %s", run_dir / EVENTS_FILENAME if run_dir.is_dir() else run_dir)
    else:
        click.echo(forensics.format_timeline(found))
    return EXIT_OK


@examples(
    "runpod-deploy events-query --filter event=pod_killed_unexpected",
    "runpod-deploy events-query --filter event=datacenter_failover --since 1d12h --json",
)
@click.command("events-query")
@click.option(
    "--root",
    type=click.Path(path_type=Path),
    default=RUNS_SUBDIR,
    show_default=True,
    help="Search events.jsonl files under DIR.",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Exact match on an event field (repeatable, all must match).",
)
@click.option(
    "--since", metavar="DURATION", help="Only events newer than this: 30s, 5m, 1h30m, 7d."
)
@output_option
@verbosity_options
def events_query(root: Path, filters: tuple[str, ...], since: str | None, output: str) -> int:
    """Search the events of every run under --root."""
    parsed = forensics.parse_filters(filters)
    window = forensics.parse_since(since) if since is not None else None
    not_before = _now() - timedelta(seconds=window) if window is not None else None
    rows = []
    for path in sorted(_existing_dir(root, "--root").rglob(EVENTS_FILENAME)):
        for event in read_events(path):
            if forensics.event_matches(event, filters=parsed, not_before=not_before):
                rows.append({**event, "run_dir": path.parent.name})
    if output == "json":  # JSON Lines, one event each with its run_dir (0.8.4's --json)
        for row in rows:
            click.echo(json.dumps(row))
    elif output == "yaml":
        click.echo(render(rows, output), nl=False)
    elif rows:
        click.echo("\n".join(forensics.format_event_row(row) for row in rows))
    else:
        logger.info("no matching events under %s", root)
    return EXIT_OK


@examples(
    "runpod-deploy capture-env --project-root .",
)
@click.command("capture-env")
@click.option(
    "--project-root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
)
@verbosity_options
def capture_env(project_root: Path) -> int:
    """Print the project's git sha, dirty flag, branch and lockfile hash as JSON."""
    root = _existing_dir(project_root.resolve(), "--project-root")
    metadata = seams.capture_deploy_metadata(root)
    click.echo(json.dumps(metadata, indent=2))
    return EXIT_OK
