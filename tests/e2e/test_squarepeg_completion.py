"""`squarepeg completion bash|zsh|fish` prints a script that completes through the installed
squarepeg itself (click's `_SQUAREPEG_COMPLETE` protocol), lazy subcommands included."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def squarepeg_bin() -> str:
    found = shutil.which("squarepeg", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the squarepeg console script is not installed next to this interpreter")
    return found


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
