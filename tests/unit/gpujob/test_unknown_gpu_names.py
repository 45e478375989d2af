"""A GPU name no catalog lists is a config error naming its key and the closest names (issue
17 item 8), never a stock-out: in `run` before anything is recorded, and for --gpu-id."""

from __future__ import annotations

from pathlib import Path

from helpers.gpujob_run import RunHarness
from pegboard.app.runpod_deploy.gpu_names import unknown_gpu_message

A4000, A4500 = "NVIDIA RTX A4000", "NVIDIA RTX A4500"
POD = {"image": "img:1", "datacenters": ["DC-1"], "gpu_order": ["NVIDIA RTX A400", A4500]}


def _harness(tmp_path: Path) -> RunHarness:
    h = RunHarness(tmp_path, config={"pod": POD})
    h.cloud.prices.update({A4000: 0.17, A4500: 0.19, "NVIDIA A40": 0.35})
    h.cloud.default_stock = "none"  # as RunPod: a name its listing lacks has no stock
    h.cloud.set_stock(A4500, "DC-1", "high")
    return h


def test_run_refuses_an_unknown_gpu_name_before_any_pod_exists(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    for dry_run in (False, True):
        result = h.run(dry_run=dry_run)
        assert result.exit_code == 2  # a config error, not a stock-out (1) nor 0
        manifest = h.manifest(result)
        assert manifest["failure_phase"] == "provision"
        reason = manifest["failure_reason"]
        assert "pod.gpu_order[0]: unknown GPU type 'NVIDIA RTX A400'" in reason
        assert "closest: " in reason and A4000 in reason.split("closest: ")[1]
        assert "stock" not in reason
        assert "pod.gpu_order[1]" not in reason  # the known one is not named
    assert h.cloud.pods == {} and h.pointer() is None


def test_a_gpu_id_flag_no_catalog_lists_is_a_config_error(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    result = h.run(gpu_id="A4000", datacenter_id="DC-1")
    assert result.exit_code == 2
    assert "--gpu-id: unknown GPU type 'A4000'" in h.manifest(result)["failure_reason"]
    assert h.cloud.pods == {}


def test_a_provider_without_a_catalog_is_not_checked(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"pod": POD})  # the fake lists no GPU type at all
    h.host.on_command(r".*", exit_code=0)
    assert h.run().exit_code in (0, 1)  # not a ConfigError: stock decides


def test_the_closest_names_ignore_case() -> None:
    message = unknown_gpu_message("nvidia rtx a4000", frozenset({A4000, "NVIDIA H100 80GB HBM3"}))
    assert f"closest: {A4000}" in message
