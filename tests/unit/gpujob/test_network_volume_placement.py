"""A network volume listed with several datacenters: the pod goes to the volume's datacenter."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from helpers.gpujob_run import RunHarness
from helpers.runpod_configs import spec_from, with_sections
from pegboard.adapters.fakes import FakeJob
from pegboard.domain.gpujob.network_volume import (
    VolumePlacementError,
    place_on_volume,
    several_datacenters_warning,
)
from pegboard.domain.ports.gpu_cloud import NetworkVolume

NETWORK_VOLUME = {
    "storage": {"mode": "network_volume", "volume_name": "models"},
    "pod": {"image": "img:1", "datacenters": ["EU-RO-1", "US-CA-2"], "gpu_order": ["GPU-A"]},
}


def test_placement_keeps_the_volumes_datacenter_and_names_the_skipped() -> None:
    volume = NetworkVolume("vol-1", "models", "US-CA-2")
    placement = place_on_volume(
        volume_name="models", volume=volume, datacenters=["EU-RO-1", "US-CA-2", "EU-SE-1"]
    )
    assert placement.datacenters == ("US-CA-2",)
    assert placement.skipped == ("EU-RO-1", "EU-SE-1")
    assert placement.info_line() == (
        "network volume 'models' (vol-1) is in US-CA-2; skipping datacenter(s) EU-RO-1, EU-SE-1"
    )


def test_placement_refuses_an_unknown_volume_or_an_unlisted_datacenter() -> None:
    with pytest.raises(VolumePlacementError, match="no network volume 'models'"):
        place_on_volume(volume_name="models", volume=None, datacenters=["EU-RO-1"])
    with pytest.raises(VolumePlacementError, match=r"is in CA-MTL-1, which pod\.datacenters"):
        place_on_volume(
            volume_name="models",
            volume=NetworkVolume("vol-1", "models", "CA-MTL-1"),
            datacenters=["EU-RO-1"],
        )


def test_a_volume_every_datacenter_reaches_keeps_them_all() -> None:
    placement = place_on_volume(
        volume_name="m", volume=NetworkVolume("l", "m", None), datacenters=["A", "B"]
    )
    assert placement.datacenters == ("A", "B") and placement.skipped == ()


def test_validate_warning_only_for_network_volume_with_several_datacenters() -> None:
    assert several_datacenters_warning(spec_from(with_sections(**NETWORK_VOLUME))) is not None
    assert several_datacenters_warning(spec_from(with_sections())) is None


def test_run_creates_the_pod_in_the_volumes_datacenter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = RunHarness(tmp_path, config=NETWORK_VOLUME)
    volume = h.cloud.add_volume("models", "US-CA-2")
    h.host.script_job(FakeJob(output=[(0.0, b"ALL_DONE\n")], exit_code=0))
    h.host.put("/workspace/out/result.json", b"{}")
    with caplog.at_level(logging.INFO):
        result = h.run()
    assert result.exit_code == 0, result.failure_reason
    (pod,) = h.cloud.pods.values()
    assert pod.request.datacenter_id == "US-CA-2"
    assert pod.request.network_volume_id == volume.volume_id and pod.request.volume_gb is None
    assert ("network_volume", "models") in h.cloud.calls
    assert "skipping datacenter(s) EU-RO-1" in caplog.text


@pytest.mark.parametrize(
    ("where", "reason"),
    [(None, "no network volume 'models'"), ("CA-MTL-1", "is in CA-MTL-1")],
)
def test_run_refuses_before_create_when_the_volume_cannot_be_used(
    tmp_path: Path, where: str | None, reason: str
) -> None:
    h = RunHarness(tmp_path, config=NETWORK_VOLUME)
    if where is not None:
        h.cloud.add_volume("models", where)
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 1 and manifest["failure_phase"] == "provision"
    assert reason in manifest["failure_reason"]
    assert h.cloud.pods == {}


def test_online_dry_run_looks_the_volume_up_and_creates_nothing(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config=NETWORK_VOLUME)
    h.cloud.add_volume("models", "US-CA-2")
    result = h.run(dry_run=True)
    assert result.exit_code == 0 and h.cloud.pods == {}
    availability = [c for c in h.cloud.calls if c[0] == "gpu_availability"]
    assert h.cloud.calls[0] == ("network_volume", "models") and availability


def test_override_datacenter_must_be_the_volumes(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config=NETWORK_VOLUME)
    h.cloud.add_volume("models", "US-CA-2")
    result = h.run(gpu_id="GPU-A", datacenter_id="EU-RO-1")
    assert result.exit_code == 1 and "the network volume is in US-CA-2" in (
        result.failure_reason or ""
    )
    assert h.cloud.pods == {}
