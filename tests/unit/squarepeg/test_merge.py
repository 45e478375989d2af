"""deep_merge: mapping, named-list and plain-list rules, claims, purity."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.merge import deep_merge

MAIN = "/spec/containers/[name=main]"


def test_mappings_merge_key_by_key() -> None:
    base = {"a": 1, "b": {"x": 1, "y": 2}}
    overlay = {"b": {"y": 3, "z": 4}, "c": 5}
    assert deep_merge(base, overlay) == {"a": 1, "b": {"x": 1, "y": 3, "z": 4}, "c": 5}


def test_scalars_null_and_type_mismatch_take_the_overlay() -> None:
    base = {"a": 1, "b": {"x": 1}, "c": [1], "d": "s"}
    overlay = {"a": None, "b": "flat", "c": {"k": 1}, "d": 2}
    assert deep_merge(base, overlay) == overlay


def test_named_lists_merge_by_name_keeping_base_order_and_appending_new_names() -> None:
    base = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    overlay = {"env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}]}
    assert deep_merge(base, overlay)["env"] == [
        {"name": "A", "value": "9"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "3"},
    ]


def test_matching_named_items_are_deep_merged() -> None:
    base = {"containers": [{"name": "main", "image": "x", "resources": {"limits": {"cpu": "1"}}}]}
    overlay = {"containers": [{"name": "main", "resources": {"limits": {"memory": "1Gi"}}}]}
    assert deep_merge(base, overlay)["containers"] == [
        {"name": "main", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
    ]


def test_empty_list_clears_a_named_list() -> None:
    base = {"imagePullSecrets": [{"name": "regcred"}]}
    assert deep_merge(base, {"imagePullSecrets": []}) == {"imagePullSecrets": []}


def test_other_lists_are_replaced_wholesale() -> None:
    base = {"args": ["a", "b"], "tolerations": [{"key": "k"}]}
    overlay = {"args": ["c"], "tolerations": []}
    assert deep_merge(base, overlay) == {"args": ["c"], "tolerations": []}


def test_list_without_names_replaces_a_named_list() -> None:
    base = {"containers": [{"name": "main", "image": "x"}]}
    overlay = {"containers": [{"image": "other"}]}
    assert deep_merge(base, overlay) == overlay


def test_duplicate_names_in_base_are_kept_and_new_names_appended() -> None:
    base = {"m": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]}
    merged = deep_merge(base, {"m": [{"name": "w", "mountPath": "/c"}]})
    assert [item["mountPath"] for item in merged["m"]] == ["/a", "/b", "/c"]


def test_overlay_referencing_a_duplicated_name_is_ambiguous() -> None:
    base = {"m": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]}
    with pytest.raises(ConfigError, match="ambiguous") as exc:
        deep_merge(base, {"m": [{"name": "v", "readOnly": True}]}, source="c.yaml")
    assert exc.value.problems[0].source == "c.yaml"
    assert exc.value.problems[0].path == "/m"


def test_claimed_scalar_keeps_the_base_value() -> None:
    base = {"spec": {"containers": [{"name": "main", "workingDir": "/cli"}]}}
    overlay = {"spec": {"containers": [{"name": "main", "workingDir": "/cfg", "tty": True}]}}
    merged = deep_merge(base, overlay, claims=frozenset({f"{MAIN}/workingDir"}))
    assert merged["spec"]["containers"] == [{"name": "main", "workingDir": "/cli", "tty": True}]


def test_claimed_named_item_keeps_the_whole_base_subtree() -> None:
    claim = f"{MAIN}/env/[name=FOO]"
    base = {"spec": {"containers": [{"name": "main", "env": [{"name": "FOO", "value": "cli"}]}]}}
    overlay = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "env": [
                        {"name": "FOO", "valueFrom": {"secretKeyRef": {"name": "s"}}},
                        {"name": "BAR", "value": "cfg"},
                    ],
                }
            ]
        }
    }
    merged = deep_merge(base, overlay, claims=frozenset({claim}))
    assert merged["spec"]["containers"][0]["env"] == [
        {"name": "FOO", "value": "cli"},
        {"name": "BAR", "value": "cfg"},
    ]


def test_claimed_path_absent_from_base_stays_absent() -> None:
    merged = deep_merge(
        {"metadata": {}},
        {"metadata": {"name": "evil", "labels": {"a": "b"}}},
        claims=frozenset({"/metadata/name"}),
    )
    assert merged == {"metadata": {"labels": {"a": "b"}}}


def test_claims_inside_an_overlay_only_subtree_are_left_out() -> None:
    merged = deep_merge(
        {},
        {"spec": {"containers": [{"name": "main", "args": ["x"], "tty": True}]}},
        claims=frozenset({f"{MAIN}/args"}),
    )
    assert merged == {"spec": {"containers": [{"name": "main", "tty": True}]}}


def test_empty_list_keeps_claimed_items_of_a_named_list() -> None:
    claim = f"{MAIN}/env/[name=FOO]"
    base = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "env": [{"name": "FOO", "value": "1"}, {"name": "X", "value": "2"}],
                }
            ]
        }
    }
    overlay = {"spec": {"containers": [{"name": "main", "env": []}]}}
    merged = deep_merge(base, overlay, claims=frozenset({claim}))
    assert merged["spec"]["containers"][0]["env"] == [{"name": "FOO", "value": "1"}]


def test_nameless_list_cannot_replace_a_list_holding_claimed_items() -> None:
    base = {"spec": {"containers": [{"name": "main", "image": "x", "args": ["cli"]}]}}
    overlay = {"spec": {"containers": [{"image": "other"}]}}
    with pytest.raises(ConfigError) as exc:
        deep_merge(base, overlay, claims=frozenset({f"{MAIN}/args"}), source="passthrough")
    (problem,) = exc.value.problems
    assert problem.path == "/spec/containers"
    assert f"{MAIN}/args" in problem.message


@pytest.mark.parametrize("replacement", [None, "text", 3, ["a"]])
def test_replacing_a_mapping_holding_a_claim_is_an_error(replacement: Any) -> None:
    base = {"metadata": {"name": "cli", "labels": {}}}
    with pytest.raises(ConfigError, match="/metadata/name"):
        deep_merge(base, {"metadata": replacement}, claims=frozenset({"/metadata/name"}))


def test_replacement_is_fine_when_the_claimed_value_is_not_in_the_base() -> None:
    base: dict[str, Any] = {"metadata": {"labels": {}}}
    merged = deep_merge(base, {"metadata": None}, claims=frozenset({"/metadata/name"}))
    assert merged == {"metadata": None}


def test_path_roots_the_claims() -> None:
    base = {"containers": [{"name": "main", "args": ["cli"]}]}
    overlay = {"containers": [{"name": "main", "args": ["cfg"]}]}
    merged = deep_merge(base, overlay, claims=frozenset({f"{MAIN}/args"}), path="/spec")
    assert merged == base
    assert deep_merge(base, overlay, claims=frozenset({"/spec"}), path="/spec") == base


def test_keys_containing_slashes_work_in_claims() -> None:
    claim = f"{MAIN}/resources/limits/nvidia.com/gpu"
    base = {
        "spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    }
    overlay = {
        "spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}
    }
    assert deep_merge(base, overlay, claims=frozenset({claim})) == base


def test_inputs_are_never_mutated_or_aliased() -> None:
    base = {"a": {"b": [{"name": "x", "v": [1]}]}, "only_base": {"k": [1]}}
    overlay = {"a": {"b": [{"name": "y", "v": [2]}]}, "only_overlay": {"k": [2]}}
    before = copy.deepcopy((base, overlay))
    merged = deep_merge(base, overlay)
    assert (base, overlay) == before
    merged["a"]["b"][0]["v"].append(99)
    merged["a"]["b"][1]["v"].append(99)
    merged["only_base"]["k"].append(99)
    merged["only_overlay"]["k"].append(99)
    assert (base, overlay) == before
