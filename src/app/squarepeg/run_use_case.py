"""The `squarepeg run` use case: a RunRequest resolved against config, then printed
(--dry-run) or run (lifecycle.run, --dry-run-server included).

Everything after IMAGE is the container's command, untouched (docker semantics), including
tokens that look like squarepeg flags; a note on stderr points out the likely mistake.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.request import RunRequest

if TYPE_CHECKING:
    from pegboard.app.squarepeg.result_file import RunReport
    from pegboard.app.squarepeg.seams import ClusterPorts, Seams
    from pegboard.domain.squarepeg.config import SquarepegConfig

# squarepeg's own long flags that docker does not have: seeing one after IMAGE is likely a mistake.
RUN_ONLY_FLAGS = (
    "--dry-run", "--dry-run-server", "--keep", "--mode", "--namespace", "--context", "--timeout",
    "--quiet", "--no-color", "--container-name", "--config", "--no-default-config", "--profile",
    "--request-cpu", "--limit-cpu", "--request-memory", "--limit-memory", "--result-file",
)  # fmt: skip


def misplaced_flag_notes(command: Sequence[str]) -> list[str]:
    """One note per token after IMAGE that is exactly one of squarepeg's own run-only flags."""
    notes = []
    for token in command:
        flag = token.split("=", 1)[0]
        if flag in RUN_ONLY_FLAGS:
            notes.append(
                f"squarepeg: note: {token!r} comes after IMAGE, so it is passed to the container "
                "as an argument; put squarepeg options before IMAGE"
            )
    return notes


def execute(request: RunRequest, seams: Seams, ports: ClusterPorts | None = None) -> int:
    """Resolve the request against config and either print it (--dry-run) or run it; with
    --result-file, record how it ended on every path (result_file.py)."""
    if request.result_file is None:
        return _execute(request, seams, ports, None)
    from pathlib import Path

    from pegboard.app.shared.error_exit_codes import exit_code_for
    from pegboard.app.shared.seams import system_clock
    from pegboard.app.squarepeg.error_codes import EXIT_CODES
    from pegboard.app.squarepeg.result_file import RunReport, check_result_file, write_result_file

    path = Path(seams.cwd, request.result_file)
    check_result_file(path)
    clock = ports.clock if ports is not None else system_clock()
    report = RunReport(
        run_id=seams.run_id,
        started_at=clock.now(),
        started_monotonic=clock.monotonic(),
        dry_run=request.dry_run or request.dry_run_server,
    )
    code = EXIT_CODES.failure
    try:
        code = _execute(request, seams, ports, report)
        return code
    except BaseException as exc:
        mapped = exit_code_for(exc, EXIT_CODES)
        if isinstance(exc, KeyboardInterrupt):
            mapped = EXIT_CODES.interrupted
        code = mapped if mapped is not None else EXIT_CODES.failure
        if report.error is None:
            report.error = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise
    finally:
        record = report.record(exit_code=code, ended_monotonic=clock.monotonic())
        try:
            write_result_file(path, record)
        except OSError as exc:  # the run's own code stands; the missing record is said
            seams.stderr.write(
                f"squarepeg: --result-file {path}: cannot write: {exc.strerror or exc}\n"
            )


def _execute(
    request: RunRequest, seams: Seams, ports: ClusterPorts | None, report: RunReport | None
) -> int:
    from pegboard.domain.squarepeg.render import resolve_run

    stderr = seams.stderr
    for note in misplaced_flag_notes(request.command):
        stderr.write(note + "\n")
    config = load_config_for(request, seams)
    default_namespace = None
    if request.dry_run and request.namespace is None and config.namespace is None:
        default_namespace = seams.read_kubeconfig_namespace(
            request.context, seams.environ, seams.home
        )
    resolved = resolve_run(
        request,
        config,
        environ=seams.environ,
        user=seams.user_name,
        run_id=seams.run_id,
        random_hex=seams.random_hex,
        cwd=seams.cwd,
        default_namespace=default_namespace,
    )
    if request.tty and not request.interactive:
        stderr.write("squarepeg: warning: -t without -i: stdin is not forwarded to the container\n")
    if request.interactive and not (request.dry_run or request.dry_run_server):
        refuse_or_warn_interactive(seams)
    if report is not None:
        report.kind, report.name = resolved.kind.value, resolved.name
        report.namespace, report.context = resolved.namespace, resolved.context
        report.kept = resolved.keep
    if request.dry_run:
        from pegboard.app.squarepeg.status import write_stdout_text

        return write_stdout_text(seams.stdout, seams.dump_yaml(resolved.manifest), stderr)
    if ports is None:
        raise TypeError("a run that reaches the cluster needs its ports")
    from pegboard.app.squarepeg import lifecycle

    return lifecycle.run(
        resolved, seams, ports, dry_run_server=request.dry_run_server, report=report
    )


def refuse_or_warn_interactive(seams: Seams) -> None:
    """`-i` on a real run: squarepeg does not attach, so stdin never reaches the container.
    Piped or redirected input would be dropped while the run "succeeds": refuse it before
    anything is created (exit 2). On a terminal there is nothing to lose yet: say it once."""
    if seams.stdin_brings_input():
        raise UsageError(
            "-i: stdin is a pipe or a file, but squarepeg does not forward stdin to the "
            "container (no attach); pass the input in the command (sh -c '...') or a volume, "
            "or drop -i"
        )
    seams.stderr.write(
        "squarepeg: warning: -i: stdin is not forwarded to the container (squarepeg does not "
        "attach); a process that reads it waits for input that never comes\n"
    )


def load_config_for(request: RunRequest, seams: Seams) -> SquarepegConfig:
    """The merged, validated config for this command line (layers, profile, interpolation)."""
    from pegboard.app.squarepeg.config_loading import load_config

    return load_config(
        config_paths=request.config_paths,
        no_default_config=request.no_default_config,
        profile=request.profile,
        environ=seams.environ,
        home=seams.home,
        read_document=seams.read_document,
    )
