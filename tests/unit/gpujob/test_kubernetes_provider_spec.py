"""`pod.provider: kubernetes`: the `kubernetes:` section (its defaults, every bad value named by
its key), the plugin's declarations and its locator through a pointer's JSON."""

from __future__ import annotations

import json

import pytest

from helpers.runpod_configs import spec_from, with_sections
from pegboard.adapters.providers import discover_registry
from pegboard.adapters.providers.kubernetes import KubernetesLocator
from pegboard.adapters.providers.kubernetes.section import KubernetesSpec
from pegboard.domain.errors import ConfigError
from pegboard.domain.gpujob.provider_plugin import LocatorContext, unstructure_locator

POD = {"provider": "kubernetes", "image": "python:3.12", "gpu_order": ["NVIDIA L4"]}


def problems(**sections: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        spec_from(with_sections(**sections))
    return [f"{p.path}: {p.message}" for p in caught.value.problems]


def test_the_section_defaults_and_datacenters_are_optional() -> None:
    spec = spec_from(with_sections(pod=POD))
    assert spec.pod.provider == "kubernetes" and spec.pod.datacenters == ("cluster",)
    assert spec.section("kubernetes") == KubernetesSpec()
    section = KubernetesSpec()
    assert (section.gpu_resource, section.gpu_label) == ("nvidia.com/gpu", "nvidia.com/gpu.product")
    assert (section.context, section.namespace, section.schedule_timeout_sec) == (None, None, 120)


def test_every_key_is_read() -> None:
    spec = spec_from(
        with_sections(
            pod=POD,
            kubernetes={
                "context": "lab",
                "namespace": "ml-team",
                "gpu_resource": "amd.com/gpu",
                "gpu_label": "cloud.google.com/gke-accelerator",
                "price_per_hour": {"NVIDIA L4": 0.4},
                "storage_class": "fast",
                "schedule_timeout_sec": 30,
            },
        )
    )
    section = spec.section("kubernetes")
    assert section.namespace == "ml-team" and section.price_per_hour == {"NVIDIA L4": 0.4}
    assert section.schedule_timeout_sec == 30 and section.storage_class == "fast"


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"namespace": "ML"}, "kubernetes.namespace: 'ML' is not a namespace name"),
        ({"gpu_label": "no spaces please"}, "kubernetes.gpu_label: 'no spaces please' is not"),
        ({"gpu_resource": "/gpu"}, "kubernetes.gpu_resource: '/gpu' is not"),
        ({"price_per_hour": {"NVIDIA L4": 0}}, "kubernetes.price_per_hour"),
        ({"price_per_hour": {"NVIDIA L4": "cheap"}}, "kubernetes.price_per_hour"),
        ({"schedule_timeout_sec": 0}, "kubernetes.schedule_timeout_sec"),
        ({"contxt": "lab"}, "kubernetes.contxt"),
        ({"context": ""}, "kubernetes.context"),
    ],
)
def test_a_bad_value_is_one_problem_naming_its_key(
    section: dict[str, object], expected: str
) -> None:
    found = problems(pod=POD, kubernetes=section)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_the_plugin_declares_what_the_core_asks() -> None:
    plugin = discover_registry()["kubernetes"]
    assert plugin.sections[0].key == "kubernetes"
    assert not plugin.gpu_catalog and not plugin.live_stock  # GPU types are node labels
    assert not plugin.billed  # the cluster's disks and GPUs have no price we know


def test_the_locator_round_trips_through_a_pointer(tmp_path: object) -> None:
    plugin = discover_registry()["kubernetes"]
    spec = spec_from(
        with_sections(pod=POD, kubernetes={"context": "lab", "price_per_hour": {"NVIDIA L4": 0.4}})
    )
    context = LocatorContext(home="/h", run_pointer=tmp_path / "r.json", ready_timeout_sec=60)  # type: ignore[operator]
    locator = plugin.locator_from_config(spec, context)
    raw = json.loads(json.dumps(unstructure_locator(locator)))
    assert plugin.load_locator(raw) == locator
    assert isinstance(locator, KubernetesLocator) and locator.context == "lab"
    assert plugin.load_locator({"namespace": "ml", "newer_key": 1}) == KubernetesLocator(
        namespace="ml"
    )
