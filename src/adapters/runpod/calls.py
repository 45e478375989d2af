"""Every RunPod call goes through `ApiCalls.run`: a deadline, bounded retries with backoff,
and errors mapped into the domain's PortError tree.

The SDK's own `requests.post(timeout=30)` bounds each connect and read, not the whole call;
the deadline here bounds the call as the caller sees it (the call runs in a daemon thread that
is abandoned at the deadline, which for a create means its outcome is unknown).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pegboard.domain.errors import PortError, Transient

from .errors import port_error
from .sdk import RunPodSdk

T = TypeVar("T")

DEFAULT_TIMEOUT_SEC = 30.0
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF_SEC = 0.5
MAX_BACKOFF_SEC = 8.0


class CallTimedOut(Transient):
    """The call did not finish by its deadline."""


class ApiCalls:
    def __init__(
        self,
        sdk: RunPodSdk,
        *,
        timeout_sec: float = DEFAULT_TIMEOUT_SEC,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_sec: float = DEFAULT_BACKOFF_SEC,
        sleep: Callable[[float], None],
    ) -> None:
        self.sdk = sdk
        self.timeout_sec = timeout_sec
        self.attempts = max(1, attempts)
        self.backoff_sec = backoff_sec
        self._sleep = sleep

    def run(self, what: str, call: Callable[[], T], *, retry: bool = True) -> T:
        """`call()` within the deadline; Transient failures are retried when `retry` is set."""
        delay = self.backoff_sec
        attempts = self.attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return self._with_deadline(what, call)
            except PortError as exc:
                if not isinstance(exc, Transient) or attempt == attempts:
                    raise
            self._sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_SEC)
        raise AssertionError("unreachable")  # pragma: no cover

    def _with_deadline(self, what: str, call: Callable[[], T]) -> T:
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                outcome["value"] = call()
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=target, daemon=True, name="runpod-call").start()
        if not done.wait(self.timeout_sec):
            raise CallTimedOut(
                f"{what}: no answer from the RunPod API within {self.timeout_sec:g} s"
            )
        if "error" in outcome:
            base = os.environ.get("RUNPOD_API_BASE_URL", "https://api.runpod.io")
            raise port_error(outcome["error"], what, self.sdk, base) from None
        return outcome["value"]  # type: ignore[no-any-return]
