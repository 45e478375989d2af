"""The `squarepeg clean` use case: the orphan sweep on demand (no run to exclude, no
`orphan_sweep` switch).

`dry_run` prints an aligned `kind/name  category  detail` table on stdout and deletes nothing.
RunnerError (125) when the list or any delete failed, 0 otherwise ("nothing to clean" included).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from pegboard.domain.errors import PortError, RunnerError, UsageError
from pegboard.domain.squarepeg.labels import sanitize_label_value
from pegboard.domain.squarepeg.orphans import SweepDecision

if TYPE_CHECKING:
    from pegboard.app.squarepeg.seams import ClusterPorts, Seams


def orphan_table(decisions: Sequence[SweepDecision]) -> str:
    """`kind/name  category  detail` rows, columns aligned, one line each."""
    rows = [(d.ref, d.category.value, d.detail) for d in decisions]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "".join(
        f"{ref.ljust(widths[0])}  {category.ljust(widths[1])}  {detail}\n"
        for ref, category, detail in rows
    )


def execute_clean(
    seams: Seams,
    ports: ClusterPorts,
    *,
    dry_run: bool = False,
    min_age: int | None = None,
    namespace: str | None = None,
    context: str | None = None,
    quiet: bool = False,
    no_color: bool = False,
    config_paths: Sequence[str] = (),
    no_default_config: bool = False,
    profile: str | None = None,
) -> int:
    from pegboard.app.squarepeg.config_loading import load_config
    from pegboard.app.squarepeg.status import StatusUI
    from pegboard.app.squarepeg.sweep import delete_orphans, find_orphans

    if min_age is not None and min_age < 0:
        raise UsageError(f"--min-age {min_age}: must be 0 or more seconds")
    config = load_config(
        config_paths=config_paths,
        no_default_config=no_default_config,
        profile=profile,
        environ=seams.environ,
        home=seams.home,
        read_document=seams.read_document,
    )
    ui = StatusUI(
        tag=secrets.token_hex(4),
        stream=seams.stderr,
        quiet=quiet or config.quiet,
        color=False if no_color else None,
        environ=seams.environ,
    )
    cluster = ports.open_cluster(context=context, lenient_tls=config.lenient_tls)
    target = cluster.target()
    ns = namespace or config.namespace or target.namespace or "default"
    ui.banner(target.context, ns)
    created_by = sanitize_label_value(seams.user_name)
    age = config.orphan_sweep_min_age if min_age is None else min_age
    try:
        decisions = find_orphans(
            cluster,
            namespace=ns,
            created_by=created_by,
            now=ports.clock.now(),
            min_age_seconds=age,
            exclude_run_id=None,
        )
    except PortError as exc:
        raise RunnerError(
            f"listing orphans in namespace {ns!r} failed: {exc} "
            f"(clean needs list on pods and jobs in {ns!r})"
        ) from None
    if not decisions:
        ui.success(f"nothing to clean in namespace {ns!r}")
        return 0
    if dry_run:
        stdout: TextIO = seams.stdout
        stdout.write(orphan_table(decisions))
        stdout.flush()
        ui.step(f"would delete {len(decisions)} orphaned resource(s) in namespace {ns!r}")
        return 0

    def report(result: Any) -> None:
        ref = result.decision.ref
        if result.error is not None:
            ui.warn(f"could not delete {ref}: {result.error}")
        elif result.deleted:
            ui.detail(f"deleted {ref} ({result.decision.detail})")
        else:
            ui.detail(f"{ref} was already gone")

    results = delete_orphans(cluster, decisions, namespace=ns, on_result=report)
    failed = sum(1 for r in results if r.error is not None)
    gone = sum(1 for r in results if r.error is None and not r.deleted)
    cleaned = len(results) - failed
    summary = f"cleaned {cleaned} of {len(results)} ({gone} already gone, {failed} failed)"
    if failed:
        raise RunnerError(summary)
    ui.success(summary)
    return 0
