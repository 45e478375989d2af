"""Budget rules, checked by `validate` and again by `run` (0.8.4 checked only in `run`).

The rule is 0.8.4's: when `max_runtime_minutes` is set, the runtime it allows, at the assumed
hourly rate, must not cost more than `cost_cap_usd`. Without it, the deadline is derived from
the cap (BudgetSpec.timeout_sec), which cannot exceed it by construction.
"""

from __future__ import annotations

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError, ConfigProblem, UsageError
from pegboard.domain.gpujob.spec import BudgetSpec, JobSpec
from pegboard.domain.input_limits import MAX_CONFIG_NUMBER, number_problem

__all__ = [
    "BudgetEstimate",
    "apply_budget_overrides",
    "check_budget",
    "estimate_budget",
]


@attrs.frozen
class BudgetEstimate:
    """What the config allows: the deadline and its cost at the assumed rate."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    cost_cap_usd: float
    assumed_hourly_rate_usd: float
    timeout_sec: int
    estimated_spend_usd: float

    def summary(self) -> str:
        """0.8.4's `[budget]` line."""
        return (
            f"[budget] cap=${self.cost_cap_usd:.2f} "
            f"assumed_rate=${self.assumed_hourly_rate_usd:.2f}/h "
            f"timeout={self.timeout_sec // 60}m estimated_spend=${self.estimated_spend_usd:.2f}"
        )


def estimate_budget(budget: BudgetSpec) -> BudgetEstimate:
    spend = budget.timeout_sec / 3600 * budget.assumed_hourly_rate_usd
    return BudgetEstimate(
        cost_cap_usd=budget.cost_cap_usd,
        assumed_hourly_rate_usd=budget.assumed_hourly_rate_usd,
        timeout_sec=budget.timeout_sec,
        estimated_spend_usd=round(spend, 4),
    )


def apply_budget_overrides(
    spec: JobSpec,
    *,
    cost_cap_usd: float | None,
    max_runtime_minutes: int | None,
) -> JobSpec:
    """`--cost-cap-usd` / `--max-runtime-minutes`, checked like their YAML keys."""
    if cost_cap_usd is not None and not cost_cap_usd > 0:
        raise UsageError(f"--cost-cap-usd must be > 0, got {cost_cap_usd}")
    if cost_cap_usd is not None and (problem := number_problem(cost_cap_usd)):
        raise UsageError(f"--cost-cap-usd {problem}")
    if max_runtime_minutes is not None and max_runtime_minutes <= 0:
        raise UsageError(f"--max-runtime-minutes must be > 0, got {max_runtime_minutes}")
    if max_runtime_minutes is not None and (problem := number_problem(max_runtime_minutes)):
        raise UsageError(f"--max-runtime-minutes {problem}")
    return spec.with_budget_overrides(
        cost_cap_usd=cost_cap_usd, max_runtime_minutes=max_runtime_minutes
    )


def check_budget(
    spec: JobSpec,
    *,
    document: SourceDocument | None = None,
    overridden: bool = False,
) -> BudgetEstimate:
    """Raise ConfigError when max_runtime × assumed rate exceeds the cap, or when the deadline
    the cap buys is past MAX_CONFIG_NUMBER seconds (a tiny rate: the deadline must stay a
    finite, exact number)."""
    return check_budget_section(spec.budget, document=document, overridden=overridden)


def check_budget_section(
    budget: BudgetSpec,
    *,
    document: SourceDocument | None = None,
    overridden: bool = False,
) -> BudgetEstimate:
    """check_budget on the `budget` section alone (also when other sections do not parse)."""
    source = document.source if document is not None else "<config>"
    if budget.max_runtime_minutes is None:
        bought = budget.cost_cap_usd / budget.assumed_hourly_rate_usd * 3600
        if not bought <= MAX_CONFIG_NUMBER:
            path = ("budget", "assumed_hourly_rate_usd")
            raise ConfigError(
                [
                    ConfigProblem(
                        source=source,
                        line=document.line_of(path) if document is not None else None,
                        path="budget",
                        message=(
                            f"cost_cap_usd={budget.cost_cap_usd:g} at assumed_hourly_rate_usd="
                            f"{budget.assumed_hourly_rate_usd:g} buys a deadline past "
                            f"{MAX_CONFIG_NUMBER:,} seconds; set max_runtime_minutes or a "
                            "realistic rate"
                        ),
                    )
                ]
            )
    estimate = estimate_budget(budget)
    if budget.max_runtime_minutes is None:
        return estimate
    spend = budget.max_runtime_minutes / 60 * budget.assumed_hourly_rate_usd
    # A small tolerance so 30 min at 4.0 $/h against a 2.0 cap is not refused by rounding.
    if spend > budget.cost_cap_usd + 1e-9:
        path = ("budget", "max_runtime_minutes")
        line = document.line_of(path) if document is not None else None
        where = " (after --cost-cap-usd/--max-runtime-minutes)" if overridden else ""
        raise ConfigError(
            [
                ConfigProblem(
                    source=source,
                    line=line,
                    path="budget",
                    message=(
                        f"max_runtime_minutes={budget.max_runtime_minutes} at "
                        f"assumed_hourly_rate_usd={budget.assumed_hourly_rate_usd:g} costs "
                        f"${spend:.2f}, more than cost_cap_usd={budget.cost_cap_usd:g}{where}; "
                        "raise the cap or shorten the runtime"
                    ),
                )
            ]
        )
    return estimate
