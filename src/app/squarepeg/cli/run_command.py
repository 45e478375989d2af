"""`squarepeg run` at the CLI edge: docker-run-style flags -> RunRequest -> run_use_case.execute.

Everything after IMAGE is the container's command, untouched (docker semantics), including
tokens that look like squarepeg flags; a note on stderr points out the likely mistake.
An unknown option before IMAGE is a usage error naming the closest real option (click's own
"No such option: --namepsace Did you mean --namespace?"), never taken for the image.
`-h` is `--hostname` (docker's); `squarepeg run -h` with nothing after it shows the help.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import CONTEXT_SETTINGS, quiet_option, verbose_option
from pegboard.app.squarepeg.cli.completion_values import (
    MODES,
    PULL_POLICY_NAMES,
    contexts,
    namespaces,
)
from pegboard.app.squarepeg.cli.options import (
    client_side_seams,
    composition_root,
    config_layer_options,
)
from pegboard.app.squarepeg.run_use_case import execute
from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.docker_flags import REJECTED_FLAGS, rejected_flag_message
from pegboard.domain.squarepeg.request import EnvFile, RunRequest


class _RunCommand(click.Command):
    """Keeps the raw arguments, so a rejected docker flag is reported the way it was typed."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["squarepeg.raw_args"] = list(args)
        if args and args[-1] == "-h" and _before_image(self, args[:-1]):
            # `-h` is --hostname (docker's), but `run -h` with no value can only mean help.
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        rest = super().parse_args(ctx, args)
        image = ctx.params.get("image")
        if isinstance(image, str) and image.startswith("-") and image != "-":
            # ignore_unknown_options let an unknown option through as IMAGE: say what it is.
            name = image.split("=", 1)[0]
            raise click.NoSuchOption(name, possibilities=_close_options(self, name), ctx=ctx)
        return rest


def _visible_options(command: click.Command) -> list[str]:
    return [
        name
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden
        for name in (*param.opts, *param.secondary_opts)
    ]


def _close_options(command: click.Command, name: str) -> list[str]:
    """The run options closest to a mistyped one (`--namepsace` -> `--namespace`)."""
    import difflib

    return difflib.get_close_matches(name, _visible_options(command), n=3, cutoff=0.6)


def _before_image(command: click.Command, args: Sequence[str]) -> bool:
    """True when every token is an option of `run` (or its value): no IMAGE was given yet."""
    takes_value = {
        name
        for param in command.params
        if isinstance(param, click.Option) and not param.is_flag
        for name in param.opts
    }
    expecting_value = False
    for token in args:
        if expecting_value:
            expecting_value = False
        elif token.startswith("-") and token != "-":
            expecting_value = token in takes_value
        else:
            return False
    return True


def _rejected_param(index: int) -> str:
    return f"rejected_{index}"


def _add_rejected_flags(command: Any) -> Any:
    for index, flag in reversed(list(enumerate(REJECTED_FLAGS))):
        if flag.takes_value:
            option = click.option(
                *flag.aliases, _rejected_param(index), multiple=True, hidden=True, default=()
            )
        else:
            option = click.option(*flag.aliases, _rejected_param(index), is_flag=True, hidden=True)
        command = option(command)
    return command


def _typed_alias(raw_args: Sequence[str], aliases: Sequence[str]) -> str:
    """The alias the user typed (`--net=host` -> `--net`); the first alias when not found."""
    for token in raw_args:
        if token == "--":
            break
        for alias in aliases:
            if token == alias or (alias.startswith("--") and token.startswith(alias + "=")):
                return alias
            if not alias.startswith("--") and token.startswith(alias) and len(token) > 2:
                return alias  # -p8080:80
    return aliases[0]


def _check_rejected(ctx: click.Context, params: dict[str, Any]) -> None:
    raw_args = ctx.meta.get("squarepeg.raw_args", [])
    for index, flag in enumerate(REJECTED_FLAGS):
        value = params.pop(_rejected_param(index))
        if value:  # a flag set, or a value given (even an empty one: `--network ""`)
            alias = _typed_alias(raw_args, flag.aliases)
            raise UsageError(rejected_flag_message(flag, as_typed=alias))


def _read_env_files(paths: Sequence[str]) -> tuple[EnvFile, ...]:
    from pegboard.app.shared.seams import read_config_text  # bounded, strict UTF-8
    from pegboard.domain.input_limits import InputRejected

    files = []
    for path in paths:
        try:
            text = read_config_text(Path(path).expanduser())
        except OSError as exc:
            raise UsageError(f"--env-file {path}: {exc.strerror or exc}") from None
        except InputRejected as exc:
            raise UsageError(f"--env-file {path}: {exc}") from None
        files.append(EnvFile(path=path, lines=tuple(text.splitlines())))
    return tuple(files)


