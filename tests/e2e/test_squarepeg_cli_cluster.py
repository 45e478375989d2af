"""The installed `squarepeg` against the Kubernetes sandbox: the issue-12 command-line items
that need a cluster (-v call trace, unauthorised cluster, unknown --context, rm of a kept run)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from helpers.squarepeg_e2e import env, healthy, sandbox, squarepeg_bin
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

__all__ = ["env", "healthy", "sandbox"]  # fixtures this module uses


def squarepeg(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [squarepeg_bin(), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_verbose_shows_every_api_call_with_its_duration(env: dict[str, str]) -> None:
    result = squarepeg(env, "clean", "-v", "--no-default-config")
    assert result.returncode == 0, result.stderr
    calls = re.findall(
        r"^squarepeg: (GET|POST|DELETE|PUT|PATCH) (\S+) -> (\d+) in \d+ ms$",
        result.stderr,
        re.MULTILINE,
    )
    assert calls, result.stderr
    assert all(status == "200" for _, _, status in calls)
    assert any(path.startswith("/api/v1/namespaces/default/pods?") for _, path, _ in calls)


def test_verbose_and_quiet_together_are_a_usage_error(env: dict[str, str]) -> None:
    result = squarepeg(env, "clean", "-v", "-q")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1


def test_an_unauthorised_cluster_is_one_line(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong-token.kubeconfig"
    wrong.write_text(sandbox.kubeconfig_path.read_text().replace(sandbox.token, "not-the-token"))
    env["KUBECONFIG"] = str(wrong)
    result = squarepeg(env, "run", "--quiet", "alpine", "true")
    assert result.returncode == 125
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("squarepeg: ") and "Unauthorized" in result.stderr
    assert "orphan sweep" not in result.stderr and "Traceback" not in result.stderr


def test_an_unknown_context_is_a_usage_error(env: dict[str, str]) -> None:
    result = squarepeg(env, "run", "--context", "nope", "alpine", "true")
    assert result.returncode == 2
    assert result.stderr.startswith("squarepeg: --context nope: no such context in ")
    assert "(contexts: pegboard-sandbox)" in result.stderr


def test_a_kept_run_is_removed_with_squarepeg_rm(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    kept = squarepeg(env, "run", "--keep", "--name", "kept-e2e", "alpine", "true")
    assert kept.returncode == 0, kept.stderr
    assert "squarepeg rm kept-e2e -n default" in kept.stderr
    assert any(p["metadata"]["name"] == "kept-e2e" for p in sandbox.pods())
    unconfirmed = squarepeg(env, "rm", "kept-e2e")  # no terminal to ask on: refuse
    assert unconfirmed.returncode == 2 and "pass --yes" in unconfirmed.stderr
    removed = squarepeg(env, "rm", "--yes", "kept-e2e")
    assert removed.returncode == 0, removed.stderr
    deadline = time.monotonic() + 10
    while any(p["metadata"]["name"] == "kept-e2e" for p in sandbox.pods()):
        assert time.monotonic() < deadline, "the kept pod was not deleted"
        time.sleep(0.02)


def test_a_run_leaves_nothing_in_tmpdir(env: dict[str, str], tmp_path: Path) -> None:
    # The sandbox's kubeconfig embeds its CA (certificate-authority-data), as most real ones
    # do; the client writes it to a temp file and deletes it at exit. The console script ends
    # with os._exit for speed, which once skipped that cleanup: a file leaked per run.
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env["TMPDIR"] = str(tmpdir)
    result = squarepeg(env, "run", "--quiet", "alpine", "echo", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hi\n"
    assert sorted(p.name for p in tmpdir.iterdir()) == []
