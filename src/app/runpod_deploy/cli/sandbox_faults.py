"""`runpod-deploy sandbox`'s fault flags, turned into the JSON knobs `/sandbox/faults` takes.

Each flag is one knob of the RunPod API sandbox (pegboard.adapters.sandboxes.runpod.faults);
`--faults JSON` (or `@FILE`) sets any knob by name, as a POST to the control endpoint does. A
malformed value is a UsageError naming the flag; the knobs themselves are checked when the
sandbox starts (a knob of the wrong type is one line naming it, before anything is served).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from pegboard.domain.errors import UsageError

FAULT_OPTIONS = [
    click.option(
        "--stock-out",
        "stock_out",
        multiple=True,
        metavar="GPU[@DC][:TIMES]",
        help="Creates of this GPU type (in this datacenter; `*` any GPU) fail for stock although "
        "the catalog lists it, TIMES times (default 1). Repeatable.",
    ),
    click.option(
        "--create-5xx",
        type=click.IntRange(min=0),
        default=None,
        metavar="N",
        help="The next N creates make the pod, then answer 502 (as a gateway failing after it).",
    ),
    click.option(
        "--throttle",
        multiple=True,
        metavar="OP[:TIMES[:SECONDS]]",
        help="The next TIMES calls of OP (a v2 operationId such as createPod, a GraphQL field "
        "such as podFindAndDeployOnDemand, or `*`) answer 429 with Retry-After SECONDS "
        "(defaults 1 and 1). Repeatable.",
    ),
    click.option(
        "--http-503",
        multiple=True,
        metavar="OP[:TIMES]",
        help="The next TIMES calls of OP (as --throttle) answer 503. Repeatable.",
    ),
    click.option(
        "--ssh-delay",
        type=click.FloatRange(min=0),
        default=None,
        metavar="SECONDS",
        help="A pod publishes its SSH port this long after create or resume (v2: STARTING).",
    ),
    click.option(
        "--never-ready", is_flag=True, default=None, help="Pods run but never publish SSH."
    ),
    click.option(
        "--resume-without-gpus",
        type=click.IntRange(min=0),
        default=None,
        metavar="N",
        help="The next N resumes fail: not enough free GPUs on the host machine.",
    ),
    click.option(
        "--latency-ms",
        type=click.FloatRange(min=0),
        default=None,
        metavar="MS",
        help="Added before every API answer.",
    ),
    click.option(
        "--rate-limit-per-minute",
        type=click.IntRange(min=0),
        default=None,
        metavar="N",
        help="Requests per minute before every answer is 429 (default 60000).",
    ),
    click.option(
        "--faults",
        "faults_json",
        default=None,
        metavar="JSON|@FILE",
        help="Any knobs as the JSON object POST /sandbox/faults takes (applied before the flags).",
    ),
]


def with_fault_options(command: Any) -> Any:
    for option in reversed(FAULT_OPTIONS):
        command = option(command)
    return command


def _times(flag: str, raw: str, default: int = 1) -> int:
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise UsageError(f"{flag} {raw!r}: TIMES must be a whole number") from None
    if value < 1:
        raise UsageError(f"{flag}: TIMES must be at least 1, not {value}")
    return value


def fault_knobs(
    *,
    stock_out: tuple[str, ...] = (),
    create_5xx: int | None = None,
    throttle: tuple[str, ...] = (),
    http_503: tuple[str, ...] = (),
    ssh_delay: float | None = None,
    never_ready: bool | None = None,
    resume_without_gpus: int | None = None,
    latency_ms: float | None = None,
    rate_limit_per_minute: int | None = None,
    faults_json: str | None = None,
) -> dict[str, Any]:
    """The knobs the flags ask for, as the control endpoint's JSON; {} when none."""
    knobs: dict[str, Any] = {}
    if faults_json is not None:
        text = faults_json
        if text.startswith("@"):
            try:
                text = Path(text[1:]).expanduser().read_text()
            except OSError as exc:
                raise UsageError(
                    f"--faults {faults_json}: cannot read it ({exc.strerror})"
                ) from None
        try:
            knobs = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--faults: not JSON ({exc})") from None
        if not isinstance(knobs, dict):
            raise UsageError("--faults: a JSON object of knob names, as POST /sandbox/faults")
    for spec in stock_out:
        where, _, times = spec.rpartition(":") if ":" in spec else (spec, "", "")
        gpu, _, datacenter = where.partition("@")
        if not gpu:
            raise UsageError(f"--stock-out {spec!r}: name a GPU type (or `*`)")
        knobs.setdefault("stock_out_at_create", []).append(
            {
                "gpu_id": None if gpu == "*" else gpu,
                "datacenter_id": datacenter or None,
                "times": _times("--stock-out", times),
            }
        )
    for spec in throttle:
        op, _, rest = spec.partition(":")
        times, _, seconds = rest.partition(":")
        if not op:
            raise UsageError(f"--throttle {spec!r}: name an operation (or `*`)")
        knobs.setdefault("throttle", []).append(
            {
                "operation": op,
                "times": _times("--throttle", times),
                "retry_after_sec": _times("--throttle", seconds),
            }
        )
    for spec in http_503:
        op, _, times = spec.partition(":")
        if not op:
            raise UsageError(f"--http-503 {spec!r}: name an operation (or `*`)")
        counts = knobs.setdefault("http_503", {})
        counts[op] = counts.get(op, 0) + _times("--http-503", times)
    scalars = {
        "create_5xx_after_pod_exists": create_5xx,
        "ssh_ready_delay_sec": ssh_delay,
        "ssh_never_ready": never_ready,
        "resume_without_free_gpus": resume_without_gpus,
        "latency_ms": latency_ms,
        "rate_limit_per_minute": rate_limit_per_minute,
    }
    knobs.update({name: value for name, value in scalars.items() if value is not None})
    return knobs
