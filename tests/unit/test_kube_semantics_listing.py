"""LIST paging and server-side Tables (kube_semantics.listing, kube_semantics.tables): pure rules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pegboard.adapters.kube_semantics.listing import (
    ListOptions,
    decode_continue,
    encode_continue,
    list_page,
    parse_list_options,
)
from pegboard.adapters.kube_semantics.status import StatusError
from pegboard.adapters.kube_semantics.tables import human_duration, table, wants_table

NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), unique=True, max_size=40)


def _objects(names: list[str]) -> list[tuple[str, dict[str, Any]]]:
    return [(n, {"metadata": {"name": n, "labels": {"even": str(len(n) % 2 == 0)}}}) for n in names]


@given(names=NAMES, limit=st.integers(1, 12), only_even=st.booleans())
def test_paging_returns_every_match_once_in_key_order(
    names: list[str], limit: int, only_even: bool
) -> None:
    def predicate(obj: Any) -> bool:
        return not only_even or obj["metadata"]["labels"]["even"] == "True"

    pairs = _objects(names)
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        options = parse_list_options(
            limit=str(limit),
            continue_token=token or None,
            resource_version=None,
            resource_version_match=None,
        )
        page = list_page(pairs, predicate, options, resource_version=7, has_selector=only_even)
        pages += 1
        assert len(page.items) <= limit
        if not only_even:  # with a selector, a page reads keys until it has `limit` matches
            assert page.scanned <= limit
        seen += [obj["metadata"]["name"] for obj in page.items]
        if not only_even and page.continue_token:
            assert page.remaining_item_count == len(names) - len(seen)
        if only_even:
            assert page.remaining_item_count is None
        token = page.continue_token
        if not token:
            break
        assert decode_continue(token)[0] == 7
    assert seen == sorted(n for n, obj in pairs if predicate(obj))
    assert pages <= len(names) // limit + 1


def test_resource_version_zero_ignores_limit() -> None:
    options = parse_list_options(
        limit="2", continue_token=None, resource_version="0", resource_version_match="NotOlderThan"
    )
    assert options.from_cache
    page = list_page(
        _objects(["c", "a", "b"]), lambda o: True, options, resource_version=3, has_selector=False
    )
    assert [o["metadata"]["name"] for o in page.items] == ["c", "a", "b"]
    assert page.continue_token == "" and page.scanned == 3


def test_a_limit_without_resource_version_reads_etcd() -> None:
    assert not ListOptions(limit=5).from_cache
    assert ListOptions().from_cache
    assert not ListOptions(resource_version="9", resource_version_match="Exact").from_cache


def test_continue_tokens_round_trip_and_reject_garbage() -> None:
    assert decode_continue(encode_continue(42, "ns/name")) == (42, "ns/name\x00")
    for bad in ("", "!!!", encode_continue(1, "x").replace("e", "f")):
        with pytest.raises(StatusError) as caught:
            decode_continue(bad)
        assert caught.value.code == 400


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (185, "3m5s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600 + 5 * 60, "3h5m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (30 * 86400, "30d"),
        (2 * 365 * 86400 + 30 * 86400, "2y30d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_ages_print_like_kubectl(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_table_is_asked_for_by_kubectls_accept_header() -> None:
    kubectl = (
        "application/json;as=Table;v=v1;g=meta.k8s.io,"
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
    )
    assert wants_table(kubectl)
    assert not wants_table("application/json")
    assert not wants_table(None)


def test_pod_rows_show_the_waiting_reason_and_terminating() -> None:
    pod = {
        "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "main"}]},
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "ready": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "ErrImagePull"}},
                }
            ],
        },
    }
    now = 1_767_225_600 * 10**9 + 65 * 10**9  # 65 s after creation
    row = table("Pod", [pod], now_ns=now)["rows"][0]
    assert row["cells"][:5] == ["p", "0/1", "ErrImagePull", 0, "65s"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    assert table("Pod", [pod], now_ns=now)["rows"][0]["cells"][2] == "Terminating"
