"""`squarepeg sandbox`: serve the Kubernetes API sandbox in the foreground until interrupted."""

from __future__ import annotations

from pathlib import Path

import click

from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import CONTEXT_SETTINGS
from pegboard.domain.errors import UsageError

from .options import composition_root


@examples(
    "squarepeg sandbox --kubeconfig /tmp/sandbox.kubeconfig &",
    "KUBECONFIG=/tmp/sandbox.kubeconfig squarepeg run alpine echo hello",
    "squarepeg sandbox --port 6443 --token s3cret --kubeconfig ./kubeconfig",
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
@click.pass_context
def sandbox(ctx: click.Context, port: int, kubeconfig_path: Path | None, token: str | None) -> None:
    """Serve a loopback Kubernetes API whose kubelet runs containers as local processes.

    It executes commands, so it binds 127.0.0.1 only, serves HTTPS with a CA made on start and
    requires a bearer token; the kubeconfig it writes carries both, so kubectl, the Python
    client and squarepeg work with KUBECONFIG=PATH. A busy port or a kubeconfig path that is
    not yours is one line on stderr and exit 2.
    """
    if token is not None and (not token or any(c.isspace() or not c.isprintable() for c in token)):
        raise UsageError("--token: must be non-empty printable characters without spaces")
    serve = composition_root(ctx).kubernetes_sandbox()
    serve(port, kubeconfig_path, token=token)
