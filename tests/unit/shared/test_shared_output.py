"""The output layer both CLIs print listings and summaries with (pegboard.app.shared.output)."""

from __future__ import annotations

import json

import pytest
import yaml

from pegboard.app.shared.output import EMPTY, cell, header, render, render_table

ROWS = [
    {"run_id": "r-1", "status": "ok", "failure_reason": None, "cost_usd": 0.5},
    {"run_id": "run-two", "status": "failed", "failure_reason": "oom", "cost_usd": None},
]


def test_headers_follow_one_case_rule() -> None:
    assert header("failure_reason") == "FAILURE REASON"
    assert header("run-id") == "RUN ID"


@pytest.mark.parametrize("empty", [None, "", [], {}, ()])
def test_empty_values_render_as_a_dash(empty: object) -> None:
    assert cell(empty) == EMPTY == "—"


def test_table_aligns_columns_and_renders_empty_values() -> None:
    text = render_table(["run_id", "failure_reason", "status"], ROWS)
    assert text.splitlines() == [
        "RUN ID   FAILURE REASON  STATUS",
        "r-1      —               ok",
        "run-two  oom             failed",
    ]


def test_json_keeps_nulls_and_every_field() -> None:
    assert json.loads(render(ROWS, "json", columns=["run_id"])) == ROWS


def test_yaml_is_the_same_data() -> None:
    assert yaml.safe_load(render(ROWS, "yaml")) == ROWS


def test_a_summary_is_key_value_lines() -> None:
    text = render({"run_id": "r-1", "failure_reason": None}, "table")
    assert text.splitlines() == ["RUN ID          r-1", "FAILURE REASON  —"]
    assert json.loads(render({"run_id": "r-1"}, "json")) == {"run_id": "r-1"}


def test_an_empty_listing_is_an_empty_table_and_an_empty_json_list() -> None:
    assert render([], "table", columns=["run_id"]) == "RUN ID\n"
    assert json.loads(render([], "json")) == []


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="table, json, yaml"):
        render(ROWS, "xml")
