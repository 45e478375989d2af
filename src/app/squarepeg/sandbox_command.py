"""`squarepeg sandbox`: serve the Kubernetes API sandbox in the foreground until interrupted."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(context_settings={"help_option_names": ["--help"]})
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
    help="Where to write a kubeconfig for it (context `pegboard-sandbox`).",
)
def sandbox(port: int, kubeconfig_path: Path | None) -> None:
    """Serve a loopback Kubernetes API whose kubelet runs containers as local processes.

    It executes commands, so it binds 127.0.0.1 only and requires a random bearer token, which
    the kubeconfig it writes carries. Point squarepeg (or kubectl) at it with KUBECONFIG=PATH.
    """
    from .container import current_container

    serve = current_container().kubernetes_sandbox()
    serve(port, kubeconfig_path)
