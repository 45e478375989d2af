"""Per-key request quotas, with RunPod's rate-limit headers (openapi-v2.json
#/components/schemas/RateLimitHeader, RateLimitPolicyHeader, #/components/responses/
TooManyRequestsError): fixed minute/hour/day windows from the sandbox's start; every
authenticated answer carries

    RateLimit-Policy: "minute";q=60000;w=60, "hour";q=3600000;w=3600, "day";q=86400000;w=86400
    RateLimit: "minute";r=59997;t=41, "hour";r=3599997;t=3581, "day";r=86399997;t=86381

(structured-field lists, `r` remaining, `t` seconds to reset, `q` quota, `w` window), and a
request past a quota is answered 429 with `Retry-After` = the exhausted window's `t`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from .faults import Faults

WINDOWS = (("minute", 60), ("hour", 3600), ("day", 86400))


class RateLimiter:
    def __init__(self, faults: Faults, clock: Callable[[], float] = time.monotonic) -> None:
        self._faults = faults
        self._clock = clock
        self._start = clock()
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}  # (key, window): (index, n)
        self._lock = threading.Lock()

    def _quota(self, name: str) -> int:
        return int(getattr(self._faults, f"rate_limit_per_{name}"))

    def take(self, key: str) -> tuple[int | None, dict[str, str]]:
        """Count one request: (None, headers) when allowed, (retry_after, headers) when not."""
        now = self._clock() - self._start
        with self._lock:
            state = []
            for name, width in WINDOWS:
                index = int(now // width)
                seen_index, count = self._counts.get((key, name), (index, 0))
                if seen_index != index:
                    count = 0
                reset = max(1, math.ceil((index + 1) * width - now))
                state.append((name, width, index, count, reset))
            blocked = [s for s in state if s[3] >= self._quota(s[0])]
            if not blocked:
                for name, _, index, count, _ in state:
                    self._counts[(key, name)] = (index, count + 1)
                state = [(n, w, i, c + 1, r) for n, w, i, c, r in state]
        headers = {
            "RateLimit-Policy": ", ".join(f'"{n}";q={self._quota(n)};w={w}' for n, w, *_ in state),
            "RateLimit": ", ".join(
                f'"{n}";r={max(0, self._quota(n) - c)};t={r}' for n, _, _, c, r in state
            ),
        }
        if blocked:
            return max(s[4] for s in blocked), headers
        return None, headers
