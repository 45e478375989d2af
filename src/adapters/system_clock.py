"""SystemClock: the Clock port on the real clocks."""

from __future__ import annotations

import time


class SystemClock:
    """Wall time from time.time, deadlines from time.monotonic."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)
