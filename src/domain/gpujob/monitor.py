"""The monitor's state machine: from streamed log bytes and the script's status to a verdict.

Fed by the use case with raw log chunks (as they stream) and DetachedStatus probes. Rules:
- markers are matched per complete LINE (a marker never spans lines; 0.8.4 grepped the whole
  log, so a handled `Traceback` from hours ago, or `Killed` anywhere, failed the run);
- a failure-marker line fails the run at once, whatever came before it, so a log with both
  markers is a failure (0.8.4 checked success first and called it a success);
- the success marker succeeds once the script has exited 0, or is still running after a short
  grace (the marker was printed; the pod is stopped anyway); a non-zero exit after the marker
  is a failure;
- a script that exits, or vanishes, without the success marker fails immediately with its
  exit status (0.8.4 waited for the whole budget, 6 h with the defaults);
- step markers `__RUNPOD_STEP_START__<name>__` / `__RUNPOD_STEP_DONE__<name>__` become
  `remote_step_started` / `remote_step_completed` events, each once.
"""

from __future__ import annotations

import enum
import re

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.ports.remote_shell import DetachedStatus

SUCCESS_EXIT_GRACE_SEC = 3.0
_STEP_RE = re.compile(r"__RUNPOD_STEP_(START|DONE)__([A-Za-z0-9_.:-]+?)__")
_MAX_LINE = 1 << 20  # a "line" longer than this is matched in pieces


class Outcome(enum.StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@attrs.frozen
class Verdict:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    outcome: Outcome
    reason: str
    exit_code: int | None = None


@attrs.frozen
class StepEvent:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    event: str  # remote_step_started | remote_step_completed
    name: str


class LogMonitor:
    """Consumes the job's log and status; `verdict` is None while the job is still undecided."""

    def __init__(
        self, *, success_marker: str, failure_markers: tuple[str, ...] | list[str]
    ) -> None:
        self._success = success_marker
        self._failures = tuple(m for m in failure_markers if m)
        self._partial = b""
        self._line_no = 0
        self._steps_seen: set[tuple[str, str]] = set()
        self.success_seen_at: float | None = None
        self.exit_code: int | None = None
        self.verdict: Verdict | None = None
        self.bytes_seen = 0

    def feed(self, data: bytes, *, now: float) -> list[StepEvent]:
        """Take a chunk of log bytes; returns the step events it completed."""
        self.bytes_seen += len(data)
        buffer = self._partial + data
        *lines, self._partial = buffer.split(b"\n")
        if len(self._partial) > _MAX_LINE:
            lines.append(self._partial)
            self._partial = b""
        events: list[StepEvent] = []
        for raw in lines:
            events += self._line(raw, now)
        return events

    def end_of_log(self, *, now: float) -> list[StepEvent]:
        """The script is gone: its last line may lack a newline."""
        if not self._partial:
            return []
        raw, self._partial = self._partial, b""
        return self._line(raw, now)

    def observe_status(self, status: DetachedStatus, *, now: float) -> Verdict | None:
        """Take a probe result. Feed every log byte written before the probe first."""
        if self.verdict is not None or status.running:
            return self.verdict
        self.exit_code = status.exit_code
        if self.success_seen_at is not None:
            if status.exit_code in (0, None):
                return self._decide(Outcome.SUCCEEDED, "success marker seen", status.exit_code)
            return self._decide(
                Outcome.FAILED,
                f"script exited with status {status.exit_code} after the success marker",
                status.exit_code,
            )
        if status.exit_code is None:
            return self._decide(
                Outcome.FAILED,
                "script died without recording an exit status and without the success marker",
                None,
            )
        return self._decide(
            Outcome.FAILED,
            f"script exited with status {status.exit_code} without the success marker",
            status.exit_code,
        )

    def tick(self, *, now: float, grace: float = SUCCESS_EXIT_GRACE_SEC) -> Verdict | None:
        """Success once the marker is `grace` seconds old and the script still runs."""
        if (
            self.verdict is None
            and self.success_seen_at is not None
            and now - self.success_seen_at >= grace
        ):
            return self._decide(
                Outcome.SUCCEEDED, "success marker seen (script still running)", None
            )
        return self.verdict

    def _line(self, raw: bytes, now: float) -> list[StepEvent]:
        self._line_no += 1
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        events = []
        for kind, name in _STEP_RE.findall(line):
            key = (kind, name)
            if key not in self._steps_seen:
                self._steps_seen.add(key)
                events.append(
                    StepEvent(
                        "remote_step_started" if kind == "START" else "remote_step_completed", name
                    )
                )
        if self.verdict is not None:
            return events
        for marker in self._failures:
            if marker in line:
                shown = line if len(line) <= 200 else line[:197] + "..."
                self._decide(
                    Outcome.FAILED,
                    f"failure marker {marker!r} in log line {self._line_no}: {shown}",
                    None,
                )
                return events
        if self._success in line and self.success_seen_at is None:
            self.success_seen_at = now
        return events

    def _decide(self, outcome: Outcome, reason: str, exit_code: int | None) -> Verdict:
        self.verdict = Verdict(outcome, reason, exit_code)
        return self.verdict
