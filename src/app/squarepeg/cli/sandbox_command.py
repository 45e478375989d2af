"""`squarepeg sandbox`: serve the Kubernetes API sandbox in the foreground until interrupted."""

from __future__ import annotations

from pathlib import Path

import click

from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import CONTEXT_SETTINGS
from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.quantities import parse_k8s_quantity

from .options import composition_root


@examples(
    "squarepeg sandbox --kubeconfig /tmp/sandbox.kubeconfig &",
    "KUBECONFIG=/tmp/sandbox.kubeconfig squarepeg run alpine echo hello",
    "squarepeg sandbox --port 6443 --token s3cret --kubeconfig ./kubeconfig",
    "squarepeg sandbox --pod-security default=restricted --apply quota.yaml "
    "--user 'ci=get,list,watch,create,delete:pods;get:pods/log'",
    "squarepeg sandbox --log-rendering pre-1.26 --container-log-max-size 1Mi",
)
@click.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="TCP port on 127.0.0.1 (0: any free port).",
)
@click.option(
    "--kubeconfig",
    "kubeconfig_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write a kubeconfig for it (context `pegboard-sandbox`, mode 0600). "
    "An existing file must be yours; it is replaced, never written through.",
)
@click.option(
    "--token",
    default=None,
    metavar="TOKEN",
    help="Bearer token to require (default: a random one). It goes into the kubeconfig.",
)
@click.option(
    "--pod-security",
    "pod_security",
    multiple=True,
    metavar="NAMESPACE=LEVEL",
    help="Label a namespace to enforce and warn at a Pod Security level "
    "(privileged, baseline, restricted). Repeatable.",
)
@click.option(
    "--apply",
    "object_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Create the Namespaces, ResourceQuotas and LimitRanges in a YAML file first. Repeatable.",
)
@click.option(
    "--user",
    "users",
    multiple=True,
    metavar="NAME=VERBS:RESOURCES[;...]",
    help="Add a user allowed only these rules, e.g. 'ci=get,list,watch,create,delete:pods;"
    "get:pods/log'; its context NAME@pegboard-sandbox goes into the kubeconfig. Repeatable.",
)
@click.option(
    "--log-rendering",
    type=click.Choice(["current", "pre-1.26"]),
    default="current",
    show_default=True,
    help="How /log writes timestamps=true: one prefix per line (kubelet >= 1.26) or one per "
    "16 KiB partial record (older kubelets).",
)
@click.option(
    "--container-log-max-size",
    default="10Mi",
    show_default=True,
    metavar="QUANTITY",
    help="The kubelet's containerLogMaxSize: rotate a container's log file at this size "
    "(e.g. 10Mi, 64Ki); -1 turns rotation off.",
)
@click.option(
    "--container-log-max-files",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="The kubelet's containerLogMaxFiles: log files kept per container.",
)
@click.option(
    "--container-log-monitor-interval",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="The kubelet's containerLogMonitorInterval: how often log sizes are checked "
    "(0: after every write).",
)
@click.pass_context
def sandbox(
    ctx: click.Context,
    port: int,
    kubeconfig_path: Path | None,
    token: str | None,
    pod_security: tuple[str, ...],
    object_files: tuple[Path, ...],
    users: tuple[str, ...],
    log_rendering: str,
    container_log_max_size: str,
    container_log_max_files: int,
    container_log_monitor_interval: float,
) -> None:
    """Serve a loopback Kubernetes API whose kubelet runs containers as local processes.

    It executes commands, so it binds 127.0.0.1 only, serves HTTPS with a CA made on start and
    requires a bearer token; the kubeconfig it writes carries both, so kubectl, the Python
    client and squarepeg work with KUBECONFIG=PATH. A busy port or a kubeconfig path that is
    not yours is one line on stderr and exit 2.

    To rehearse a locked-down cluster: --pod-security labels namespaces, --apply creates
    ResourceQuotas and LimitRanges, --user adds an RBAC-limited user (see
    docs/squarepeg/locked-down-cluster.md).
    """
    if token is not None and (not token or any(c.isspace() or not c.isprintable() for c in token)):
        raise UsageError("--token: must be non-empty printable characters without spaces")
    levels = dict(_pair(item, "--pod-security", "NAMESPACE=LEVEL") for item in pod_security)
    rules = [_pair(item, "--user", "NAME=VERBS:RESOURCES") for item in users]
    kubelet = {
        "log_rendering": log_rendering,
        "container_log_max_size": _log_max_size(container_log_max_size),
        "container_log_max_files": container_log_max_files,
        "container_log_monitor_interval": container_log_monitor_interval,
    }
    serve = composition_root(ctx).kubernetes_sandbox()
    serve(
        port,
        kubeconfig_path,
        token=token,
        users=rules,
        pod_security=levels,
        object_files=list(object_files),
        kubelet=kubelet,
    )


def _pair(item: str, flag: str, shape: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key or not value:
        raise UsageError(f"{flag} {item!r}: expected {shape}")
    return key, value


def _log_max_size(raw: str) -> int | None:
    """containerLogMaxSize as bytes (a negative size turns rotation off, as in the kubelet)."""
    value = parse_k8s_quantity(raw.strip())
    if value is None or value != value.to_integral_value():
        raise UsageError(
            f"--container-log-max-size: {raw!r} is not a whole number of bytes (e.g. 10Mi)"
        )
    return None if value < 0 else int(value)
