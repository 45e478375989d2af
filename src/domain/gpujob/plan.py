"""The run plan: phases in order, the whole-run budget, and the lifecycle decisions.

Pure: the use case asks, this module answers. Time is passed in (monotonic seconds).
"""

from __future__ import annotations

import enum
import shlex

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.gpujob.spec import DEFAULT_PROVIDER, JobSpec, LifecycleAction
from pegboard.domain.gpujob.stale import (
    DAYS_PER_MONTH,
    RUNNING_VOLUME_USD_PER_GB_MONTH,
    STOPPED_VOLUME_USD_PER_GB_MONTH,
    release_command,
)

HOURS_PER_MONTH = DAYS_PER_MONTH * 24


class Phase(enum.StrEnum):
    VALIDATE = "validate"
    PROVISION = "provision"
    READY = "ready"
    SETUP = "setup"
    SECRETS = "secrets"
    STAGING = "staging"
    PREFLIGHT = "preflight"
    LAUNCH = "launch"
    MONITOR = "monitor"
    PULL = "pull"
    LIFECYCLE = "lifecycle"
    MANIFEST = "manifest"


def remote_phases(spec: JobSpec) -> tuple[Phase, ...]:
    """The phases that run on the pod, in order (secrets first when setup needs them)."""
    first = (
        (Phase.SECRETS, Phase.SETUP) if spec.setup_after_secrets else (Phase.SETUP, Phase.SECRETS)
    )
    return (*first, Phase.STAGING, Phase.PREFLIGHT, Phase.LAUNCH, Phase.MONITOR)


@attrs.frozen
class RunBudget:
    """Cost and time limits over the WHOLE run, counted from before provisioning.

    0.8.4 counted only the monitor phase and only at the assumed rate; here provisioning,
    setup, staging and pulls count too, and the pod's real price replaces the assumed rate as
    soon as it is known.
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    started_at: float
    cost_cap_usd: float
    price_per_hour_usd: float
    price_source: str  # "assumed_rate" until the provider reports the real price
    max_runtime_sec: float | None

    def with_price(self, price: float | None, source: str) -> RunBudget:
        """The real price replaces the assumed rate; an unknown or zero price does not (a zero
        rate would take the cost cap's deadline away): see `unknown_price_note`."""
        if price is None or not price > 0:
            return self
        return attrs.evolve(self, price_per_hour_usd=price, price_source=source)

    def unknown_price_note(self, price: float | None, source: str) -> str | None:
        """What to say when `with_price` kept the assumed rate (None: the price was used)."""
        if price is not None and price > 0:
            return None
        said = "unknown" if price is None else f"${price:.2f}/h"
        return (
            f"the pod's price from {source} is {said}: the cost cap of ${self.cost_cap_usd:.2f} "
            f"stays enforced at ${self.price_per_hour_usd:.2f}/h ({self.price_source})"
        )

    def spend_usd(self, now: float) -> float:
        return max(0.0, now - self.started_at) / 3600 * self.price_per_hour_usd

    def deadline(self) -> float:
        """The monotonic time at which the first limit is reached."""
        limits = []
        if self.max_runtime_sec is not None:
            limits.append(self.started_at + self.max_runtime_sec)
        if self.price_per_hour_usd > 0:
            limits.append(self.started_at + self.cost_cap_usd / self.price_per_hour_usd * 3600)
        return min(limits, default=float("inf"))

    def remaining(self, now: float) -> float:
        return self.deadline() - now

    def exceeded_reason(self, now: float) -> str | None:
        if now < self.deadline():
            return None
        elapsed = now - self.started_at
        if self.max_runtime_sec is not None and elapsed >= self.max_runtime_sec - 1e-9:
            return f"run exceeded max runtime of {self.max_runtime_sec / 60:g} minutes"
        return (
            f"run reached the cost cap of ${self.cost_cap_usd:.2f} at "
            f"${self.price_per_hour_usd:.2f}/h ({self.price_source}) after {elapsed:.0f}s"
        )


def action_for(spec: JobSpec, *, failed: bool) -> LifecycleAction:
    return spec.lifecycle.on_failure if failed else spec.lifecycle.on_success


def keeps_pointer(action: LifecycleAction) -> bool:
    """The state file survives every action except delete (the pod it names is gone)."""
    return action is not LifecycleAction.DELETE


def leftover_note(
    *,
    action: LifecycleAction,
    pod_id: str,
    provider: str,
    state_file: str | None,
    volume_gb: int | None,
    billed: bool = True,
    pod_dir: str | None = None,
    cost_per_hour_usd: float | None = None,
    stopped_why: str = "for forensics",
    kept_running: bool = False,
) -> str | None:
    """What the action left behind, what it costs per hour, the exact command that removes it
    and where to see everything left (None: nothing left).

    `cost_per_hour_usd` is the pod's compute price: billed on while it is preserved (running),
    released by stop and recycle, which leave only the disk billing. `stopped_why` ends the
    first line of a stop: "for forensics" after a failure, else what asked for it.
    `kept_running`: the provider's recycle keeps the pod running (billed like a preserve).
    `billed` False (the provider rents nothing): no disk cost, and a compute cost only when the
    pod has a price of its own (`kubernetes.price_per_hour`).
    """
    if action is LifecycleAction.DELETE:
        return None
    cleanup = release_command(pod_id=pod_id, provider=provider, state_file=state_file)
    if pod_dir:  # the pod is a directory on this machine (the local provider's)
        cleanup += f"   (or: rm -rf {shlex.quote(pod_dir)})"
    if action is LifecycleAction.PRESERVE:
        what = f"pod {pod_id!r} preserved (compute and disk continue billing)"
    elif action is LifecycleAction.RECYCLE and kept_running:
        what = f"pod {pod_id!r} kept running for the next run (recycle; compute continues billing)"
    elif action is LifecycleAction.RECYCLE:
        what = f"pod {pod_id!r} stopped and kept for the next run (recycle)"
    else:
        what = f"pod {pod_id!r} stopped {stopped_why}"
    lines = [what + "."]
    running = action is LifecycleAction.PRESERVE or (
        action is LifecycleAction.RECYCLE and kept_running
    )
    disk_rate = RUNNING_VOLUME_USD_PER_GB_MONTH if running else STOPPED_VOLUME_USD_PER_GB_MONTH
    disk_per_hour = (volume_gb or 0) * disk_rate / HOURS_PER_MONTH if billed else 0.0
    if volume_gb and billed:
        per_month = volume_gb * disk_rate
        lines.append(
            f"  Volume disk ({volume_gb} GB) continues billing at "
            f"~${per_month / DAYS_PER_MONTH:.2f}/day "
            f"(~${per_month:.2f}/mo) until released."
        )
    # An unbilled provider's pod can still have a compute price of its own (kubernetes:
    # price_per_hour): then that is what is left billing; its disk has no price here.
    if billed or (running and cost_per_hour_usd is not None):
        compute = (cost_per_hour_usd or 0.0) if running else 0.0
        unknown = running and cost_per_hour_usd is None
        lines.append(
            f"  Left billing: ~${compute + disk_per_hour:.3f}/h"
            + (" plus its GPU (price unknown)" if unknown else "")
            + "."
        )
    lines.append("  Release it with:")
    lines.append(f"      {cleanup}")
    listing = "runpod-deploy ls-stale" + (
        "" if provider == DEFAULT_PROVIDER else f" --provider {provider}"
    )
    lines.append(f"  Everything left behind, with its cost: {listing}")
    return "\n".join(lines)
