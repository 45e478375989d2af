"""Telemetry snapshots of the pod at the start and end of a run (describe, uname/python,
pip freeze, nvidia-smi, dmesg), each written as a file in the run directory when the config asks for it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import attrs

from pegboard.domain.errors import PortError
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .run_state import RunContext

logger = logging.getLogger(__name__)

PIP_FREEZE = "python3 -m pip freeze 2>/dev/null || pip freeze 2>/dev/null"


def capture_start(run: RunContext, status: PodStatus, shell: RemoteShell) -> None:
    telemetry = run.spec.telemetry
    if not telemetry.enabled:
        return
    if telemetry.capture_pod_describe:
        run.recorder.snapshot("pod_describe_start.json", _describe(status))
    if telemetry.capture_remote_env:
        uname = _remote_text(shell, "uname -a")
        python = _remote_text(shell, "python3 --version 2>&1 || python --version 2>&1")
        run.recorder.snapshot(
            "remote_env.json",
            json.dumps(
                {"remote_uname": uname.strip(), "remote_python_version": python.strip()},
                indent=2,
            ),
        )
        # Once per run, before setup: the base image's packages (0.8.4's pip_freeze.txt).
        freeze = _remote_text(shell, PIP_FREEZE, quiet_failure=True)
        if freeze:
            run.recorder.snapshot("pip_freeze.txt", freeze)
    if telemetry.capture_nvidia_smi:
        text = _remote_text(shell, "nvidia-smi", quiet_failure=True)
        if text:
            run.recorder.snapshot("nvidia_smi_start.txt", text)


def capture_end(run: RunContext, shell: RemoteShell) -> None:
    telemetry = run.spec.telemetry
    if not telemetry.enabled:
        return
    if telemetry.capture_nvidia_smi:
        text = _remote_text(shell, "nvidia-smi", quiet_failure=True)
        if text:
            run.recorder.snapshot("nvidia_smi_end.txt", text)
    if telemetry.capture_dmesg:
        text = _remote_text(shell, "dmesg 2>/dev/null | tail -n 200", quiet_failure=True)
        if text:
            run.recorder.snapshot("dmesg_tail.txt", text)


def _remote_text(shell: RemoteShell, command: str, *, quiet_failure: bool = False) -> str:
    try:
        result = shell.run(command, timeout=30)
    except PortError as exc:
        logger.debug("[telemetry] %s failed: %s", command, exc)
        return ""
    if result.exit_code != 0 and quiet_failure:
        return ""
    return result.stdout.decode(errors="replace")


def _describe(status: PodStatus) -> str:
    """The pod as its provider reported it; `access` is the provider's own (an SSH endpoint,
    a directory...), written as it renders."""
    data: dict[str, Any] = attrs.asdict(status)
    return json.dumps(data, indent=2, default=str)
