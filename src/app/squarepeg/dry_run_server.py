"""`squarepeg run --dry-run-server`: submit with dryRun=All and print what the apiserver returned.

The response is printed as it came back (a plain dict, no typed-model round trip), so fields the
apiserver or a mutating webhook added show up. Nothing is created, so there is no watch, no log,
no cleanup, no sweep and no Ctrl-C handler.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from pegboard.domain.errors import PortError, RunnerError
from pegboard.domain.kubernetes.names import namespace_in_use
from pegboard.domain.ports.cluster import Cluster
from pegboard.domain.squarepeg.create_errors import create_failure_message
from pegboard.domain.squarepeg.resolved_run import ResolvedRun

from .status import StatusUI, write_stdout_text


def server_dry_run(
    resolved: ResolvedRun,
    *,
    cluster: Cluster,
    ui: StatusUI,
    stdout: TextIO | None,
    dump_yaml: Callable[[Any], str],
) -> int:
    target = cluster.target()
    namespace = namespace_in_use(resolved.namespace, target.namespace)
    ui.banner(target.context, namespace)
    try:
        answer = cluster.create(resolved.manifest, namespace=namespace, dry_run=True)
    except PortError as exc:
        raise RunnerError(
            create_failure_message(
                exc, kind=resolved.kind, name=resolved.name, namespace=namespace, dry_run=True
            )
        ) from None
    # A refusing stdout is 122 with one line (141 for a reader that left), like --dry-run.
    return write_stdout_text(stdout, dump_yaml(answer), ui.stream)
