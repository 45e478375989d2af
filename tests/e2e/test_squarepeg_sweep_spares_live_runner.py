"""A finished pod whose runner is still reading it survives every sweep (issue 7, item 2).

Two squarepeg processes and `squarepeg clean` against the Kubernetes API sandbox: the first
runs a container that writes a big log and exits, while its stdout is read slowly; the second
runs with `orphan_sweep_min_age: 0`, and then `clean --min-age 0` sweeps too. Neither may
delete the first run's pod (a real cluster removes the log with the pod), and the first run
still prints every byte.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.kubernetes_sandbox import pods_created_by
from helpers.squarepeg_e2e import env, healthy, sandbox, squarepeg_bin
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

__all__ = ["env", "healthy", "sandbox"]  # fixtures this module uses

pytestmark = pytest.mark.slow

LOG_BYTES = 4_000_000  # far more than a pipe and the socket buffers hold


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.05)


def test_neither_another_runs_sweep_nor_clean_deletes_a_pod_still_being_read(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "eager-sweep.yaml"
    config.write_text("orphan_sweep_min_age: 0\n")
    slow = subprocess.Popen(
        [
            squarepeg_bin(),
            "run",
            "alpine",
            "sh",
            "-c",
            f"head -c {LOG_BYTES} /dev/zero | tr '\\0' x; echo end",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert slow.stdout is not None and slow.stderr is not None
        first = slow.stdout.read(1024)  # the stream is open; now stop reading for a while
        wait_for(lambda: len(pods_created_by(sandbox, env["LOGNAME"])) == 1)
        (name,) = pods_created_by(sandbox, env["LOGNAME"])
        wait_for(lambda: (sandbox.pod(name) or {}).get("status", {}).get("phase") == "Succeeded")

        other = subprocess.run(
            [squarepeg_bin(), "run", "--config", str(config), "alpine", "echo", "other"],
            env=env,
            capture_output=True,
            timeout=60,
        )
        assert other.returncode == 0, other.stderr
        assert other.stdout == b"other\n"
        assert sandbox.pod(name) is not None, other.stderr.decode()

        clean = subprocess.run(
            [squarepeg_bin(), "clean", "--min-age", "0"],
            env=env,
            capture_output=True,
            timeout=60,
        )
        assert clean.returncode == 0, clean.stderr
        assert b"nothing to clean" in clean.stderr, clean.stderr.decode()
        assert sandbox.pod(name) is not None

        rest = slow.stdout.read()
        code = slow.wait(timeout=60)
        stderr = slow.stderr.read().decode()
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
        for stream in (slow.stdout, slow.stderr):
            if stream is not None:
                stream.close()
    output = first + rest
    assert (code, len(output)) == (0, LOG_BYTES + 4), stderr
    assert output == b"x" * LOG_BYTES + b"end\n"
    wait_for(
        lambda: pods_created_by(sandbox, env["LOGNAME"]) == []
    )  # its own run deleted it at the end
