"""Every string from a config or the command line that reaches RunPod, fed quotes, braces,
backslashes and newlines: the sandbox receives a v2 request RunPod's document allows (or, for
spot, a GraphQL query that parses) carrying exactly that value, or the adapter refuses the value
with one line before anything is sent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from helpers.runpod_openapi import validate_received_requests
from pegboard.adapters.runpod import RunPodGpuCloud, UnsafeQueryValue
from pegboard.adapters.runpod.query_values import checked_id, graphql_text
from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.adapters.sandboxes.runpod.graphql import GraphQLSyntaxError, parse
from pegboard.domain.errors import PegboardError
from pegboard.domain.ports.gpu_cloud import PodRequest

HOSTILE = list("\"{}\\\n\r\t $#:,()[]!@'") + list("aZ09-_./")
hostile_text = st.text(
    st.one_of(st.sampled_from(HOSTILE), st.characters(exclude_categories=["Cs"])), max_size=24
)


def around(valid: str) -> st.SearchStrategy[str]:
    """A valid value with hostile text before or after it, or hostile text alone."""
    return st.one_of(
        hostile_text, st.builds(lambda a, b: a + valid + b, hostile_text, hostile_text)
    )


BASE = PodRequest(
    name="run-1",
    image="img:1",
    gpu_id="NVIDIA RTX A4000",
    datacenter_id="EU-RO-1",
    volume_gb=20,
    env={"PUBLIC_KEY": "ssh-ed25519 AAAA test"},
)

# PodRequest fields that come from the config (or --gpu-id/--datacenter-id/--var) and reach
# the create mutation; echoed: the sandbox must hold exactly the value we sent.
CREATE_FIELDS: dict[str, tuple[Callable[[str], PodRequest], str | None]] = {
    "name": (lambda v: attrs.evolve(BASE, name=v), "name"),
    "image": (lambda v: attrs.evolve(BASE, image=v), "image"),
    "volume_mount": (lambda v: attrs.evolve(BASE, volume_mount="/" + v), "volume_mount"),
    "env value": (lambda v: attrs.evolve(BASE, env={"SECRET_HINT": v}), None),
    "env name": (lambda v: attrs.evolve(BASE, env={v: "1"}), None),
    "gpu_id": (lambda v: attrs.evolve(BASE, gpu_id=v), None),
    "datacenter_id": (lambda v: attrs.evolve(BASE, datacenter_id=v), None),
    "network_volume_id": (
        lambda v: attrs.evolve(BASE, network_volume_id=v, volume_gb=None),
        None,
    ),
    "ports": (lambda v: attrs.evolve(BASE, ports=("22/tcp", v)), None),
    "cloud_type": (lambda v: attrs.evolve(BASE, cloud_type=v), None),
}


@pytest.fixture(scope="module")
def wire(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunPodSandbox, RunPodGpuCloud]]:
    with RunPodSandbox() as sandbox:
        # Hundreds of examples a minute: past RunPod's per-minute quota the sandbox says 429.
        sandbox.faults.rate_limit_per_minute = sandbox.faults.rate_limit_per_hour = 10**7
        cloud = RunPodGpuCloud(
            environ=sandbox.environ(),
            home=tmp_path_factory.mktemp("home"),
            sleep=lambda seconds: None,
            attempts=1,
        )
        yield sandbox, cloud


def _call_and_check(
    sandbox: RunPodSandbox, call: Callable[[], Any]
) -> tuple[Any, PegboardError | None]:
    """Run `call`; every GraphQL query it sent must have parsed and every v2 request must be one
    RunPod's document allows; a refusal must be one line, unsent."""
    before, before_v2 = len(sandbox.received), len(sandbox.received_v2)
    result: Any = None
    error: PegboardError | None = None
    try:
        result = call()
    except PegboardError as exc:
        error = exc
    sent = sandbox.received[before:]
    sent_v2 = sandbox.received_v2[before_v2:]
    assert [q.syntax_error for q in sent] == [None] * len(sent), [q.text for q in sent]
    validate_received_requests(sent_v2)
    if isinstance(error, UnsafeQueryValue):
        assert sent == [] and sent_v2 == [], "a refused value must not reach the wire"
        assert "\n" not in str(error) and str(error)
    return result, error


@pytest.mark.parametrize("field", sorted(CREATE_FIELDS))
@pytest.mark.parametrize("spot", [False, True], ids=["on-demand", "spot"])
@settings(max_examples=min(30, settings.default.max_examples))  # 20 cases, each a real HTTP call
@given(data=st.data())
def test_create_pod_values(
    wire: tuple[RunPodSandbox, RunPodGpuCloud], field: str, spot: bool, data: st.DataObject
) -> None:
    sandbox, cloud = wire
    build, echoed = CREATE_FIELDS[field]
    valid = {
        "gpu_id": "NVIDIA RTX A4000",
        "datacenter_id": "EU-RO-1",
        "ports": "8888/http",
        "cloud_type": "SECURE",
        "network_volume_id": "nv-pidws100",
    }.get(field, "x")
    value = data.draw(around(valid), label=field)
    request = attrs.evolve(build(value), spot=spot)
    handle, _ = _call_and_check(sandbox, lambda: cloud.create_pod(request))
    if handle is None:
        return
    pod = sandbox.pod(handle.pod_id)
    assert pod is not None
    try:
        if echoed == "name":
            assert pod.name == request.name
        elif echoed == "image":
            assert pod.image == request.image
        elif echoed == "volume_mount":
            assert pod.volume_mount == request.volume_mount
        assert pod.env == dict(request.env)
        assert pod.gpu_id == request.gpu_id and pod.datacenter_id == request.datacenter_id
        assert [p.pod_id for p in cloud.find_pods(name=request.name)] == [handle.pod_id]
    finally:
        cloud.terminate_pod(handle.pod_id)


