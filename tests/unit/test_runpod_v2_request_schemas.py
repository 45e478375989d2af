"""The request schemas the RunPod sandbox enforces are RunPod's (regenerated from the vendored
document, never hand-edited), and its small checker agrees with `jsonschema` on them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.runpod_openapi import DOCUMENT, runpod_v2_spec
from pegboard.adapters.sandboxes.runpod import v2_schema

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "generate_runpod_sandbox_schemas", ROOT / "scripts/generate_runpod_sandbox_schemas.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_schemas_are_generated_from_the_vendored_document() -> None:
    shipped = ROOT / "src/adapters/sandboxes/runpod/openapi_v2_requests.json"
    expected = _generator().render(json.loads(DOCUMENT.read_text()))
    assert shipped.read_text() == expected, "run scripts/generate_runpod_sandbox_schemas.py"
    assert v2_schema.document() == json.loads(expected)  # and that is what the package loads


RTX = "NVIDIA GeForce RTX 3090"
BODIES: list[tuple[str, Any]] = [
    ("createPod", {"name": "a", "image": "i", "gpu": {"id": RTX}}),
    ("createPod", {"name": "a", "templateId": "t", "gpu": {"id": RTX, "count": 2}}),
    ("createPod", {"name": "a", "image": "i", "gpu": {"id": RTX, "count": 0}}),
    ("createPod", {"name": "a", "image": "i", "gpu": {"id": RTX, "allowedCudaVersions": ["12"]}}),
    ("createPod", {"name": "a", "image": "i", "gpu": {"id": RTX, "minCudaVersion": "12.4"}}),
    ("createPod", {"name": "a", "image": "i", "gpu": {"id": RTX, "minVcpuCountPerGpu": 2}}),
    ("createPod", {"name": "a", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 1}}),
    ("createPod", {"name": "a", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 2, "memory": 4}}),
    ("createPod", {"name": "a", "image": "i", "cloud": "COMMUNITY", "dataCenterIds": ["EU-RO-1"]}),
    ("createPod", {"name": "a", "image": "i", "dataCenterIds": "EU-RO-1"}),
    ("createPod", {"name": "a", "image": "i", "env": {"A": 1}}),
    ("createPod", {"name": "a", "image": "i", "env": {"A": "1"}, "ports": ["22/tcp"], "disk": 0}),
    ("createPod", {"name": "a", "image": "i", "mounts": {"persistent": {"size": 10, "path": "/w"}}}),
    ("createPod", {"name": "a", "image": "i", "mounts": {"network": [{"volumeId": "v"}]}}),
    ("createPod", {"name": "a", "image": "i", "mounts": {"network": [{"volumeId": "v", "path": "/w"}] * 2}}),
    ("createPod", {"name": "a", "image": "i", "mounts": {"other": {}}}),
    ("createPod", {"name": "a", "image": "i", "startSsh": "yes", "startJupyter": True}),
    ("createPod", {"image": "i", "registry": None, "globalNetworking": True}),
    ("createPod", {"name": "a", "image": "i", "interruptible": True}),
    ("createPod", []),
    ("updatePod", {}),
    ("updatePod", {"name": "", "locked": True}),
    ("updatePod", {"registry": None, "ports": [], "mounts": {}}),
    ("updatePod", {"cloud": "SECURE"}),
    ("podAction", {"action": "start"}),
    ("podAction", {"action": "reset"}),
    ("podAction", {"action": "stop", "force": True}),
    ("createNetworkVolume", {"name": "v", "size": 10, "dataCenter": "EU-RO-1", "type": "STANDARD"}),
    ("createNetworkVolume", {"name": "v", "size": 5000, "dataCenter": ""}),
    ("updateNetworkVolume", {}),
    ("updateNetworkVolume", {"size": 20}),
    ("updateSshKeys", {"keys": ["ssh-ed25519 AAAA me@host", "ecdsa-sha2-nistp256 AAAA"]}),
    ("updateSshKeys", {"keys": ["rsa AAAA"]}),
    ("updateSshKeys", {}),
]  # fmt: skip


@pytest.mark.parametrize(("operation_id", "body"), BODIES)
def test_the_sandbox_checker_agrees_with_jsonschema(operation_id: str, body: Any) -> None:
    spec = runpod_v2_spec()
    op = spec.operation_by_id(operation_id)
    reference = list(
        spec._errors(op.spec["requestBody"]["content"]["application/json"]["schema"], body)
    )
    ours = v2_schema.violations(v2_schema.operations()[operation_id]["body"], body)
    assert bool(ours) == bool(reference), (ours, reference)


# Random bodies built from the fields the request schemas name (and a stranger), with values
# of every JSON type: the sandbox's checker and jsonschema must agree on each.
_NAMES = ["name", "image", "gpu", "cpu", "id", "count", "vcpuCount", "cloud", "dataCenterIds",
          "mounts", "persistent", "network", "size", "path", "volumeId", "env", "ports", "disk",
          "action", "keys", "dataCenter", "type", "templateId", "startSsh", "locked",
          "allowedCudaVersions", "minCudaVersion", "registry", "args", "stranger"]  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(
        [
            "",
            "x",
            "SECURE",
            "COMMUNITY",
            "start",
            "reset",
            "12.8",
            "12",
            "/w",
            "22/tcp",
            "STANDARD",
            "ssh-ed25519 AAAA c",
            RTX,
        ]
    ),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_NAMES), inner, max_size=4)
    ),
    max_leaves=8,
)
_OPS = ["createPod", "updatePod", "podAction", "createNetworkVolume", "updateNetworkVolume",
        "updateSshKeys"]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_OPS), st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=6))
def test_the_checker_agrees_with_jsonschema_on_random_bodies(operation_id: str, body: Any) -> None:
    test_the_sandbox_checker_agrees_with_jsonschema(operation_id, body)
