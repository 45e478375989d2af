"""`runpod-deploy sandbox`: serve the RunPod API sandbox in the foreground until interrupted."""

from __future__ import annotations

import click

from pegboard.app.runpod_deploy.seams import serve_runpod_sandbox
from pegboard.app.shared.cli.examples import examples
from pegboard.domain.errors import UsageError

from .sandbox_faults import fault_knobs, with_fault_options


@examples(
    "runpod-deploy sandbox --port 8011",
    "# then, in another shell: the two export lines it printed, and any runpod-deploy command",
    "runpod-deploy sandbox --no-ssh",
    "runpod-deploy sandbox --stock-out 'NVIDIA RTX A4000@EU-RO-1' --create-5xx 1",
    "runpod-deploy sandbox --throttle createPod:2:5 --ssh-delay 3",
    'curl -H "Authorization: Bearer $RUNPOD_API_KEY" -d \'{"ssh_never_ready": true}\' '
    "$RUNPOD_API_BASE_URL/sandbox/faults",
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
@with_fault_options
def sandbox(
    port: int,
    api_key: str | None,
    public_keys: tuple[str, ...],
    no_ssh: bool,
    **faults: object,
) -> None:
    """Serve a loopback RunPod API (REST v2 and GraphQL) whose pods are real sshd servers.

    Prints `export RUNPOD_API_BASE_URL=...` and `export RUNPOD_API_KEY=...` on stdout (so
    `eval "$(runpod-deploy sandbox &)"` style scripts work); with them exported, every
    `runpod-deploy` command and both runpod SDKs (1.x GraphQL, 2.x REST v2) talk to the sandbox
    instead of RunPod. The pods run their commands on this machine, as you: it binds 127.0.0.1
    only. Ctrl-C stops it and deletes every pod.

    The fault flags set the sandbox's knobs at start; while it runs, GET/POST/DELETE
    $RUNPOD_API_BASE_URL/sandbox/faults (with the key) shows, sets and resets them
    (docs/sandbox.md lists every knob).
    """
    if api_key is not None and (
        not api_key or any(c.isspace() or not c.isprintable() for c in api_key)
    ):
        raise UsageError("--api-key: must be non-empty printable characters without spaces")
    knobs = fault_knobs(**faults)  # type: ignore[arg-type]
    serve_runpod_sandbox(
        port,
        api_key=api_key,
        public_key_files=list(public_keys),
        ssh=not no_ssh,
        faults=knobs,
    )
