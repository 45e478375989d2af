"""Shared helper: resolve a command line (RunRequest fields) against config layers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pegboard.domain.squarepeg.render import resolve_run
from pegboard.domain.squarepeg.request import RunRequest
from pegboard.domain.squarepeg.resolved_run import ResolvedRun

RUN_ID = "0b6f8f3e-9a5b-4b58-8c7e-1c2d3e4f5a6b"


def resolve(
    image: str = "alpine",
    *command: str,
    layers: Sequence[Mapping[str, Any]] = (),
    environ: Mapping[str, str] | None = None,
    local_user: str = "jane",
    default_namespace: str | None = None,
    **fields: Any,
) -> ResolvedRun:
    request = RunRequest(image=image, command=tuple(command), **fields)
    return resolve_run(
        request,
        layers,
        environ=environ or {},
        user=local_user,
        run_id=RUN_ID,
        random_hex="a1b2c3",
        cwd="/work",
        default_namespace=default_namespace,
    )


def manifest(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return resolve(*args, **kwargs).manifest


def container(m: Mapping[str, Any], name: str = "main") -> dict[str, Any]:
    spec = m["spec"]["template"]["spec"] if m["kind"] == "Job" else m["spec"]
    return next(c for c in spec["containers"] if c["name"] == name)


def pod_spec(m: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = m["spec"]["template"]["spec"] if m["kind"] == "Job" else m["spec"]
    return spec
