"""Long lines and log rotation end to end: the installed `squarepeg run` against the Kubernetes
API sandbox rendering logs as a kubelet >= 1.26 does (one prefix per line, containerd's 16 KiB
partial records rejoined) and as an older one does, with and without the stream aborted inside a
long line; and a fast writer whose log the kubelet rotates at 10 MiB. Each run is byte-exact with
the container's code, or exits OUTPUT_INCOMPLETE saying what rotation took away; the kubectl
view of the same log is what a 1.26+ cluster shows."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.squarepeg.exit_codes import OUTPUT_INCOMPLETE

# The module's sandbox (fixture), its fault reset (autouse), the env and the run helpers.
from .test_squarepeg_output_integrity import env, healthy, mine, run, sandbox  # noqa: F401

pytestmark = pytest.mark.slow

PY = sys.executable
LINE = b"L" * 40000
PROGRESS = b"".join(b"\r%6d%%" % (i % 1000) for i in range(200 * 1024 // 8))  # no newline
WRITE_LINE = "import sys; sys.stdout.buffer.write(b'L' * 40000 + b'\\n')"
WRITE_PROGRESS = (
    "import sys, time\n"
    "out = sys.stdout.buffer\n"
    "data = b''.join(b'\\r%6d%%' % (i % 1000) for i in range(200 * 1024 // 8))\n"
    "for i in range(0, len(data), 4096):\n"
    "    out.write(data[i : i + 4096]); out.flush(); time.sleep(0.002)\n"
)
MIB = 1024 * 1024
# 30 MiB of 100-byte lines, after squarepeg has had time to attach (a log rotated before its
# first read cannot be told from one that began there), in bursts a rotation can fall between.
WRITE_FAST = (
    "import sys, time\n"
    "time.sleep(3)\n"
    "out = sys.stdout.buffer\n"
    "block = b''.join(b'%099d\\n' % i for i in range(10486))\n"
    "for _ in range(30):\n"
    "    out.write(block); out.flush(); time.sleep(0.01)\n"
)
FAST = b"".join(b"%099d\n" % i for i in range(10486)) * 30


@pytest.mark.parametrize("rendering", ["current", "pre-1.26"])
@pytest.mark.parametrize("abort_at", [None, 20000, 16384 + 31 + 5])
@pytest.mark.parametrize(
    ("script", "expected"),
    [(WRITE_LINE, LINE + b"\n"), (WRITE_PROGRESS, PROGRESS)],
    ids=["line", "cr"],
)
def test_long_lines_are_exact_across_aborts(
    sandbox: KubernetesSandbox,  # noqa: F811
    env: dict[str, str],  # noqa: F811
    rendering: str,
    abort_at: int | None,
    script: str,
    expected: bytes,
) -> None:
    sandbox.faults.log_rendering = rendering
    if abort_at is not None:  # inside the line's second partial record, or just after its start
        sandbox.faults.drop_log(abort_at, mode="abort", times=1)
    result = run(env, "alpine", PY, "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected
    assert mine(sandbox, env) == []


@pytest.mark.parametrize("abort_at", [None, 2 * MIB])
def test_a_fast_writer_with_rotation_at_10_mib_is_exact_or_flagged(
    sandbox: KubernetesSandbox,  # noqa: F811
    env: dict[str, str],  # noqa: F811
    abort_at: int | None,
) -> None:
    sandbox.faults.container_log_max_size = 10 * MIB
    sandbox.faults.container_log_monitor_interval = 0.0  # checked after every write
    if abort_at is not None:
        sandbox.faults.drop_log(abort_at, mode="abort", times=1)
    result = run(env, "alpine", PY, "-c", WRITE_FAST)
    if abort_at is None:
        # Followed across every rotation: nothing lost.
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout == FAST
    elif result.returncode == 0:
        assert result.stdout == FAST  # reconnected before the rotation: whole
    else:
        assert result.returncode == OUTPUT_INCOMPLETE, result.stderr[-2000:]
        assert b"rotated the log file" in result.stderr
        assert b"unknown number of bytes" in result.stderr
        assert b"exited with code 0" in result.stderr
        # What came before the abort, then the end of the output from the oldest record kept.
        out = result.stdout
        head = next((i for i, (a, b) in enumerate(zip(out, FAST, strict=False)) if a != b), 0)
        assert head > 0 and FAST.endswith(out[head:]), (head, len(out))
        assert len(out) < len(FAST)
    assert mine(sandbox, env) == []


def test_kubectl_logs_timestamps_shows_one_prefix_per_line(
    sandbox: KubernetesSandbox,  # noqa: F811
    env: dict[str, str],  # noqa: F811
) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    result = run(env, "--keep", "--name", "kubectl-view", "alpine", PY, "-c", WRITE_LINE)
    assert result.returncode == 0, result.stderr
    shown = subprocess.run(
        [kubectl, "logs", "--timestamps", "kubectl-view"],
        env=env,
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout
    assert re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z " + LINE + b"\n", shown)
    subprocess.run([kubectl, "delete", "pod", "kubectl-view", "--wait=false"], env=env, check=False,
                   capture_output=True, timeout=60)  # fmt: skip
