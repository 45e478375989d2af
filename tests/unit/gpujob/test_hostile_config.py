"""runpod-deploy configs built to hang, exhaust memory or crash (issue 7, items 11, 12, 14):
refused by the domain rules with one problem each, before anything is rendered or created."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from helpers.runpod_configs import document, spec_from, with_sections
from pegboard.adapters.providers import discover_registry
from pegboard.domain.errors import ConfigError, UsageError
from pegboard.domain.gpujob.budget import apply_budget_overrides, check_budget
from pegboard.domain.gpujob.spec_validation import parse_job_spec
from pegboard.domain.gpujob.templates import RunBuiltins, render_job
from pegboard.domain.input_limits import MAX_RENDERED_CHARS

BUILTINS = RunBuiltins(
    config_path="/p/job.yaml",
    project_root="/p",
    run_stamp="20260101T000000.000000Z-beef",
    home="/h",
)


def render(text: str, **cli: str) -> Any:
    doc = document(text)
    return render_job(
        parse_job_spec(doc, discover_registry()), cli_vars=cli, builtins=BUILTINS, document=doc
    )


def variable_bomb(levels: int = 10) -> dict[str, str]:
    """a0 is ten characters; each level repeats the one below ten times: 10**(levels+1)."""
    variables = {"a0": "x" * 10}
    for level in range(1, levels + 1):
        variables[f"a{level}"] = "".join("{a" + str(level - 1) + "}" for _ in range(10))
    return variables


def test_an_unused_variable_bomb_is_refused_without_being_expanded() -> None:
    text = with_sections(variables=variable_bomb())
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as caught:
            render(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024  # was ~10 GB
    [problem] = caught.value.problems  # reported once, where it crossed the limit
    assert problem.path == "variables.a6"
    assert f"renders to 10000000 characters, more than the limit {MAX_RENDERED_CHARS}" in str(
        problem
    )


def test_a_field_that_multiplies_a_large_variable_is_refused() -> None:
    big = "x" * 200_000
    text = with_sections(
        variables={"big": big},
        run={
            "script_path": "/workspace/r.sh",
            "log_path": "/workspace/r.log",
            "success_marker": "DONE",
            "body": "echo " + "{big}" * 10,
        },
    )
    with pytest.raises(ConfigError, match=r"run.body: renders to 2000005 characters"):
        render(text)


def test_many_variables_each_under_the_limit_hit_the_total() -> None:
    variables = {"b": "x" * 900_000}
    variables.update({f"v{i}": "{b}" for i in range(20)})
    with pytest.raises(ConfigError, match="renders to more than 8000000 characters in all"):
        render(with_sections(variables=variables))


def test_a_long_chain_of_variables_is_refused_not_a_recursion_error() -> None:
    variables = {f"v{i}": "{v" + str(i + 1) + "}" for i in range(3000)}
    variables["v3000"] = "end"
    with pytest.raises(ConfigError, match="variables reference each other more than 64 deep"):
        render(with_sections(variables=variables))


def test_a_short_chain_still_renders() -> None:
    variables = {f"v{i}": "{v" + str(i + 1) + "}" for i in range(30)}
    variables["v30"] = "end"
    assert render(with_sections(variables=variables)).variables["v0"] == "end"


@pytest.mark.parametrize(
    ("budget", "fragment"),
    [
        ({"cost_cap_usd": float("inf")}, "budget.cost_cap_usd: must be a finite number, got inf"),
        ({"cost_cap_usd": float("nan")}, "budget.cost_cap_usd: must be a finite number, got nan"),
        ({"cost_cap_usd": 1e308}, "budget.cost_cap_usd: must be at most 1,000,000,000,000"),
        ({"max_runtime_minutes": 10**30}, "budget.max_runtime_minutes: must be at most"),
    ],
)
def test_numbers_out_of_range_are_refused_by_the_spec(
    budget: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(")):
        spec_from(with_sections(budget=budget))


def test_a_cap_that_buys_an_endless_deadline_is_refused_not_an_overflow() -> None:
    text = with_sections(budget={"cost_cap_usd": 1e12, "assumed_hourly_rate_usd": 1e-300})
    doc = document(text)
    spec = parse_job_spec(doc, discover_registry())
    with pytest.raises(ConfigError, match="buys a deadline past 1,000,000,000,000 seconds"):
        check_budget(spec, document=doc)


@pytest.mark.parametrize(
    ("cap", "minutes", "fragment"),
    [
        (float("inf"), None, "--cost-cap-usd must be a finite number"),
        (float("nan"), None, "--cost-cap-usd must be > 0, got nan"),
        (None, 10**20, "--max-runtime-minutes must be at most"),
    ],
)
def test_budget_flags_out_of_range(cap: float | None, minutes: int | None, fragment: str) -> None:
    spec = spec_from(with_sections())
    with pytest.raises(UsageError, match=fragment):
        apply_budget_overrides(spec, cost_cap_usd=cap, max_runtime_minutes=minutes)


def test_an_artifact_local_path_may_not_climb_out_of_project_root() -> None:
    artifacts = [{"label": "out", "remote_path": "/workspace/out/", "local_path": "../../etc/"}]
    with pytest.raises(
        ConfigError, match=r"artifacts\[0\].local_path: '../../etc/' resolves to /etc"
    ):
        render(with_sections(artifacts=artifacts))


def test_artifact_local_paths_inside_the_project_or_absolute_still_work() -> None:
    artifacts = [
        {"label": "a", "remote_path": "/workspace/a/", "local_path": "out/../kept/"},
        {"label": "b", "remote_path": "/workspace/b/", "local_path": "/data/b/"},
    ]
    job = render(with_sections(artifacts=artifacts))
    assert [a.local_path for a in job.artifacts] == ["/p/kept/", "/data/b/"]


@pytest.mark.parametrize(
    ("sections", "fragment"),
    [
        (
            {"staging": [{"label": "s", "source": "src/", "destination": "/workspace/../../etc"}]},
            "staging[0].destination: '/workspace/../../etc' must not contain '..'",
        ),
        (
            {"artifacts": [{"label": "a", "remote_path": "/workspace/../x", "local_path": "o/"}]},
            "artifacts[0].remote_path: '/workspace/../x' must not contain '..'",
        ),
    ],
)
def test_pod_paths_that_climb_are_refused_before_any_pod(
    sections: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        render(with_sections(**sections))
    assert fragment in str(caught.value)
