"""The GpuCloud contract, written once and run against every adapter (not collected itself).

A test module subclasses GpuCloudContract and provides a `driver` fixture with:
  cloud                       the GpuCloud under test
  request(name) -> PodRequest a request this adapter can satisfy
  settle()                    let time pass a little (real sleep or virtual clock)
  volume_name                 the name of a network volume the account has
  unknown_volume_name         a name no volume has, or None if every name resolves (local)
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pegboard.domain.errors import NotFound
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    GpuCloud,
    NetworkVolume,
    PodStatus,
)

STOCK_LEVELS = {"high", "medium", "low", "none"}


def _wait_ready(driver: Any, pod_id: str, budget: float = 10.0) -> PodStatus:
    deadline = time.monotonic() + budget
    while True:
        status = driver.cloud.get_pod(pod_id)
        if status.ready or time.monotonic() > deadline:
            return status
        driver.settle()


class GpuCloudContract:
    def test_is_a_gpu_cloud_with_a_provider_name(self, driver: Any) -> None:
        assert isinstance(driver.cloud, GpuCloud)
        assert isinstance(driver.cloud.provider, str) and driver.cloud.provider

    def test_availability_has_one_entry_per_gpu_and_datacenter(self, driver: Any) -> None:
        req = driver.request("probe")
        stock = driver.cloud.gpu_availability(
            gpu_ids=[req.gpu_id, "OTHER-GPU"],
            datacenter_ids=[req.datacenter_id, "DC-2"],
            cloud_type=req.cloud_type,
        )
        pairs = {(s.gpu_id, s.datacenter_id) for s in stock}
        assert pairs == {
            (g, d) for g in (req.gpu_id, "OTHER-GPU") for d in (req.datacenter_id, "DC-2")
        }
        assert all(isinstance(s.stock, str) for s in stock)

    def test_prices_are_floats_per_gpu(self, driver: Any) -> None:
        prices = driver.cloud.gpu_prices(cloud_type="SECURE")
        assert all(isinstance(k, str) and isinstance(v, float) for k, v in prices.items())

    def test_create_get_find_stop_resume_terminate(self, driver: Any) -> None:
        req = driver.request("contract-pod-1")
        handle = driver.cloud.create_pod(req)
        assert handle.pod_id and handle.name == req.name
        status = _wait_ready(driver, handle.pod_id)
        assert status.ready and status.desired_status == POD_RUNNING
        assert (status.gpu_id, status.datacenter_id, status.image) == (
            req.gpu_id,
            req.datacenter_id,
            req.image,
        )
        assert [p.pod_id for p in driver.cloud.find_pods(name=req.name)] == [handle.pod_id]
        assert driver.cloud.find_pods(name="someone-else") == []
        driver.cloud.stop_pod(handle.pod_id)
        assert driver.cloud.get_pod(handle.pod_id).desired_status == POD_EXITED
        driver.cloud.resume_pod(handle.pod_id)
        assert _wait_ready(driver, handle.pod_id).ready
        driver.cloud.terminate_pod(handle.pod_id)
        with pytest.raises(NotFound):
            driver.cloud.get_pod(handle.pod_id)
        assert driver.cloud.find_pods(name=req.name) == []
        driver.cloud.terminate_pod(handle.pod_id)  # already gone: not an error

    def test_unknown_pod_is_not_found(self, driver: Any) -> None:
        with pytest.raises(NotFound):
            driver.cloud.get_pod("no-such-pod")
        with pytest.raises(NotFound):
            driver.cloud.stop_pod("no-such-pod")

    def test_two_pods_get_distinct_ids(self, driver: Any) -> None:
        a = driver.cloud.create_pod(driver.request("twin"))
        b = driver.cloud.create_pod(driver.request("twin"))
        try:
            assert a.pod_id != b.pod_id
            assert {p.pod_id for p in driver.cloud.find_pods(name="twin")} == {a.pod_id, b.pod_id}
        finally:
            driver.cloud.terminate_pod(a.pod_id)
            driver.cloud.terminate_pod(b.pod_id)

    def test_list_pods_filters_by_status_and_knows_when_a_pod_stopped(self, driver: Any) -> None:
        running = driver.cloud.create_pod(driver.request("lister-running"))
        stopped = driver.cloud.create_pod(driver.request("lister-stopped"))
        gone = driver.cloud.create_pod(driver.request("lister-gone"))
        try:
            driver.cloud.stop_pod(stopped.pod_id)
            driver.cloud.terminate_pod(gone.pod_id)
            everything = {p.pod_id: p for p in driver.cloud.list_pods()}
            assert {running.pod_id, stopped.pod_id} <= set(everything)
            assert gone.pod_id not in everything  # terminated pods are not listed
            exited = driver.cloud.list_pods(status=POD_EXITED)
            assert stopped.pod_id in {p.pod_id for p in exited}
            assert running.pod_id not in {p.pod_id for p in exited}
            assert all(p.desired_status == POD_EXITED for p in exited)
            listed = everything[stopped.pod_id]
            assert listed.name == "lister-stopped"
            assert listed.volume_gb == driver.request("x").volume_gb
            assert listed.stopped_at is None or listed.stopped_at > 0
            assert everything[running.pod_id].stopped_at is None
            driver.cloud.resume_pod(stopped.pod_id)
            assert driver.cloud.get_pod(stopped.pod_id).stopped_at is None
        finally:
            driver.cloud.terminate_pod(running.pod_id)
            driver.cloud.terminate_pod(stopped.pod_id)

    def test_datacenter_stock_lists_gpus_of_the_asked_datacenters(self, driver: Any) -> None:
        req = driver.request("probe")
        listed = driver.cloud.datacenter_stock(
            datacenter_ids=[req.datacenter_id], cloud_type=req.cloud_type
        )
        assert listed, "the datacenter the adapter can create in lists at least one GPU"
        assert all(s.datacenter_id == req.datacenter_id for s in listed)
        assert all(isinstance(s.gpu_id, str) and s.gpu_id for s in listed)
        assert all(s.stock in STOCK_LEVELS for s in listed)

    def test_network_volume_is_found_by_name_and_by_id(self, driver: Any) -> None:
        by_name = driver.cloud.network_volume(driver.volume_name)
        assert isinstance(by_name, NetworkVolume)
        assert by_name.name == driver.volume_name and by_name.volume_id
        assert by_name.datacenter_id is None or isinstance(by_name.datacenter_id, str)
        assert driver.cloud.network_volume(by_name.volume_id) == by_name
        if driver.unknown_volume_name is not None:  # None: every name is a volume (local)
            assert driver.cloud.network_volume(driver.unknown_volume_name) is None
