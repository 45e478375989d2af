"""merge_layers: per-layer interpolation and validation, merge order, profiles at their layer."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.config import RunMode, SquarepegConfig
from pegboard.domain.squarepeg.layers import (
    BUILT_IN_SOURCE,
    MergedConfig,
    built_in_defaults,
    config_from_layers,
    merge_layers,
)


def _doc(source: str, data: dict[str, Any], **lines: int) -> SourceDocument:
    return SourceDocument(source=source, data=data, lines={(k,): v for k, v in lines.items()})


def _merge(
    *docs: SourceDocument, profile: str | None = None, env: dict[str, str] | None = None
) -> MergedConfig:
    return merge_layers([built_in_defaults(), *docs], environ=env or {}, profile=profile)


def test_defaults_only() -> None:
    merged = _merge()
    assert merged.config == SquarepegConfig()
    assert merged.sources == (BUILT_IN_SOURCE,)
    assert merged.data["timeout"] == 300
    assert "profiles" not in merged.data


def test_defaults_only_is_what_validating_the_defaults_gives() -> None:
    # The defaults alone skip validation; an empty file on top goes through it: same result.
    fast, validated = _merge(), _merge(_doc("empty.yaml", {}))
    assert (fast.config, fast.data) == (validated.config, validated.data)


def test_defaults_only_with_a_profile_still_reports_the_unknown_profile() -> None:
    with pytest.raises(ConfigError, match="unknown profile 'gpu'"):
        _merge(profile="gpu")


def test_later_layers_win_and_mappings_merge() -> None:
    merged = _merge(
        _doc("home", {"namespace": "a", "defaults": {"env": {"A": "1", "B": "1"}}}),
        _doc("cli", {"namespace": "b", "defaults": {"env": {"B": "2"}}}),
    )
    assert merged.config.namespace == "b"
    assert merged.config.defaults.env == {"A": "1", "B": "2"}
    assert merged.sources == (BUILT_IN_SOURCE, "home", "cli")


def test_profile_applies_at_its_own_layer() -> None:
    home = _doc(
        "home", {"timeout": 10, "profiles": {"gpu": {"namespace": "gpu-ns", "timeout": 20}}}
    )
    cli = _doc("cli", {"namespace": "cli-ns"})
    merged = _merge(home, cli, profile="gpu")
    assert merged.config.namespace == "cli-ns"  # higher layer's top-level key wins
    assert merged.config.timeout == 20  # the profile beats its own layer and those below


def test_profile_defined_in_several_layers_applies_at_each() -> None:
    low = _doc("low", {"profiles": {"p": {"defaults": {"env": {"A": "low", "B": "low"}}}}})
    high = _doc(
        "high",
        {
            "defaults": {"env": {"A": "high-top"}},
            "profiles": {"p": {"defaults": {"env": {"B": "high"}}}},
        },
    )
    env = _merge(low, high, profile="p").config.defaults.env
    assert env == {"A": "high-top", "B": "high"}


def test_unknown_profile_lists_the_available_ones() -> None:
    docs = (_doc("a", {"profiles": {"zeta": {}}}), _doc("b", {"profiles": {"alpha": {}}}))
    with pytest.raises(
        ConfigError, match="unknown profile 'nope'; available profiles: alpha, zeta"
    ):
        _merge(*docs, profile="nope")
    with pytest.raises(ConfigError, match="none are defined"):
        _merge(profile="nope")


def test_no_profile_selected_leaves_profiles_out_of_the_data_but_in_the_config() -> None:
    merged = _merge(_doc("a", {"profiles": {"p": {"mode": "job"}}}))
    assert merged.config.mode is RunMode.POD
    assert merged.config.profiles["p"].mode is RunMode.JOB
    assert "profiles" not in merged.data


def test_problems_of_every_layer_are_reported_together() -> None:
    with pytest.raises(ConfigError) as exc:
        _merge(
            _doc("one", {"timeout": "soon"}, timeout=3),
            _doc("two", {"namespace": "${UNSET}"}, namespace=5),
        )
    assert [(p.source, p.line, p.path) for p in exc.value.problems] == [
        ("one", 3, "timeout"),
        ("two", 5, "namespace"),
    ]


def test_unselected_profiles_are_interpolated_and_validated() -> None:
    with pytest.raises(ConfigError, match=r"profiles\.unused\.namespace"):
        _merge(_doc("a", {"profiles": {"unused": {"namespace": "${UNSET}"}}}))
    with pytest.raises(ConfigError, match=r"profiles\.unused\.timeout"):
        _merge(_doc("a", {"profiles": {"unused": {"timeout": "x"}}}))


def test_interpolated_values_are_merged_and_coerced() -> None:
    merged = _merge(_doc("a", {"timeout": "${T}", "quiet": "${Q:-yes}"}), env={"T": "42"})
    assert merged.config.timeout == 42
    assert merged.config.quiet is True
    assert merged.data["timeout"] == "42"  # config show prints what the file said


def test_a_null_section_in_a_higher_layer_adds_nothing() -> None:
    merged = _merge(_doc("a", {"defaults": {"cpus": "2"}}), _doc("b", {"defaults": None}))
    assert merged.config.defaults.cpus == "2"


def test_null_scalar_in_a_higher_layer_unsets() -> None:
    merged = _merge(_doc("a", {"namespace": "x"}), _doc("b", {"namespace": None}))
    assert merged.config.namespace is None


def test_data_is_in_schema_order() -> None:
    merged = _merge(_doc("a", {"kubernetes": {"spec": {}}, "namespace": "n"}))
    keys = list(merged.data)
    assert keys.index("namespace") < keys.index("mode") < keys.index("kubernetes")


def test_ambiguous_named_list_merge_names_the_layer() -> None:
    base = {"kubernetes": {"spec": {"volumes": [{"name": "v"}, {"name": "v"}]}}}
    overlay = {"kubernetes": {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}}
    with pytest.raises(ConfigError, match="ambiguous") as exc:
        _merge(_doc("a", base), _doc("b", overlay))
    assert exc.value.problems[0].source == "b"


def test_inputs_are_not_mutated() -> None:
    data = {"defaults": {"env": {"A": "${X:-1}"}}, "profiles": {"p": {"timeout": 5}}}
    doc = _doc("a", data)
    _merge(doc, profile="p")
    assert data == {"defaults": {"env": {"A": "${X:-1}"}}, "profiles": {"p": {"timeout": 5}}}


def test_config_from_layers_accepts_documents_and_mappings() -> None:
    config = config_from_layers(
        [{"namespace": "a", "profiles": {"p": {"timeout": 9}}}, _doc("f", {"quiet": True})],
        environ={},
        profile="p",
    )
    assert (config.namespace, config.timeout, config.quiet) == ("a", 9, True)
