"""What the pegboard.testing entry points return: the exit code, the output, and per use case
what a test wants to assert on (the manifest a dry run printed, a run's records)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

__all__ = ["CommandResult", "DryRunResult", "GpuJobRunResult", "SquarepegRunResult"]


@attrs.frozen
class CommandResult:
    """One command line, run in-process: its exit code and both streams (bytes and text)."""

    argv: tuple[str, ...]
    exit_code: int
    stdout_bytes: bytes
    stderr_bytes: bytes

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@attrs.frozen
class SquarepegRunResult(CommandResult):
    """`squarepeg run`: `stdout_bytes` is the container's output, exactly; `result` the
    `--result-file` record (docs/squarepeg/cli-reference.md), None if none was written."""

    result: dict[str, Any] | None = None


@attrs.frozen
class DryRunResult(CommandResult):
    """`squarepeg run --dry-run`: the manifest it printed, parsed (None when it failed)."""

    manifest: dict[str, Any] | None = None


@attrs.frozen
class GpuJobRunResult(CommandResult):
    """`runpod-deploy run`: where it recorded the run and its manifest (None when the run
    stopped before it had a run directory, e.g. a config error)."""

    run_dir: Path | None = None
    manifest: dict[str, Any] | None = None
