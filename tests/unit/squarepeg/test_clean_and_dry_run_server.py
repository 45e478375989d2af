"""`squarepeg clean` and `--dry-run-server` on FakeCluster through container overrides."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from dependency_injector import providers

from helpers.squarepeg_runs import USER, own_labels, resolved_run
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg import lifecycle
from pegboard.app.squarepeg.clean_use_case import execute_clean
from pegboard.app.squarepeg.container import Container
from pegboard.domain.errors import Forbidden, Invalid, RunnerError, UsageError


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


@pytest.fixture
def container(
    cluster: FakeCluster, tmp_path: Any
) -> Iterator[tuple[Container, io.StringIO, io.StringIO]]:
    c = Container()
    out, err = io.StringIO(), io.StringIO()
    with c.override_providers(
        cluster=providers.Object(cluster),
        clock=providers.Object(cluster.clock),
        stdout=providers.Object(out),
        stderr=providers.Object(err),
        environ=providers.Object({"HOME": str(tmp_path), "LOGNAME": USER}),
        user_name=providers.Object(USER),
    ):
        yield c, out, err


def leftover(cluster: FakeCluster, name: str, *, user: str = USER) -> None:
    manifest = resolved_run(name, run_id=f"old-{name}").manifest
    manifest["metadata"]["labels"] = own_labels(f"old-{name}", user=user)
    cluster.script_pod(name, PodScript.completes())
    cluster.create(manifest, namespace="default")


def test_clean_dry_run_prints_an_aligned_table_and_deletes_nothing(
    cluster: FakeCluster, container: tuple[Container, io.StringIO, io.StringIO]
) -> None:
    leftover(cluster, "a-long-pod-name")
    leftover(cluster, "short")
    leftover(cluster, "theirs", user="bob")
    cluster.advance(700)
    c, out, err = container
    assert execute_clean(c.seams(), c.cluster_ports(), dry_run=True, no_default_config=True) == 0
    lines = out.getvalue().splitlines()
    assert lines == [
        "RESOURCE             CATEGORY  DETAIL",
        "pod/a-long-pod-name  finished  succeeded 11m38s ago",
        "pod/short            finished  succeeded 11m38s ago",
    ]
    assert "would delete 2" in err.getvalue()
    assert cluster.deletions == []


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_clean_dry_run_lists_as_json_or_yaml(
    cluster: FakeCluster, container: tuple[Container, io.StringIO, io.StringIO], output: str
) -> None:
    import yaml  # JSON is YAML: one parser reads both

    leftover(cluster, "short")
    cluster.advance(700)
    c, out, _ = container
    code = execute_clean(
        c.seams(), c.cluster_ports(), dry_run=True, no_default_config=True, output=output
    )
    assert code == 0
    assert yaml.safe_load(out.getvalue()) == [
        {
            "resource": "pod/short",
            "kind": "Pod",
            "name": "short",
            "category": "finished",
            "age_seconds": 698,
            "detail": "succeeded 11m38s ago",
        }
    ]
    assert cluster.deletions == []


def test_clean_deletes_and_reports(
    cluster: FakeCluster, container: tuple[Container, io.StringIO, io.StringIO]
) -> None:
    leftover(cluster, "p1")
    leftover(cluster, "p2")
    cluster.advance(700)
    c, out, err = container
    assert execute_clean(c.seams(), c.cluster_ports(), no_default_config=True) == 0
    assert {d[2] for d in cluster.deletions} == {"p1", "p2"}
    assert "cleaned 2 of 2" in err.getvalue() and out.getvalue() == ""


def test_clean_min_age_and_failures(
    cluster: FakeCluster, container: tuple[Container, io.StringIO, io.StringIO]
) -> None:
    leftover(cluster, "p1")
    cluster.advance(10)
    c, _, err = container
    assert (
        execute_clean(c.seams(), c.cluster_ports(), no_default_config=True) == 0
    )  # too young for 300 s
    assert "nothing to clean" in err.getvalue()
    cluster.fail_next("delete", Forbidden("no delete", status=403))
    with pytest.raises(RunnerError, match="1 failed"):
        execute_clean(c.seams(), c.cluster_ports(), min_age=0, no_default_config=True)
    cluster.fail_next("list_page", Forbidden("no list", status=403))
    with pytest.raises(RunnerError, match="needs list"):
        execute_clean(c.seams(), c.cluster_ports(), min_age=0, no_default_config=True)
    with pytest.raises(UsageError, match="--min-age"):
        execute_clean(c.seams(), c.cluster_ports(), min_age=-1, no_default_config=True)


def test_dry_run_server_prints_the_answer_as_it_came_back(
    cluster: FakeCluster, container: tuple[Container, io.StringIO, io.StringIO]
) -> None:
    c, out, err = container
    assert lifecycle.run(resolved_run("p"), c.seams(), c.cluster_ports(), dry_run_server=True) == 0
    text = out.getvalue()
    assert "uid:" in text and "namespace: default" in text  # server-set fields
    assert "p" not in cluster
    assert [r.operation for r in cluster.requests] == ["target", "create"]
    assert "using context 'fake'" in err.getvalue()


def test_dry_run_server_rejection_is_125_with_hint(
    cluster: FakeCluster, container: tuple[Container, io.StringIO, io.StringIO]
) -> None:
    c, _, _ = container
    cluster.fail_next("create", Invalid('Pod "p" is invalid: spec.containers', status=422))
    with pytest.raises(RunnerError, match="--dry-run to inspect"):
        lifecycle.run(resolved_run("p"), c.seams(), c.cluster_ports(), dry_run_server=True)


class FullStdout(io.StringIO):
    """A stdout that refuses every write, as `> /dev/full` does."""

    def write(self, text: str) -> int:
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")


def test_dry_run_server_to_a_refusing_stdout_is_one_line_and_122(
    cluster: FakeCluster, tmp_path: Any
) -> None:
    c = Container()
    err = io.StringIO()
    with c.override_providers(
        cluster=providers.Object(cluster),
        clock=providers.Object(cluster.clock),
        stdout=providers.Object(FullStdout()),
        stderr=providers.Object(err),
        environ=providers.Object({"HOME": str(tmp_path), "LOGNAME": USER}),
    ):
        code = lifecycle.run(resolved_run("p"), c.seams(), c.cluster_ports(), dry_run_server=True)
    assert code == 122
    assert err.getvalue().splitlines()[-1] == (
        "squarepeg: could not write to stdout (No space left on device)"
    )


def test_clean_on_an_unreachable_cluster_gives_no_permission_hint(
    cluster: FakeCluster, container: tuple[Container, io.StringIO, io.StringIO]
) -> None:
    from pegboard.domain.errors import Unreachable

    c, _, _ = container
    cluster.fail_next("list_page", Unreachable("cannot reach the Kubernetes API at h: refused"))
    with pytest.raises(RunnerError) as caught:
        execute_clean(c.seams(), c.cluster_ports(), no_default_config=True)
    assert "needs list" not in str(caught.value)
    assert str(caught.value).endswith("cannot reach the Kubernetes API at h: refused")
