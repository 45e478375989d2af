"""`squarepeg completion bash|zsh|fish` prints a script that completes through the installed
squarepeg itself (click's `_SQUAREPEG_COMPLETE` protocol), lazy subcommands included."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.squarepeg_e2e import squarepeg_bin


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [squarepeg_bin(), *argv],
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "_SQUAREPEG_COMPLETE=bash_complete"),
        ("zsh", "#compdef squarepeg"),
        ("fish", "complete"),
    ],
)
def test_the_script_for_each_shell(shell: str, marker: str) -> None:
    result = run("completion", shell)
    assert result.returncode == 0, result.stderr
    assert marker in result.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    result = run("completion", "tcsh")
    assert result.returncode == 2 and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [("squarepeg cl", "1", "plain,clean"), ("squarepeg run --mo", "2", "plain,--mode")],
)
def test_completion_answers(words: str, cword: str, expected: str) -> None:
    result = run(
        env={"_SQUAREPEG_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
    )
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout.splitlines()


def complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    """What TAB offers after `words` (the last word being completed), as bash would show it."""
    cword = str(len(words.split()) - (0 if words.endswith(" ") else 1))
    result = run(
        env={
            "_SQUAREPEG_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": cword,
            **(env or {}),
        }
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if "," in line]


def test_the_choices_of_mode_and_pull() -> None:
    assert complete("squarepeg run --mode ") == ["pod", "job"]
    assert complete("squarepeg run --mode j") == ["job"]
    assert complete("squarepeg run --pull ") == ["always", "missing", "never"]
    assert complete("squarepeg run --pull n") == ["never"]


def test_contexts_come_from_the_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
        "contexts:\n- name: dev\n  context: {cluster: c, user: u}\n"
        "- name: prod-eu\n  context: {cluster: c, user: u}\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\n"
    )
    env = {"KUBECONFIG": str(kubeconfig)}
    assert complete("squarepeg run --context ", env) == ["dev", "prod-eu"]
    assert complete("squarepeg clean --context pr", env) == ["prod-eu"]
    assert complete("squarepeg rm --context ", {"KUBECONFIG": str(tmp_path / "none")}) == []
    kubeconfig.write_text("contexts: [oops")  # a broken kubeconfig offers nothing, quietly
    assert complete("squarepeg run --context ", env) == []


def test_namespaces_come_from_the_cluster(tmp_path: Path) -> None:
    from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

    with KubernetesSandbox() as sandbox:
        env = {"KUBECONFIG": str(sandbox.kubeconfig_path)}
        offered = complete("squarepeg run -n ", env)
        assert "default" in offered and "kube-system" in offered
        kube = complete("squarepeg clean --namespace kube", env)
        assert "kube-system" in kube and all(name.startswith("kube") for name in kube)
        assert "default" not in kube
        assert complete("squarepeg rm -n d", env) == ["default"]
        wrong = complete("squarepeg run --context nosuch -n ", env)  # a context it lacks
        assert wrong == []
    # the cluster is gone: nothing is offered (within the short timeout), never a traceback
    assert complete("squarepeg run -n ", env) == []
