"""Stock classification and the GPU tables: `gpu-inventory`, `gpu-list`, `gpu-prices`, `estimate`.

Pure. ONE notion of "in stock" for selection and reporting: `provisioning.AVAILABLE_STOCK`
(high, medium, low), which `plan_candidates` uses to pick a pod (0.8.4 had two that disagreed,
its §7). Here "low" is still available, only flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from pegboard.domain.gpujob.provisioning import AVAILABLE_STOCK, Candidate
from pegboard.domain.gpujob.spec import BudgetSpec
from pegboard.domain.ports.gpu_cloud import GpuStock

AVAILABLE = "available"
LOW = "low"
STOCKOUT = "stockout"
NOT_LISTED = "not listed"

_RANK = {"high": 0, "medium": 1, "low": 2}


def classify_stock(level: str | None) -> str:
    """available (high/medium), low, stockout (anything else listed) or not listed."""
    if not level:
        return NOT_LISTED
    if level in AVAILABLE_STOCK:
        return LOW if level == "low" else AVAILABLE
    return STOCKOUT


def by_stock(entries: Sequence[GpuStock]) -> list[GpuStock]:
    """High, then medium, then low, then the rest; by GPU id within a level."""
    return sorted(entries, key=lambda s: (_RANK.get(s.stock, len(_RANK)), s.gpu_id))


@attrs.frozen
class InventoryRow:
    gpu_id: str
    stock: str | None
    status: str  # classify_stock(stock)


@attrs.frozen
class DatacenterInventory:
    datacenter_id: str
    rows: tuple[InventoryRow, ...]  # the configured GPUs, in gpu_order
    widening: tuple[GpuStock, ...]  # other GPUs in stock there, best first

    @property
    def any_available(self) -> bool:
        return any(row.status in (AVAILABLE, LOW) for row in self.rows)


@attrs.frozen
class Inventory:
    datacenters: tuple[DatacenterInventory, ...]

    @property
    def any_available(self) -> bool:
        return any(dc.any_available for dc in self.datacenters)


def build_inventory(
    *,
    gpu_order: Sequence[str],
    datacenters: Sequence[str],
    stock: Sequence[GpuStock],
    listed: Sequence[GpuStock],
) -> Inventory:
    """Configured GPUs per datacenter from `stock` (the selection's own query), plus a
    widening hint from `listed` (every GPU the datacenter lists)."""
    levels = {(s.gpu_id, s.datacenter_id): s.stock for s in stock}
    configured = set(gpu_order)
    result = []
    for dc in datacenters:
        rows = tuple(
            InventoryRow(gpu, levels.get((gpu, dc)), classify_stock(levels.get((gpu, dc))))
            for gpu in gpu_order
        )
        others = [
            s
            for s in listed
            if s.datacenter_id == dc and s.gpu_id not in configured and s.stock in AVAILABLE_STOCK
        ]
        result.append(DatacenterInventory(dc, rows, tuple(by_stock(others))))
    return Inventory(tuple(result))


def inventory_lines(inventory: Inventory) -> list[str]:
    lines = []
    for dc in inventory.datacenters:
        lines.append(f"{dc.datacenter_id}:")
        for row in dc.rows:
            level = f" ({row.stock})" if row.stock and row.status != NOT_LISTED else ""
            lines.append(f"  {row.gpu_id:<32} {row.status}{level}")
        if dc.widening:
            hint = ", ".join(f"{s.gpu_id} ({s.stock})" for s in dc.widening)
            lines.append(f"  widening hint: also in stock here: {hint}")
    return lines


def gpu_list_lines(entries: Sequence[GpuStock], prices: Mapping[str, float] | None) -> list[str]:
    """`gpu-list`: one datacenter's GPUs by stock level, with $/hr when prices are known."""
    header = f"{'GPU':<32} {'STOCK':<8}" + (f" {'$/HR':>7}" if prices is not None else "")
    lines = [header.rstrip()]
    for entry in by_stock(entries):
        line = f"{entry.gpu_id:<32} {entry.stock:<8}"
        if prices is not None:
            price = prices.get(entry.gpu_id)
            line += f" {'—' if price is None else f'{price:.2f}':>7}"
        lines.append(line.rstrip())
    return lines


def price_lines(prices: Mapping[str, float]) -> list[str]:
    """`gpu-prices`: cheapest first."""
    lines = [f"{'GPU':<32} {'$/HR':>7}"]
    for gpu, price in sorted(prices.items(), key=lambda item: (item[1], item[0])):
        lines.append(f"{gpu:<32} {price:>7.2f}")
    return lines


@attrs.frozen
class Forecast:
    """`estimate`: what the first candidate would cost under the config's budget."""

    gpu_id: str
    datacenter_id: str
    stock: str | None
    price_per_hour_usd: float
    price_source: str  # "provider" or "assumed_rate"
    cost_cap_usd: float
    timeout_sec: int
    spend_at_timeout_usd: float
    runtime_at_cap_sec: float | None  # None: the price is 0, the cap never stops the run
    stops_after_sec: float  # the whole-run deadline: the timeout or the cap, first reached

    def lines(self) -> list[str]:
        at_cap = (
            "unlimited (price 0)"
            if self.runtime_at_cap_sec is None
            else f"{self.runtime_at_cap_sec / 3600:.2f} h"
        )
        return [
            f"gpu:               {self.gpu_id} @ {self.datacenter_id}"
            + (f" (stock {self.stock})" if self.stock else ""),
            f"price:             ${self.price_per_hour_usd:.2f}/h ({self.price_source})",
            f"timeout:           {self.timeout_sec / 60:g} min",
            f"spend at timeout:  ${self.spend_at_timeout_usd:.2f}",
            f"cap:               ${self.cost_cap_usd:.2f}",
            f"runtime at cap:    {at_cap}",
            f"run stops after:   {self.stops_after_sec / 60:.1f} min at most",
        ]


def forecast(*, candidate: Candidate, budget: BudgetSpec) -> Forecast:
    """The provider's price when known, else the assumed rate (what `run` budgets with)."""
    price = candidate.price_per_hour_usd
    source = "provider"
    if price is None:
        price, source = float(budget.assumed_hourly_rate_usd), "assumed_rate"
    timeout = budget.timeout_sec
    cap = float(budget.cost_cap_usd)
    at_cap = cap / price * 3600 if price > 0 else None
    stops = min(float(timeout), at_cap) if at_cap is not None else float(timeout)
    return Forecast(
        gpu_id=candidate.gpu_id,
        datacenter_id=candidate.datacenter_id,
        stock=candidate.stock,
        price_per_hour_usd=price,
        price_source=source,
        cost_cap_usd=cap,
        timeout_sec=timeout,
        spend_at_timeout_usd=round(timeout / 3600 * price, 4),
        runtime_at_cap_sec=at_cap,
        stops_after_sec=stops,
    )
