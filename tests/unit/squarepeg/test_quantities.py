"""Docker cpu/memory/gpu values -> Kubernetes quantities; Kubernetes quantity checks."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.quantities import (
    bytes_to_k8s_memory,
    docker_cpus_to_k8s,
    docker_gpus_to_count,
    docker_memory_to_k8s,
    k8s_cpu_quantity,
    k8s_memory_quantity,
    parse_k8s_quantity,
)


@pytest.mark.parametrize(
    ("raw", "cpu"),
    [("2", "2"), ("0.5", "500m"), ("1.5", "1500m"), ("0.0001", "1m"), ("0.1", "100m"),
     ("2.0", "2"), ("0", "0"), ("0.3", "300m")],
)  # fmt: skip
def test_cpus(raw: str, cpu: str) -> None:
    assert docker_cpus_to_k8s(raw) == cpu


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "-1", "lots", "", "NaN", "Infinity"])
def test_bad_cpus_are_usage_errors_naming_the_flag(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--cpus"):
        docker_cpus_to_k8s(raw)


@pytest.mark.parametrize(
    ("raw", "memory"),
    [("512m", "512Mi"), ("1.5g", "1536Mi"), ("1024k", "1Mi"), ("2gb", "2Gi"), ("0.1m", "104857"),
     ("100", "100"), ("512M", "512Mi"), ("512Mi", "512Mi"), ("512MiB", "512Mi"), ("1t", "1Ti"),
     ("1 g", "1Gi"), ("1b", "1"), ("0", "0")],
)  # fmt: skip
def test_memory(raw: str, memory: str) -> None:
    assert docker_memory_to_k8s(raw) == memory


@pytest.mark.parametrize("raw", ["lots", "-1m", "1x", "nan", "1e3m", ""])
def test_bad_memory_names_the_flag(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--memory"):
        docker_memory_to_k8s(raw)


def test_bytes_to_k8s_memory_picks_the_largest_exact_unit() -> None:
    assert bytes_to_k8s_memory(3 * 1024**3) == "3Gi"
    assert bytes_to_k8s_memory(1024**3 + 1024) == "1048577Ki"
    assert bytes_to_k8s_memory(1023) == "1023"


@pytest.mark.parametrize("raw", ["512Mi", "1G", "1e9", "1.5Gi", "100", "128974848", "129M"])
def test_kubernetes_memory_quantities_are_accepted_as_given(raw: str) -> None:
    assert k8s_memory_quantity(raw, flag="--request-memory") == raw


def test_milli_memory_is_rejected_with_a_hint() -> None:
    with pytest.raises(UsageError, match=r"--limit-memory '512m'.*did you mean 512Mi\?"):
        k8s_memory_quantity("512m", flag="--limit-memory")


def test_docker_style_memory_gets_a_hint_too() -> None:
    with pytest.raises(UsageError, match=r"did you mean 2Gi\?"):
        k8s_memory_quantity("2gb", flag="--request-memory")


@pytest.mark.parametrize("raw", ["-1Gi", "lots", "1.5.5", "100u"])
def test_bad_kubernetes_memory(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--request-memory"):
        k8s_memory_quantity(raw, flag="--request-memory")


@pytest.mark.parametrize("raw", ["500m", "0.5", "2", "1e3", "100n"])
def test_kubernetes_cpu(raw: str) -> None:
    assert k8s_cpu_quantity(raw, flag="--request-cpu") == raw


@pytest.mark.parametrize("raw", ["-1", "half", "nan", "inf", "1Kb"])
def test_bad_kubernetes_cpu(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--limit-cpu"):
        k8s_cpu_quantity(raw, flag="--limit-cpu")


def test_parse_k8s_quantity() -> None:
    assert parse_k8s_quantity("500m") == Decimal("0.5")
    assert parse_k8s_quantity("1Ki") == 1024
    assert parse_k8s_quantity("1e3") == 1000
    assert parse_k8s_quantity("1k") == 1000
    assert parse_k8s_quantity("1Ei") == 1024**6
    assert parse_k8s_quantity("2E") == 2 * 10**18
    assert parse_k8s_quantity("x") is None


@pytest.mark.parametrize(("raw", "count"), [("1", 1), ("count=2", 2), ("0", 0)])
def test_gpus(raw: str, count: int) -> None:
    assert docker_gpus_to_count(raw) == count


@pytest.mark.parametrize("raw", ["all", "device=0", "-1", "count=all", ""])
def test_bad_gpus(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--gpus"):
        docker_gpus_to_count(raw)
