"""`runpod-deploy sandbox`: serve the RunPod API sandbox in the foreground until interrupted."""

from __future__ import annotations

import click

from pegboard.app.runpod_deploy.seams import serve_runpod_sandbox
from pegboard.app.shared.cli.examples import examples
from pegboard.domain.errors import UsageError


@examples(
    "runpod-deploy sandbox --port 8011",
    "# then, in another shell: the two export lines it printed, and any runpod-deploy command",
    "runpod-deploy sandbox --no-ssh",
)
@click.command("sandbox", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="TCP port on 127.0.0.1 (0: any free port).",
)
@click.option(
    "--api-key",
    default=None,
    metavar="KEY",
    help="Bearer key to require (default: a random one, printed).",
)
@click.option(
    "--public-key",
    "public_keys",
    multiple=True,
    metavar="PATH",
    help="A public key file the pods trust (repeatable; default: ~/.ssh/id_*.pub). "
    "Pods also trust the PUBLIC_KEY a run passes (its ssh.key_path + .pub).",
)
@click.option("--no-ssh", is_flag=True, help="Pods answer an SSH banner only (no sshd).")
def sandbox(port: int, api_key: str | None, public_keys: tuple[str, ...], no_ssh: bool) -> None:
    """Serve a loopback RunPod API (GraphQL) whose pods are real sshd servers on 127.0.0.1.

    Prints `export RUNPOD_API_BASE_URL=...` and `export RUNPOD_API_KEY=...` on stdout (so
    `eval "$(runpod-deploy sandbox &)"` style scripts work); with them exported, every
    `runpod-deploy` command talks to the sandbox instead of RunPod. The pods run their commands
    on this machine, as you: it binds 127.0.0.1 only. Ctrl-C stops it and deletes every pod.
    """
    if api_key is not None and (
        not api_key or any(c.isspace() or not c.isprintable() for c in api_key)
    ):
        raise UsageError("--api-key: must be non-empty printable characters without spaces")
    serve_runpod_sandbox(port, api_key=api_key, public_key_files=list(public_keys), ssh=not no_ssh)
