"""`runpod-deploy completion bash|zsh|fish` prints a script that completes through the installed
runpod-deploy itself (click's `_RUNPOD_DEPLOY_COMPLETE` protocol), lazy subcommands included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("runpod-deploy")), *argv],
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_bash_script_calls_runpod_deploy_back() -> None:
    result = run("completion", "bash")
    assert result.returncode == 0 and "_RUNPOD_DEPLOY_COMPLETE=bash_complete" in result.stdout


@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [
        ("runpod-deploy ls-", "1", {"plain,ls-runs", "plain,ls-stale"}),
        ("runpod-deploy cleanup --mo", "2", {"plain,--mode"}),
        ("runpod-deploy ls-runs -o ", "3", {"plain,table", "plain,json", "plain,yaml"}),
    ],
)
def test_completion_answers(words: str, cword: str, expected: set[str]) -> None:
    env = {"_RUNPOD_DEPLOY_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
    result = run(env=env)
    assert result.returncode == 0, result.stderr
    assert expected <= set(result.stdout.splitlines())