@given(pod_id=around("abc123"))
def test_pod_ids_from_state_files_and_flags(
    wire: tuple[RunPodSandbox, RunPodGpuCloud], pod_id: str
) -> None:
    sandbox, cloud = wire
    for call in (cloud.get_pod, cloud.stop_pod, cloud.resume_pod, cloud.terminate_pod):
        _call_and_check(sandbox, lambda: call(pod_id))  # noqa: B023


@given(cloud_type=around("SECURE"))
def test_cloud_types_from_configs_and_flags(
    wire: tuple[RunPodSandbox, RunPodGpuCloud], cloud_type: str
) -> None:
    sandbox, cloud = wire
    for call in (
        lambda: cloud.gpu_prices(cloud_type=cloud_type),
        lambda: cloud.gpu_prices(cloud_type=cloud_type, spot=True),
        lambda: cloud.gpu_availability(
            gpu_ids=["NVIDIA RTX A4000"], datacenter_ids=["EU-RO-1"], cloud_type=cloud_type
        ),
        lambda: cloud.datacenter_stock(datacenter_ids=["EU-RO-1"], cloud_type=cloud_type),
    ):
        _call_and_check(sandbox, call)


@given(value=hostile_text)
def test_names_matched_client_side_never_reach_a_query(
    wire: tuple[RunPodSandbox, RunPodGpuCloud], value: str
) -> None:
    """find_pods (run id), network_volume (storage.volume_name), stock filters (gpu_order,
    datacenters, --datacenter): fixed queries, the value is compared in Python."""
    sandbox, cloud = wire
    assume(value not in sandbox.catalog.datacenters)
    before, before_v2 = len(sandbox.received), len(sandbox.received_v2)
    assert cloud.find_pods(name=value) == []
    assert cloud.network_volume(value) is None or value == "pid-workspace-100gb"
    stock = cloud.gpu_availability(gpu_ids=[value], datacenter_ids=[value], cloud_type="SECURE")
    assert [s.stock for s in stock] == ["none"]
    assert cloud.datacenter_stock(datacenter_ids=[value], cloud_type="ALL") == []
    fixed = {  # the catalog reads may be answered from the adapter's few-second cache
        "/v2/pods",
        "/v2/network-volumes",
        "/v2/catalog/gpus?include=AVAILABILITY&product=POD&cloud=SECURE",
        "/v2/catalog/gpus?include=AVAILABILITY&product=POD&cloud=COMMUNITY",
        "/v2/catalog/datacenters?include=GPU_AVAILABILITY",
    }
    sent = {r.target for r in sandbox.received_v2[before_v2:]}
    assert {"/v2/pods", "/v2/network-volumes"} <= sent <= fixed
    assert sandbox.received[before:] == []  # and no GraphQL


@given(value=st.text(st.one_of(st.sampled_from(HOSTILE), st.characters(exclude_categories=["Cs"]))))
def test_escaped_text_is_a_string_literal_meaning_exactly_the_value(value: str) -> None:
    document = f'mutation {{ probe(input: {{text: "{graphql_text(value, "probe")}"}}) }}'
    assert parse(document).selections[0].arguments["input"]["text"] == value


@given(value=hostile_text)
def test_checked_ids_carry_nothing_that_can_leave_a_string_literal(value: str) -> None:
    try:
        checked = checked_id(value, "GPU id")
    except UnsafeQueryValue as exc:
        assert "\n" not in str(exc) and "GPU id" in str(exc)
        return
    assert not set(checked) & set('"\\{}\n\r')
    assert parse(f'query {{ pod(input: {{podId: "{checked}"}}) {{ id }} }}')


@pytest.mark.parametrize(
    "broken",
    [
        'mutation { podStop(input: {podId: "a"b"}) { id } }',
        'mutation { podStop(input: {podId: "a\nb"}) { id } }',
        'query { pod(input: {podId: "x"}) { id }',
        'query { pod(input: {podId: "\\q"}) { id } }',
        'query { pod(input: {podId: "x"}) { id } } }',
    ],
)
def test_the_sandbox_parser_rejects_what_interpolation_breaks(broken: str) -> None:
    """The property above can fail: these are the queries unescaped values produce."""
    with pytest.raises(GraphQLSyntaxError):
        parse(broken)
