"""Every example in README.md and docs/ runs (docs/development.md, "Docs that run").

One test a page. Its `python` blocks run in order in one fresh interpreter; its `sh` and `console`
commands run in order in one bash, as pasted by a reader: from the repository root (a copy of
README.md, docs/ and examples/, so records land in the test's directory) on a fresh HOME, with
a Kubernetes API sandbox (KUBECONFIG) and a RunPod API sandbox (RUNPOD_API_BASE_URL,
RUNPOD_API_KEY) of the page's own already up. `/tmp/` in a command is the test's own directory.
Each command must exit 0, or the code its comment promises (`# ... exits 3`), and print no
traceback. README.md's shell commands are tests/e2e/test_readme_quick_start.py's (it starts its
own sandbox, as the README says to).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from helpers.components import require_executable
from helpers.docs_blocks import (
    ANY_SKIP_MARKER,
    REPO,
    SKIP_MARKER,
    Block,
    Command,
    blocks,
    pages,
    paste_into_bash,
    runnable,
    shell_commands,
)
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.sandboxes.runpod import RunPodSandbox

HANG_GUARD_SEC = 240  # a page whose examples take this long is stuck; not a measurement


def _page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


PAGES = [page for page in pages() if runnable(page)]


def test_every_skip_marker_sits_on_a_fence_and_says_why() -> None:
    misplaced = []
    for page in pages():
        lines = page.read_text().splitlines()
        fences = {block.line - 1 for block in blocks(page)}  # the marker's 1-based line
        for number, line in enumerate(lines, start=1):
            if not ANY_SKIP_MARKER.search(line):
                continue
            if not SKIP_MARKER.match(line) or number not in fences:
                misplaced.append(f"{_page_id(page)}:{number}: {line.strip()}")
    assert not misplaced, "markers must read <!-- docs-test: skip (why) --> right above a fence"


@pytest.mark.timeout(HANG_GUARD_SEC + 60)
@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    home.mkdir()
    shutil.copytree(REPO / "examples", root / "examples")
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copy(REPO / "README.md", root)
    env = {
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    todo = runnable(page)
    python = [b for b in todo if b.lang == "python"]
    if python:
        _run_python(python, root, env, tmp_path)
    commands = [c for b in todo if b.lang != "python" for c in shell_commands(b)]
    if page.name == "README.md" and page.parent == REPO:
        commands = []  # tests/e2e/test_readme_quick_start.py runs them
    if commands:
        require_executable("bash")
        with _sandboxes(tmp_path) as sandbox_env:
            _run_shell(commands, root, {**env, **sandbox_env}, tmp_path)


PYTHON_RUNNER = """
import sys, traceback
scope = {"__name__": "__main__"}
for path, where in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        exec(compile(open(path).read(), where, "exec"), scope)
    except BaseException:
        traceback.print_exc()
        print("@@ failed", where, file=sys.stderr)
        sys.exit(1)
"""


def _run_python(todo: list[Block], root: Path, env: dict[str, str], tmp_path: Path) -> None:
    """A page's python blocks in order in one interpreter: later blocks may use what earlier
    ones defined, as a reader following the page would."""
    argv = []
    for block in todo:
        script = tmp_path / f"block_{block.line}.py"
        script.write_text(block.text.replace("/tmp/", f"{tmp_path}/"))
        argv += [str(script), block.where]
    done = subprocess.run(
        [sys.executable, "-c", PYTHON_RUNNER, *argv],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SEC,
    )
    assert done.returncode == 0, f"python example failed:\n{done.stdout}\n{done.stderr}"


@contextmanager
def _sandboxes(tmp_path: Path) -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        kubernetes = stack.enter_context(
            KubernetesSandbox(kubeconfig_path=tmp_path / "sandbox.kubeconfig")
        )
        runpod = stack.enter_context(RunPodSandbox())
        yield {"KUBECONFIG": str(kubernetes.kubeconfig_path), **runpod.environ()}


def _run_shell(commands: list[Command], root: Path, env: dict[str, str], tmp_path: Path) -> None:
    pasted = paste_into_bash(
        [c.text for c in commands], cwd=root, env=env, tmp_dir=tmp_path, timeout=HANG_GUARD_SEC
    )
    pasted.check([(c.text, c.expected_exit, c.block.where) for c in commands])
