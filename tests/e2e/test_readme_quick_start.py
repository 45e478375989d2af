"""The README's commands, pasted in order into one shell at the repository root on a fresh HOME.

Every line of every ```sh block runs, except the setup lines this test environment has already
done (`make ...`: CI runs `make test`, and tests/e2e/test_demo_script.py the demo; installing and
activating the venv: the installed console scripts come first on PATH here). Each must exit 0,
or the code its comment promises (`# prints hi, exits 3`), and print no traceback.

The repository root is a copy (README.md and examples/) so that the run's records land in the
test's directory, and `/tmp/` in a command is the test's own temporary directory, so that two
test runs on one machine never share the sandbox's kubeconfig.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from helpers.components import require_executable
from helpers.docs_blocks import paste_into_bash, runnable, shell_commands

REPO = Path(__file__).resolve().parents[2]
SETUP_PREFIXES = ("make ", "pip install", ". .venv/bin/activate", "source .venv/bin/activate")


def readme_commands() -> list[tuple[str, int]]:
    """(command, expected exit code) for every command of the README's sh and console blocks
    (tests/helpers/docs_blocks.py: skip markers honoured, as in tests/e2e/test_docs_examples.py)."""
    return [
        (command.text, command.expected_exit)
        for block in runnable(REPO / "README.md")
        if block.lang != "python"
        for command in shell_commands(block)
        if not command.text.strip().startswith(SETUP_PREFIXES)
    ]


def test_the_readme_has_both_tools_quick_starts() -> None:
    lines = [line for line, _ in readme_commands()]
    assert any(line.startswith("squarepeg run ") for line in lines)
    assert any(
        line.startswith("runpod-deploy run --config examples/local/hello.yaml") for line in lines
    )
    assert any(line.startswith("runpod-deploy ls-runs") for line in lines)


def test_readme_commands_pasted_at_the_repository_root(tmp_path: Path) -> None:
    for tool in ("bash", "python3"):
        require_executable(tool)
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    shutil.copy(REPO / "README.md", root)
    shutil.copytree(REPO / "examples", root / "examples")
    commands = readme_commands()
    bin_dir = Path(sys.executable).parent
    env = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    # the README's background sandbox is killed with the shell's session at the end
    pasted = paste_into_bash(
        [line for line, _ in commands], cwd=root, env=env, tmp_dir=tmp_path, timeout=180
    )
    pasted.check([(line, expected, "README.md") for line, expected in commands])
    runs = list((root / "examples" / "local" / "artifacts" / "runpod").iterdir())
    assert len(runs) == 1  # and ls-runs/events above read exactly that run
    assert runs[0].name in pasted.out_of(_index_of(commands, "runpod-deploy ls-runs"))


def _index_of(commands: list[tuple[str, int]], prefix: str) -> int:
    return next(i for i, (line, _) in enumerate(commands) if line.startswith(prefix))
