"""The OpenAPI helper that holds the RunPod sandbox and our v2 adapter to RunPod's document:
it accepts what the document allows (its own examples) and names what it does not."""

from __future__ import annotations

import json

import pytest

from helpers.runpod_openapi import OpenApiViolation, runpod_v2_spec

POD_OPS = {"listPods", "createPod", "getPod", "updatePod", "deletePod", "podAction", "getPodLogs"}


def _example(operation_id: str, status: str) -> dict:
    spec = runpod_v2_spec()
    op = spec.operation_by_id(operation_id)
    content = op.spec["responses"][status]["content"]["application/json"]
    return next(iter(content["examples"].values()))["value"]


def test_the_document_names_the_operations_the_sandbox_serves() -> None:
    ids = {o.operation_id for o in runpod_v2_spec().operations}
    assert ids >= POD_OPS
    assert {"listGpuTypes", "listDataCenters", "listNetworkVolumes", "listPodBilling"} <= ids
    assert runpod_v2_spec().document["info"]["version"] == "2.0.0"


def test_the_documents_own_pod_examples_pass() -> None:
    spec = runpod_v2_spec()
    pod = _example("getPod", "200")
    headers = {"Content-Type": "application/json"}
    assert spec.validate_response("GET", "/v2/pods/abc", 200, headers, json.dumps(pod).encode())
    created = spec.validate_request(
        "POST",
        "/v2/pods",
        body=json.dumps(
            {"name": "t", "image": "i", "gpu": {"id": "NVIDIA GeForce RTX 4090"}}
        ).encode(),
    )
    assert created.operation_id == "createPod"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"name": "t", "image": "i", "gpuTypeId": "x"}, "gpuTypeId"),  # a v1/GraphQL field
        ({"name": "t", "image": "i", "gpu": {"id": "x", "minRamPerGpu": 8}}, "minRamPerGpu"),
        ({"name": "t", "gpu": {"id": "x"}}, "'image' is a required property"),
        ({"name": "t", "image": "i", "cloud": "ALL"}, "'ALL' is not one of"),
        ({"name": "", "image": "i"}, "name"),
    ],
)
def test_a_request_body_the_document_refuses_is_named(body: dict, needle: str) -> None:
    with pytest.raises(OpenApiViolation, match="createPod") as caught:
        runpod_v2_spec().validate_request("POST", "/v2/pods", body=json.dumps(body).encode())
    assert needle in str(caught.value)


def test_query_parameters_are_decoded_and_checked() -> None:
    spec = runpod_v2_spec()
    spec.validate_request(
        "GET", "/v2/catalog/gpus?include=AVAILABILITY&product=POD,SERVERLESS&count=2"
    )
    with pytest.raises(OpenApiViolation, match="count"):
        spec.validate_request("GET", "/v2/catalog/gpus?include=AVAILABILITY&product=POD&count=two")
    with pytest.raises(OpenApiViolation, match="'gpuCount' is not declared"):
        spec.validate_request("GET", "/v2/catalog/gpus?gpuCount=1")
    with pytest.raises(OpenApiViolation, match="takes no request body"):
        spec.validate_request("GET", "/v2/pods", body=b"{}")


def test_a_response_field_the_document_does_not_declare_is_named() -> None:
    pod = _example("getPod", "200") | {"costPerHr": 0.44}
    with pytest.raises(OpenApiViolation, match="/costPerHr: not declared"):
        runpod_v2_spec().validate_response(
            "GET",
            "/v2/pods/abc",
            200,
            {"Content-Type": "application/json"},
            json.dumps(pod).encode(),
        )


def test_error_responses_are_problem_details_and_a_429_carries_retry_after() -> None:
    spec = runpod_v2_spec()
    problem = json.dumps(
        {"title": "Too Many Requests", "status": 429, "detail": "slow down"}
    ).encode()
    spec.validate_response(
        "GET",
        "/v2/pods",
        429,
        {"Content-Type": "application/problem+json", "Retry-After": "3"},
        problem,
    )
    with pytest.raises(OpenApiViolation, match="Retry-After is missing"):
        spec.validate_response(
            "GET", "/v2/pods", 429, {"Content-Type": "application/problem+json"}, problem
        )
    with pytest.raises(OpenApiViolation, match="Content-Type"):
        spec.validate_response(
            "GET", "/v2/pods/x", 404, {"Content-Type": "application/json"}, problem
        )
    with pytest.raises(OpenApiViolation, match="'detail' is a required property"):
        spec.validate_response(
            "GET",
            "/v2/pods/x",
            404,
            {"Content-Type": "application/problem+json"},
            b'{"message": "no"}',
        )
    with pytest.raises(OpenApiViolation, match="has no body"):
        spec.validate_response("DELETE", "/v2/pods/x", 204, {}, b"{}")


def test_an_event_stream_is_checked_event_by_event() -> None:
    spec = runpod_v2_spec()
    headers = {"Content-Type": "text/event-stream"}
    good = b'id: 2026-06-01T12:02:03Z\ndata: {"ts":"2026-06-01T12:02:03Z","source":"container","line":"hi"}\n\n'
    spec.validate_response("GET", "/v2/pods/x/logs", 200, headers, good)
    with pytest.raises(OpenApiViolation, match="without id"):
        spec.validate_response("GET", "/v2/pods/x/logs", 200, headers, b'data: {"line": "x"}\n\n')
