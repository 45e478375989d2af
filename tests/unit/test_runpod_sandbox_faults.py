"""The RunPod sandbox's fault knobs as the control endpoint and the CLI flags spell them."""

from __future__ import annotations

import pytest

from pegboard.adapters.sandboxes.runpod import Faults
from pegboard.app.runpod_deploy.cli.sandbox_faults import fault_knobs
from pegboard.domain.errors import UsageError


def test_the_flags_make_the_endpoints_json_and_it_round_trips() -> None:
    knobs = fault_knobs(
        stock_out=("NVIDIA RTX A4000@EU-RO-1:3", "*"),
        throttle=("createPod:2:5", "*"),
        http_503=("getPod", "getPod:2"),
        create_5xx=1,
        never_ready=True,
        ssh_delay=2.5,
        faults_json='{"latency_ms": 10}',
    )
    faults = Faults()
    faults.update_from_json(knobs)
    assert [(r.gpu_id, r.datacenter_id, r.times) for r in faults.stock_out_at_create] == [
        ("NVIDIA RTX A4000", "EU-RO-1", 3),
        (None, None, 1),
    ]
    assert [(t.operation, t.times, t.retry_after_sec) for t in faults.throttle] == [
        ("createPod", 2, 5),
        ("*", 1, 1),
    ]
    assert faults.http_503 == {"getPod": 3}
    assert (faults.create_5xx_after_pod_exists, faults.ssh_never_ready) == (1, True)
    assert (faults.ssh_ready_delay_sec, faults.latency_ms) == (2.5, 10.0)
    again = Faults()
    again.update_from_json(faults.to_json())
    assert again.to_json() == faults.to_json()
    assert fault_knobs() == {}


def test_throttle_rules_are_consumed_in_order() -> None:
    faults = Faults()
    faults.update_from_json({"throttle": [{"operation": "getPod", "times": 2}]})
    assert faults.take_throttle("listPods") is None
    assert faults.take_throttle("getPod") is not None
    assert faults.take_throttle("getPod") is not None
    assert faults.take_throttle("getPod") is None and faults.throttle == []


@pytest.mark.parametrize(
    ("knobs", "needle"),
    [
        ({"latency_ms": -1}, "latency_ms: a non-negative number"),
        ({"http_503": {"getPod": "x"}}, "http_503"),
        ({"throttle": [{"operation": "x", "times": 0}]}, "times must be a positive integer"),
        ({"throttle": [{"op": "x"}]}, "each rule is an object with keys"),
        ({"stock_out_at_create": {}}, "a list of rules"),
        ({"bogus": 1}, "unknown fault knob(s) ['bogus']"),
    ],
)
def test_a_bad_knob_is_named_and_nothing_is_set(knobs: dict, needle: str) -> None:
    faults = Faults()
    with pytest.raises(ValueError) as caught:
        faults.update_from_json({"ssh_never_ready": True, **knobs})
    assert needle in str(caught.value)
    assert faults.ssh_never_ready is False


def test_a_malformed_flag_names_itself() -> None:
    with pytest.raises(UsageError, match="--stock-out"):
        fault_knobs(stock_out=("A4000:many",))
