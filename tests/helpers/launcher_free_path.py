"""`python3` on PATH without a launcher script in front of it, for everything the suite starts.

A pyenv shim (`~/.pyenv/shims/python3`) is a bash script: before the interpreter starts, it runs
`pyenv exec`, which itself starts about 16 bash processes (0.1 s of CPU, 0.2 s of wall per call,
measured on CI's machine). The suite's pods run on this host and find `python3` on the PATH the
tests pass on (the kubernetes sandbox's containers, the RunPod sandbox's pods, the squarepeg e2e
programs): every `runpod-deploy run` asks `python3 --version` and `python3 -m pip freeze`. So the
suite puts a directory first on PATH holding `python3` (and `python`) as symlinks to the very
interpreters the launchers run: the same Python, the same packages, the same `pip freeze`, none
of the launcher's processes. A PATH whose `python3` is already an interpreter is left as it is.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile

_MARK = "PEGBOARD_TEST_LAUNCHER_FREE_PATH"  # set once; xdist workers inherit the PATH


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(2) == b"#!"
    except OSError:
        return False


def _interpreter_behind(launcher: str) -> str | None:
    try:
        done = subprocess.run(
            [launcher, "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = done.stdout.strip()
    if done.returncode != 0 or not found or not os.path.isabs(found):
        return None
    return os.path.realpath(found)


def put_interpreters_first_on_path() -> None:
    if os.environ.get(_MARK):
        return
    os.environ[_MARK] = "1"
    links: dict[str, str] = {}
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found is None or not _is_script(found):
            continue
        real = _interpreter_behind(found)
        if real is not None and not _is_script(real):
            links[name] = real
    if not links:
        return
    directory = tempfile.mkdtemp(prefix="pegboard-suite-python-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    for name, real in links.items():
        os.symlink(real, os.path.join(directory, name))
    os.environ["PATH"] = directory + os.pathsep + os.environ.get("PATH", "")
