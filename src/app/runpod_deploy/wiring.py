"""The seams runpod-deploy takes from the outside world, as plain factory functions.

`container.py` composes these into the dependency-injector container used by `run` and the
pod commands. Commands that only read local files (`validate`, the record readers) use
`client_side()` when no container exists yet: importing dependency-injector pulls in asyncio and
pydantic (~100 ms), more than such a command should take. Both paths call the same functions.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pegboard.domain.errors import UsageError
from pegboard.domain.ports.clock import Clock

RUNPOD_NOT_AVAILABLE = (
    "pod.provider runpod is not available in this release yet: the RunPod adapter (the "
    "`pegboard[runpod]` extra) ships in the next release; use `pod.provider: local` to run "
    "the same config on this machine"
)


def system_clock() -> Clock:
    from pegboard.adapters.system_clock import SystemClock

    return SystemClock()


def utc_now(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), UTC)


def home_dir(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or str(Path.home())


def random_hex() -> str:
    return secrets.token_hex(3)


def read_config_text(path: Any) -> str:
    """A small user file (--vars-file, --env-file): bounded and strict UTF-8 (InputRejected)."""
    from pegboard.adapters.bounded_files import read_bounded_text
    from pegboard.domain.input_limits import MAX_CONFIG_BYTES

    return read_bounded_text(path, limit=MAX_CONFIG_BYTES)


def read_record_bytes(path: Any, limit: int) -> bytes:
    """A record file (manifest, events.jsonl): at most `limit` bytes (InputRejected past it)."""
    from pegboard.adapters.bounded_files import read_bounded_bytes

    return read_bounded_bytes(path, limit=limit)


def read_yaml_document(path: Path) -> Any:
    from pegboard.adapters.yaml_documents import read_yaml_document as read

    return read(path)


def capture_deploy_metadata(project_root: Path) -> dict[str, Any]:
    from pegboard.adapters.git_metadata import capture_deploy_metadata as capture

    return dict(capture(Path(project_root)))


def runpod_cloud() -> Any:
    raise UsageError(RUNPOD_NOT_AVAILABLE)


class ClientSide:
    """The container providers that read-only commands use, as plain methods (same names)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._clock: Clock | None = None

    def environ(self) -> Mapping[str, str]:
        return self._environ

    def home(self) -> str:
        return home_dir(self._environ)

    def clock(self) -> Clock:
        if self._clock is None:
            self._clock = system_clock()
        return self._clock

    def utc_now(self) -> datetime:
        return utc_now(self.clock())

    def random_hex(self) -> str:
        return random_hex()

    def read_document(self) -> Callable[[Path], Any]:
        return read_yaml_document

    def capture_deploy_metadata(self) -> Callable[[Path], dict[str, Any]]:
        return capture_deploy_metadata

    def gpu_cloud(self) -> Any:
        return runpod_cloud()


def client_side() -> Any:
    """The DI container when this process already made one (tests override it), else ClientSide."""
    container_module = sys.modules.get("pegboard.app.runpod_deploy.container")
    existing = container_module.existing_container() if container_module else None
    return existing if existing is not None else ClientSide()
