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

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from helpers.components import require_executable

REPO = Path(__file__).resolve().parents[2]
SETUP_PREFIXES = ("make ", "pip install", ". .venv/bin/activate", "source .venv/bin/activate")
EXPECTED_EXIT = re.compile(r"#.*\bexits (\d+)\b")


def readme_commands() -> list[tuple[str, int]]:
    """(command line, expected exit code) for every line of the README's sh blocks."""
    text = (REPO / "README.md").read_text()
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.M | re.S):
        for line in block.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith("#") or stripped.startswith(SETUP_PREFIXES):
                continue
            promised = EXPECTED_EXIT.search(line)
            commands.append((line, int(promised.group(1)) if promised else 0))
    return commands


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
    script = ["set +e"]
    for index, (line, _) in enumerate(commands):
        pasted = line.replace("/tmp/", f"{tmp_path}/")
        script += [
            f"echo '@@ {index}'; echo '@@ {index}' >&2",
            pasted,
            f'echo "@@ rc {index} $?"',
        ]
    bin_dir = Path(sys.executable).parent
    env = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    proc = subprocess.Popen(
        ["bash", "-c", "\n".join(script)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the README's background sandbox is in this group
    )
    try:
        out, err = proc.communicate(timeout=180)  # a hang guard, not a measurement
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever a failed `kill %1` left running
        except ProcessLookupError:
            pass
    codes = {int(m[0]): int(m[1]) for m in re.findall(r"^@@ rc (\d+) (\d+)$", out, flags=re.M)}
    for index, (line, expected) in enumerate(commands):
        its_err = _section(err, index)
        assert codes.get(index) == expected, (
            f"README command {line!r} exited {codes.get(index)}, expected {expected}:\n"
            f"{_section(out, index)}\n{its_err}"
        )
        assert "Traceback" not in its_err, (line, its_err)
    runs = list((root / "examples" / "local" / "artifacts" / "runpod").iterdir())
    assert len(runs) == 1  # and ls-runs/events above read exactly that run
    assert runs[0].name in _section(out, _index_of(commands, "runpod-deploy ls-runs"))


def _section(text: str, index: int) -> str:
    """What the command at `index` printed (between its marker and the next)."""
    start = text.find(f"@@ {index}\n")
    end = text.find(f"@@ {index + 1}\n", start)
    return text[start : end if end != -1 else None]


def _index_of(commands: list[tuple[str, int]], prefix: str) -> int:
    return next(i for i, (line, _) in enumerate(commands) if line.startswith(prefix))
