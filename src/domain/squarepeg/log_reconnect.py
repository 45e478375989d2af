"""Log reconnect policy: exponential backoff with a retry budget per outage (pure).

An outage starts when the stream drops (or ends while the container still runs) and ends as soon
as bytes flow again, which resets the budget: a stream cut every few hours by the kubelet's
streaming cap never exhausts it, a dead apiserver does.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class ReconnectPolicy:
    """Delays before reconnect attempt 1, 2, ...: `first * factor**(n-1)`, capped at `max_delay`."""

    first_delay: float = 0.2
    factor: float = 2.0
    max_delay: float = 5.0
    attempts_per_outage: int = 6

    def delay(self, attempt: int) -> float:
        return float(min(self.max_delay, self.first_delay * self.factor ** (attempt - 1)))


@attrs.define
class ReconnectBudget:
    """Counts attempts within the current outage."""

    policy: ReconnectPolicy = ReconnectPolicy()
    attempts: int = 0

    def next_delay(self) -> float | None:
        """Seconds to wait before the next attempt, or None once this outage's budget is spent."""
        if self.attempts >= self.policy.attempts_per_outage:
            return None
        self.attempts += 1
        return self.policy.delay(self.attempts)

    def bytes_flowed(self) -> None:
        """Data arrived: the outage is over."""
        self.attempts = 0
