"""When the orphan sweep that rides along with a run may sweep, and how much (pure).

At most one sweep per user and namespace per `orphan_sweep_interval`, across every runner on
every machine, paced by one coordination.k8s.io/v1 Lease per user (`squarepeg-sweep-<user>`):

- the Lease records the last sweep: `holderIdentity` (the run that swept), `renewTime` (when)
  and `leaseDurationSeconds` (the interval it then applied);
- a runner sweeps only if it takes the Lease: it creates it (none yet), or replaces an expired
  one (`renewTime + leaseDurationSeconds` in the past) with its own identity and time, guarded
  by the Lease's resourceVersion, so of two runners that both saw it expire only one wins (409
  for the other); an unexpired Lease means someone swept recently: skip;
- the Lease is never released: a runner that dies after taking it simply lets it expire, and
  the next runner after the interval sweeps;
- where Leases are refused (403), each run sweeps with FALLBACK_SWEEP_CHANCE instead, so the
  expected sweeps stay a fraction of the runs and overlapping ones are rare;
- a sweep deletes at most MAX_DELETES_PER_SWEEP resources, chosen in random order (overlapping
  sweeps then rarely pick the same ones); the rest waits for the next sweep.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pegboard.domain.kubernetes import labels
from pegboard.domain.kubernetes.timestamps import parse_rfc3339_seconds

DEFAULT_SWEEP_INTERVAL_SECONDS = 60
MAX_DELETES_PER_SWEEP = 200
FALLBACK_SWEEP_CHANCE = 0.2
LEASE_PREFIX = "squarepeg-sweep-"
_NOT_DNS = re.compile(r"[^a-z0-9-]+")

_T = TypeVar("_T")


def sweep_lease_name(created_by: str) -> str:
    """A valid Lease name (DNS-1123 subdomain) for one user, distinct for distinct users."""
    slug = _NOT_DNS.sub("-", created_by.lower()).strip("-")[:40].strip("-") or "user"
    digest = hashlib.sha256(created_by.encode()).hexdigest()[:8]
    return f"{LEASE_PREFIX}{slug}-{digest}"


def micro_time(now: float) -> str:
    """A Lease's MicroTime: RFC3339 with microseconds, UTC."""
    stamp = dt.datetime.fromtimestamp(now, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_sweep_lease(
    *, name: str, created_by: str, holder: str, now: float, interval_seconds: int
) -> dict[str, Any]:
    """The Lease a runner creates when it sweeps first."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "labels": {
                labels.MANAGED_BY: labels.MANAGED_BY_VALUE,
                labels.CREATED_BY: created_by,
            },
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": max(1, interval_seconds),
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": 0,
        },
    }


def lease_expired(lease: Mapping[str, Any], *, now: float) -> bool:
    """Whether the last sweep's interval is over (a Lease without a valid time is over)."""
    spec = lease.get("spec") or {}
    renewed = parse_rfc3339_seconds(spec.get("renewTime") or spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int) or isinstance(duration, bool):
        return True
    return now >= renewed + duration


def taken_lease(
    lease: Mapping[str, Any], *, holder: str, now: float, interval_seconds: int
) -> dict[str, Any]:
    """The expired Lease, taken over by `holder` (its resourceVersion kept: the replace is
    refused if someone else took it first)."""
    spec = dict(lease.get("spec") or {})
    transitions = spec.get("leaseTransitions")
    spec.update(
        holderIdentity=holder,
        leaseDurationSeconds=max(1, interval_seconds),
        acquireTime=micro_time(now),
        renewTime=micro_time(now),
        leaseTransitions=(transitions if isinstance(transitions, int) else 0) + 1,
    )
    return {**lease, "spec": spec}


def pick_deletes(decisions: Sequence[_T], *, cap: int, rng: random.Random) -> tuple[list[_T], int]:
    """At most `cap` of them in random order, and how many are left for the next sweep."""
    chosen = list(decisions)
    rng.shuffle(chosen)
    return chosen[:cap], max(0, len(chosen) - cap)
