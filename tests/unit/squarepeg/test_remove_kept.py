"""What `--keep` leaves behind can be removed with squarepeg alone (issue 12, item 6):
`squarepeg rm NAME` and `squarepeg clean --include-kept`, each asking first unless --yes;
a plain `clean` says how many kept resources it left alone and how to remove them."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from dependency_injector import providers

from helpers.squarepeg_runs import USER, own_labels, resolved_run
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg.clean_use_case import execute_clean
from pegboard.app.squarepeg.container import Container
from pegboard.app.squarepeg.remove_use_case import execute_remove
from pegboard.domain.errors import RunnerError, UsageError

Setup = tuple[Container, io.StringIO, io.StringIO]


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


@pytest.fixture
def container(cluster: FakeCluster, tmp_path: Any) -> Iterator[Setup]:
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


def leftover(cluster: FakeCluster, name: str, *, keep: bool, managed: bool = True) -> None:
    manifest = resolved_run(name, run_id=f"old-{name}").manifest
    manifest["metadata"]["labels"] = own_labels(f"old-{name}", keep=keep) if managed else {}
    cluster.script_pod(name, PodScript.completes())
    cluster.create(manifest, namespace="default")


class Answers:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.questions: list[str] = []

    def __call__(self, question: str) -> bool:
        self.questions.append(question)
        return self.answer


def deleted(cluster: FakeCluster) -> set[str]:
    return {d[2] for d in cluster.deletions}


# -- clean ---------------------------------------------------------------------------------------


def test_plain_clean_leaves_kept_resources_and_says_how_to_remove_them(
    cluster: FakeCluster, container: Setup
) -> None:
    leftover(cluster, "kept", keep=True)
    leftover(cluster, "orphan", keep=False)
    cluster.advance(700)
    c, _, err = container
    assert execute_clean(c.seams(), c.cluster_ports(), no_default_config=True) == 0
    assert deleted(cluster) == {"orphan"}
    assert "1 kept resource(s) left alone" in err.getvalue()
    assert "squarepeg clean --include-kept, or squarepeg rm NAME" in err.getvalue()


def test_include_kept_asks_then_deletes(cluster: FakeCluster, container: Setup) -> None:
    leftover(cluster, "kept", keep=True)
    leftover(cluster, "orphan", keep=False)
    cluster.advance(700)
    c, _, _ = container
    answers = Answers(True)
    code = execute_clean(
        c.seams(), c.cluster_ports(), no_default_config=True, include_kept=True, confirm=answers
    )
    assert code == 0
    assert deleted(cluster) == {"kept", "orphan"}
    assert len(answers.questions) == 1 and "pod/kept" in answers.questions[0]


def test_include_kept_declined_deletes_only_the_orphans(
    cluster: FakeCluster, container: Setup
) -> None:
    leftover(cluster, "kept", keep=True)
    leftover(cluster, "orphan", keep=False)
    cluster.advance(700)
    c, _, _ = container
    execute_clean(
        c.seams(),
        c.cluster_ports(),
        no_default_config=True,
        include_kept=True,
        confirm=Answers(False),
    )
    assert deleted(cluster) == {"orphan"}


def test_include_kept_with_yes_does_not_ask(cluster: FakeCluster, container: Setup) -> None:
    leftover(cluster, "kept", keep=True)
    cluster.advance(700)
    c, _, _ = container
    answers = Answers(False)
    execute_clean(
        c.seams(),
        c.cluster_ports(),
        no_default_config=True,
        include_kept=True,
        yes=True,
        confirm=answers,
    )
    assert deleted(cluster) == {"kept"} and answers.questions == []


def test_include_kept_dry_run_lists_them(cluster: FakeCluster, container: Setup) -> None:
    leftover(cluster, "kept", keep=True)
    cluster.advance(700)
    c, out, _ = container
    execute_clean(
        c.seams(), c.cluster_ports(), no_default_config=True, include_kept=True, dry_run=True
    )
    assert "pod/kept  finished  kept, succeeded" in out.getvalue()
    assert cluster.deletions == []


# -- rm ------------------------------------------------------------------------------------------


def test_rm_deletes_a_kept_pod_after_asking(cluster: FakeCluster, container: Setup) -> None:
    leftover(cluster, "kept", keep=True)
    c, _, _ = container
    answers = Answers(True)
    assert execute_remove(c.seams(), c.cluster_ports(), names=["kept"], confirm=answers) == 0
    assert deleted(cluster) == {"kept"}
    assert answers.questions == ["delete pod/kept in namespace 'default'?"]


def test_rm_declined_deletes_nothing(cluster: FakeCluster, container: Setup) -> None:
    leftover(cluster, "kept", keep=True)
    c, _, _ = container
    execute_remove(c.seams(), c.cluster_ports(), names=["kept"], confirm=Answers(False))
    assert cluster.deletions == []


def test_rm_refuses_what_squarepeg_did_not_make(cluster: FakeCluster, container: Setup) -> None:
    leftover(cluster, "theirs", keep=False, managed=False)
    c, _, _ = container
    with pytest.raises(RunnerError) as caught:
        execute_remove(
            c.seams(), c.cluster_ports(), names=["theirs"], confirm=Answers(True), yes=True
        )
    assert cluster.deletions == []
    assert "pod/theirs was not made by squarepeg" in str(caught.value)


def test_rm_of_a_missing_name_is_125_after_deleting_the_others(
    cluster: FakeCluster, container: Setup
) -> None:
    leftover(cluster, "kept", keep=True)
    c, _, err = container
    with pytest.raises(RunnerError, match="no squarepeg pod or job 'gone'"):
        execute_remove(
            c.seams(), c.cluster_ports(), names=["gone", "kept"], confirm=Answers(True), yes=True
        )
    assert deleted(cluster) == {"kept"}
    assert "'gone'" not in err.getvalue()  # said once, by the final error line


def test_rm_without_a_terminal_needs_yes() -> None:
    from pegboard.app.squarepeg.cli.options import ask_on_terminal

    with pytest.raises(UsageError, match="pass --yes"):
        ask_on_terminal("delete pod/x?")  # pytest's stdin is not a terminal


def test_the_keep_hint_names_squarepeg_rm(cluster: FakeCluster) -> None:
    from helpers.squarepeg_runs import run_on_fake

    cluster.script_pod("p", PodScript.completes())
    result = run_on_fake(resolved_run("p", keep=True), cluster)
    assert "squarepeg rm p -n default" in result.stderr


def test_clean_include_kept_takes_a_kept_pod_right_after_its_run(
    cluster: FakeCluster, container: Setup
) -> None:
    # The finished runner reads its pod no more: it releases its hold as it ends, so the next
    # command can remove the pod at once, not HOLD_SECONDS later.
    from helpers.squarepeg_runs import run_on_fake
    from pegboard.domain.squarepeg.runner_heartbeat import held_by_live_runner, runner_alive_until

    cluster.script_pod("kept-now", PodScript.completes())
    assert run_on_fake(resolved_run("kept-now", keep=True), cluster).code == 0
    pod = cluster.pod("kept-now")
    assert runner_alive_until(pod) is None
    assert not held_by_live_runner(pod, now=cluster.clock.now())
    c, _, err = container
    code = execute_clean(
        c.seams(), c.cluster_ports(), no_default_config=True, include_kept=True, yes=True, min_age=0
    )
    assert code == 0 and deleted(cluster) == {"kept-now"}, err.getvalue()


def test_a_pod_whose_delete_failed_is_released_too(cluster: FakeCluster) -> None:
    from helpers.squarepeg_runs import run_on_fake
    from pegboard.domain.errors import Transient
    from pegboard.domain.squarepeg.runner_heartbeat import runner_alive_until

    cluster.script_pod("stuck", PodScript.completes())
    cluster.fail_next("delete", Transient("etcd leader changed"))
    result = run_on_fake(resolved_run("stuck"), cluster)
    assert result.code == 0 and "kubectl delete pod stuck" in result.stderr
    assert runner_alive_until(cluster.pod("stuck")) is None  # an ordinary orphan now