@examples(
    "squarepeg run alpine echo hello",
    "squarepeg run -e NAME=world alpine sh -c 'echo hello $NAME'",
    "squarepeg run --cpus 0.5 -m 512m -n team python:3.12 python -c 'print(1)'",
    "squarepeg run --mode job --keep busybox false   # then: squarepeg rm NAME",
    "squarepeg run --dry-run alpine echo hi > pod.yaml",
)
@_add_rejected_flags
@click.command(
    "run",
    cls=_RunCommand,
    context_settings={
        **CONTEXT_SETTINGS,  # `-h` is --hostname here, so click keeps only --help
        "ignore_unknown_options": True,
        "allow_interspersed_args": False,
    },
)
@click.option(
    "-e",
    "--env",
    multiple=True,
    metavar="KEY[=VALUE]",
    help="Set an environment variable; a bare KEY copies the local value.",
)
@click.option("--env-file", multiple=True, metavar="PATH", help="Read KEY=VALUE lines from a file.")
@click.option(
    "-v",
    "--volume",
    "volumes",
    multiple=True,
    metavar="SPEC",
    help="/ctr (scratch), NAME:/ctr[:ro|rw] (configured volume) or /host:/ctr[:ro|rw].",
)
@click.option("--tmpfs", multiple=True, metavar="PATH[:size=N]", help="Memory-backed emptyDir.")
@click.option("--shm-size", metavar="SIZE", help="Size of /dev/shm (memory-backed emptyDir).")
@click.option("--name", metavar="NAME", help="Pod/Job name (RFC1123 label); generated if omitted.")
@click.option("-w", "--workdir", metavar="DIR", help="Working directory inside the container.")
@click.option("--entrypoint", metavar="CMD", help="Override the image's entrypoint (one word).")
@click.option(
    "-i",
    "--interactive",
    is_flag=True,
    help="Set stdin: true. stdin is not forwarded: piped input is refused (exit 2).",
)
@click.option("-t", "--tty", is_flag=True, help="Set tty: true (implies stdin: true).")
@click.option(
    "--kube-expand",
    is_flag=True,
    help="Let Kubernetes expand $(VAR) and $$ in the command and env (config kube_expand).",
)
@click.option("--rm", is_flag=True, help="Accepted for docker compatibility (default behaviour).")
@click.option(
    "--pull",
    metavar="always|missing|never",
    help="Image pull policy.",
    shell_complete=PULL_POLICY_NAMES,
)
@click.option("--cpus", metavar="N", help="CPU request and limit, docker style (0.5 -> 500m).")
@click.option(
    "-m", "--memory", metavar="SIZE", help="Memory request and limit, docker style (512m -> 512Mi)."
)
@click.option("--gpus", metavar="N|count=N", help="GPU request and limit.")
@click.option("--request-cpu", metavar="QTY", help="CPU request, Kubernetes quantity (500m).")
@click.option("--limit-cpu", metavar="QTY", help="CPU limit, Kubernetes quantity.")
@click.option(
    "--request-memory", metavar="QTY", help="Memory request, Kubernetes quantity (512Mi)."
)
@click.option("--limit-memory", metavar="QTY", help="Memory limit, Kubernetes quantity.")
@click.option("-u", "--user", metavar="UID[:GID]", help="Numeric user (and group) to run as.")
@click.option(
    "-l",
    "--label",
    "labels",
    multiple=True,
    metavar="KEY[=VALUE]",
    help="Add a label to the Pod/Job.",
)
@click.option("--read-only", is_flag=True, help="Read-only root filesystem.")
@click.option("--cap-add", multiple=True, metavar="CAP", help="Add a Linux capability.")
@click.option("--cap-drop", multiple=True, metavar="CAP", help="Drop a Linux capability.")
@click.option(
    "--security-opt",
    multiple=True,
    metavar="OPT",
    help="no-new-privileges, seccomp=runtime/default|unconfined|localhost/PATH, apparmor=, label=.",
)
@click.option("-h", "--hostname", metavar="NAME", help="Pod hostname.")
@click.option(
    "--add-host", "add_hosts", multiple=True, metavar="HOST:IP", help="Add a hostAliases entry."
)
@click.option("--platform", metavar="OS/ARCH", help="Schedule on nodes of this OS/architecture.")
@click.option("--privileged", is_flag=True, help="Privileged container (config allow_privileged).")
@click.option(
    "--mode",
    metavar="pod|job",
    help="Create a Pod (default) or a Job.",
    shell_complete=MODES,
)
@click.option(
    "-n", "--namespace", metavar="NS", help="Target namespace.", shell_complete=namespaces
)
@click.option("--context", metavar="CTX", help="kubeconfig context.", shell_complete=contexts)
@click.option("--keep", is_flag=True, help="Do not delete the Pod/Job; label it squarepeg.io/keep.")
@click.option("--dry-run", is_flag=True, help="Print the manifest as YAML; create nothing.")
@click.option(
    "--dry-run-server",
    is_flag=True,
    help="Submit as a server-side dry run and print the apiserver's answer.",
)
@click.option("--timeout", type=int, metavar="SECONDS", help="Startup timeout (default 300).")
@click.option(
    "--result-file",
    metavar="PATH",
    help="Write the run's result as JSON here (pod, namespace, exit code, durations), always.",
)
@quiet_option()
@verbose_option(short=False)  # -v is --volume (docker's)
@click.option("--no-color", is_flag=True, help="No colour or animation on stderr.")
@click.option("--container-name", metavar="NAME", help="Container name (default main).")
@config_layer_options
@click.argument("image")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, /, verbose: bool, **params: Any) -> int:  # fmt: skip
    """Run IMAGE [COMMAND]... as a Kubernetes Pod or Job, like `docker run`."""
    _check_rejected(ctx, params)
    # Every other parameter is named as its RunRequest field; only --env-file is read first.
    env_files = _read_env_files(params.pop("env_file"))
    request = RunRequest(env_files=env_files, **params)
    if request.dry_run:  # never leaves this machine: no dependency-injector, no cluster
        return execute(request, client_side_seams(ctx))
    container = composition_root(ctx)
    return execute(request, container.seams(), container.cluster_ports())
