"""Run `squarepeg` in-process (cli.main) with the container's outside-world providers pinned."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import attrs
from dependency_injector import providers

from pegboard.app.squarepeg.cli import main
from pegboard.app.squarepeg.container import Container

RUN_ID = "0b6f8f3e-9a5b-4b58-8c7e-1c2d3e4f5a6b"


@attrs.frozen
class CliResult:
    code: int
    stdout: str
    stderr: str


@contextmanager
def pinned_container(
    *,
    home: Path,
    environ: Mapping[str, str] | None = None,
    user: str = "jane",
    kubeconfig_namespace: str | None = None,
    real_kubeconfig: bool = False,
) -> Iterator[Container]:
    """A container with environment, identity and randomness fixed (reset after)."""
    container = Container()
    env = {"HOME": str(home), **(environ or {})}
    overrides: dict[str, providers.Provider[object]] = {
        "environ": providers.Object(env),
        "home": providers.Object(str(home)),
        "cwd": providers.Object(str(home)),
        "user_name": providers.Object(user),
        "run_id": providers.Object(RUN_ID),
        "random_hex": providers.Object("a1b2c3"),
    }
    if not real_kubeconfig:
        overrides["read_kubeconfig_namespace"] = providers.Object(
            lambda context, env, home: kubeconfig_namespace
        )
    with container.override_providers(**overrides):
        yield container


def run_cli(argv: Sequence[str], *, home: Path, **pins: object) -> CliResult:
    """`squarepeg <argv>` in-process; returns exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with (
        pinned_container(home=home, **pins) as container,
        redirect_stdout(out),
        redirect_stderr(err),
    ):  # type: ignore[arg-type]
        try:
            main(list(argv), container=container)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:
            code = 0
    sys.stdout.flush()
    return CliResult(code=code, stdout=out.getvalue(), stderr=err.getvalue())
