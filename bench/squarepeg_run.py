"""Real `squarepeg run` and `squarepeg clean` against one Kubernetes sandbox: ours vs 0.4.1.

Measured in one process, one sandbox, same machine, both tools as subprocesses:

- trivial `run alpine echo hi`: median wall time (target <= 0.5x 0.4.1), API requests and TCP
  connections per run from the sandbox's request log (target <= 8 requests);
- a 256 MiB log of 100-byte lines to /dev/null (the sandbox stamps every line with its own
  time, as containerd does): throughput (target >= 5x 0.4.1, whole command
  and streaming phase); the sandbox's live follow of the same output to a raw HTTP reader
  (bench/_raw_follow.py: its own process, imports done and connections open before the pod
  exists, squarepeg's own follow request sent when its watch shows the container running, as
  squarepeg's is; target: our streaming phase >= 70% of it), and, labelled as such, the same
  request served from the backlog of a pod that has already ended, and as a bound the decoder
  alone in this process (`decoder_alone`: no socket, no write);
  `kubectl logs -f` of the same output through a pipe, the pod already running, against a TLS
  sandbox beside it where ours is measured again the same way (kubectl sends no credentials
  over plain HTTP; one log file per container there; target: our streaming phase >= 3x
  kubectl's), and the CPU seconds each of the two runs costs in all (tool, cat, sandbox,
  container) and of it the tool and cat (the pipeline's own wait4); both tools' output checked
  against what the container wrote (4 MiB, once); as bounds, the product's log stream with
  nothing decoded (bench/_tls_stream.py) following a running pod through the same pipe, with
  squarepeg's query (timestamps) and kubectl's;
  `--log-runs N` measures those rows N times in turn (medians); the same log of 64 KiB lines
  (each four of containerd's 16 KiB partial records, rejoined under one timestamp by the
  sandbox's kubelet >= 1.26 rendering), as a ratio to the 100-byte row of the same run (0.4.1
  is given a time cap: it hangs on long lines under that rendering);
- Ctrl-C to exit with a silent container (target <= 1 s);
- `clean` of 200 orphans among 2,000 pods with 10 ms added per API request (target <= 0.3x).

    .venv/bin/python bench/squarepeg_run.py [--runs N] [--log-mib M] [--log-runs N] [--skip-baseline]
        [--only run|logs|kubectl|interrupt|clean]  (repeatable; default: all; `logs` includes
        `kubectl`, the TLS pair alone)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import resource
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _venv import baseline_squarepeg, our_bin

from pegboard.adapters.kubernetes_cluster import LOG_READ_BYTES, KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.sandboxes.kubernetes.logs import ContainerLog, LogQuery, LogRenderer
from pegboard.adapters.sandboxes.kubernetes.server import keep_freed_memory
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.log_dedupe import TimestampedLogDecoder

# Writes `mib` MiB of 100-byte lines (99 characters and a newline) as fast as it can.
LOG_WRITER = (
    "import sys\n"
    "line = (b'x' * 90 + b' %08d\\n')\n"
    "out = sys.stdout.buffer\n"
    "n = {mib} * 1048576 // 100\n"
    "block = b''.join(line % i for i in range(1000))\n"
    "for _ in range(n // 1000): out.write(block)\n"
    "out.flush()\n"
)


# The same amount in lines of 64 KiB (65,535 characters and a newline).
LONG_LOG_WRITER = (
    "import sys\n"
    "out = sys.stdout.buffer\n"
    "line = b'y' * 65535 + b'\\n'\n"
    "block = line * 16\n"
    "for _ in range({mib}): out.write(block)\n"
    "out.flush()\n"
)


def through_pipe(argv: list[str], status: Path) -> list[str]:
    """argv with its stdout read by `cat > /dev/null` through a pipe, as `cmd | tool` would;
    argv's own exit status written to `status` (the pipeline's is cat's): see `piped_status`."""
    pipeline = '{ "$@"; echo $? > "$0"; } | cat > /dev/null'  # $0: the status file
    return ["sh", "-c", pipeline, str(status), *argv]


def piped_status(status: Path, what: str) -> None:
    """Stop the bench unless the piped tool exited 0: a run cut short would count its
    throughput over less work than the other tool's."""
    code = status.read_text().strip() if status.exists() else "none"
    if code != "0":
        raise SystemExit(f"bench: {what} failed through the pipe (exit status {code})")


def run_wall(
    argv: list[str],
    env: dict[str, str],
    *,
    stdout: int | None = None,
    timeout: float | None = None,
    cpu: list[float] | None = None,
) -> float:
    """Wall seconds of `argv` (inf when `timeout` killed it). With `cpu`, the CPU seconds
    (user+sys) of the process and of the children it reaped (a pipeline's tools) are appended
    to it, from its own wait4: only that process tree, never a container the sandbox in this
    process reaped meanwhile."""
    start = time.perf_counter()
    if cpu is not None:
        proc = subprocess.Popen(
            argv, env=env, stdout=stdout or subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        timer = threading.Timer(timeout or 1e9, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        wall = time.perf_counter() - start
        cpu.append(usage.ru_utime + usage.ru_stime)
        return float("inf") if proc.returncode == -signal.SIGKILL else wall
    try:
        subprocess.run(
            argv,
            env=env,
            stdout=stdout or subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return float("inf")
    return time.perf_counter() - start


def trivial(
    sandbox: KubernetesSandbox, tool: str, env: dict[str, str], runs: int
) -> dict[str, float]:
    argv = [tool, "run", "--no-default-config", "alpine", "echo", "hi"]
    run_wall(argv, env)  # warm-up
    walls, requests, connections = [], [], []
    for _ in range(runs):
        before = len(sandbox.requests)
        walls.append(run_wall(argv, env))
        mine = sandbox.requests[before:]
        requests.append(len(mine))
        connections.append(len({r.connection_id for r in mine}))
    return {
        "wall": statistics.median(walls),
        "requests": statistics.median(requests),
        "connections": statistics.median(connections),
    }


def log_throughput(
    sandbox: KubernetesSandbox,
    tool: str,
    env: dict[str, str],
    mib: int,
    *,
    writer: str = LOG_WRITER,
    timeout: float | None = None,
    pipe: bool = False,
    cpu: list[float] | None = None,
) -> tuple[float, float]:
    """MiB/s over the whole command, and over its streaming phase alone.

    The streaming phase runs from the tool's first log request (as the sandbox recorded it) to
    the tool's exit: it leaves out what both tools pay before any log byte can flow (interpreter
    start, imports, create, waiting for the pod), so it is the throughput of the log path itself.
    """
    code = writer.format(mib=mib)
    argv = [tool, "run", "--no-default-config", "python", sys.executable, "-c", code]
    before = len(sandbox.requests)
    with tempfile.TemporaryDirectory() as scratch, open(os.devnull, "wb") as sink:
        status = Path(scratch) / "status"
        command = through_pipe(argv, status) if pipe else argv
        wall = run_wall(command, env, stdout=sink.fileno(), timeout=timeout, cpu=cpu)
        ended = time.time()
        if pipe and wall != float("inf"):
            piped_status(status, f"{Path(tool).name} run")
    if wall == float("inf"):  # the tool was killed: remove the pod it left behind
        cluster = KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]})
        for pod in sandbox.pods():
            cluster.delete(ResourceKind.POD, pod["metadata"]["name"], namespace="default")
        return 0.0, 0.0
    log_requests = [r.time for r in sandbox.requests[before:] if r.path.endswith("/log")]
    streaming = ended - min(log_requests) if log_requests else wall
    return mib / wall, mib / streaming


RAW_FOLLOW = Path(__file__).resolve().parent / "_raw_follow.py"


def log_pod(name: str, mib: int) -> dict[str, object]:
    """A pod writing `mib` MiB of the 100-byte-line log."""
    code = LOG_WRITER.format(mib=mib)
    container = {"name": "main", "image": "python", "command": [sys.executable, "-c", code]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }


def running_log_pod(sandbox: KubernetesSandbox, env: dict[str, str], mib: int) -> str:
    """A pod writing `mib` MiB of the 100-byte-line log, once it runs (created over the API)."""
    cluster = KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]})
    name = f"bench-log-{secrets.token_hex(3)}"
    cluster.create(log_pod(name, mib), namespace="default")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        phase = (sandbox.pod(name) or {}).get("status", {}).get("phase")
        if phase in ("Running", "Succeeded", "Failed"):
            break
        time.sleep(0.005)
    return name


def delete_pod(env: dict[str, str], name: str) -> None:
    cluster = KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]})
    cluster.delete(ResourceKind.POD, name, namespace="default")


def raw_follow(sandbox: KubernetesSandbox, env: dict[str, str], mib: int, *, mode: str) -> float:
    """MiB/s of output the raw reader of bench/_raw_follow.py (its own process, imports done,
    its watch and log connections open before the pod exists) gets from the sandbox: from its
    log request (as the sandbox recorded it, the moment `log_throughput` counts ours from) to
    the last chunk. `live`: the request squarepeg sends (follow, timestamps), sent the moment
    the watch shows the container running, as squarepeg's is, so it overlaps the writing: the
    fastest any client could follow this log. `backlog`: the same request once the pod has
    ended, the whole log already stored (the sandbox serving a finished container's log)."""
    cluster = KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]})
    name = f"bench-log-{secrets.token_hex(3)}"
    address = urlsplit(sandbox.url)
    argv = [sys.executable, str(RAW_FOLLOW), address.hostname or "127.0.0.1"]
    argv += [str(address.port), sandbox.token, "default", name, "main", mode]
    before = len(sandbox.requests)
    with subprocess.Popen(argv, stdout=subprocess.PIPE) as reader:
        assert reader.stdout is not None
        if reader.stdout.readline().strip() != b"ready":
            raise SystemExit("bench: the raw reader did not start")
        cluster.create(log_pod(name, mib), namespace="default")
        out = reader.stdout.read().split()
        if reader.wait(timeout=600) != 0 or len(out) != 3:
            raise SystemExit(f"bench: the raw reader failed: {out!r}")
    if int(out[0]) < mib * 1048576 // 100 // 1000 * 1000 * 100:  # the output, prefixes aside
        raise SystemExit(f"bench: the raw reader got only {int(out[0])} bytes")
    log_requests = [r.time for r in sandbox.requests[before:] if r.path.endswith("/log")]
    delete_pod(env, name)
    return mib / (float(out[2]) - min(log_requests))


@contextlib.contextmanager
def cpu_spent() -> Iterator[list[float]]:
    """CPU seconds (user+sys) the block cost this process (the sandboxes' threads) and the
    children it reaped (the tool's pipeline, and the pod's container, which the sandbox reaps
    when it ends): [seconds], filled in when the block ends. A figure that load does not halve
    as it halves the throughputs (it still grows under load: caches and CPU time are shared)."""

    def now() -> float:
        me, children = (
            resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime

    spent: list[float] = []
    started = now()
    try:
        yield spent
    finally:
        spent.append(now() - started)


def follow_running(
    sandbox: KubernetesSandbox,
    env: dict[str, str],
    argv: list[str],
    mib: int,
    cpu: list[float] | None = None,
) -> tuple[float, float]:
    """`argv` + a running pod's name, following that pod's log through a pipe: MiB/s over the
    whole command and over its streaming phase (its log request to its exit), as
    `log_throughput` counts ours; the tool's own exit status checked (the pipe's is cat's)."""
    name = running_log_pod(sandbox, env, mib)
    before = len(sandbox.requests)
    with tempfile.TemporaryDirectory() as scratch:
        status = Path(scratch) / "status"
        wall = run_wall(through_pipe([*argv, name], status), env, timeout=600, cpu=cpu)
        ended = time.time()
        piped_status(status, " ".join(Path(arg).name for arg in [*argv, name]))
    log_requests = [r.time for r in sandbox.requests[before:] if r.path.endswith("/log")]
    streaming = ended - min(log_requests) if log_requests else wall
    delete_pod(env, name)
    return mib / wall, mib / streaming


def kubectl_follow(
    sandbox: KubernetesSandbox,
    env: dict[str, str],
    kubectl: str,
    mib: int,
    cpu: list[float] | None = None,
) -> tuple[float, float]:
    """`kubectl logs -f` of a running pod's log through a pipe (`follow_running`). kubectl
    writes line by line (staging/src/k8s.io/kubectl/pkg/cmd/logs/logs.go,
    DefaultConsumeRequest: bufio ReadBytes('\\n'), one Write each), so a pipe is what it pays."""
    return follow_running(sandbox, env, [kubectl, "logs", "-f"], mib, cpu)


TLS_STREAM = Path(__file__).resolve().parent / "_tls_stream.py"


def stream_follow(
    sandbox: KubernetesSandbox, env: dict[str, str], mib: int, *, timestamps: bool
) -> tuple[float, float]:
    """The product's log stream with nothing decoded (bench/_tls_stream.py), following a
    running pod as kubectl does (`follow_running`): squarepeg's query (`timestamps`) or
    kubectl's. What the sandbox and the TLS read allow a client asking that query."""
    mode = "timestamps" if timestamps else "plain"
    return follow_running(sandbox, env, [sys.executable, str(TLS_STREAM), mode], mib)


def decoder_alone(mib: int = 64, rounds: int = 3) -> float:
    """MiB/s of output the log decoder alone gives in this process (the least CPU of `rounds`):
    `mib` MiB of the 100-byte-line log as the sandbox's kubelet stores it (1 MiB reads, every
    line its own time) and renders it for squarepeg's query, fed in LOG_READ_BYTES pieces as
    the pump feeds it. No socket, no write: the most any run of ours can stream this log."""
    log = ContainerLog()
    output = expected_log(mib)
    for at in range(0, len(output), 1 << 20):
        log.feed(output[at : at + (1 << 20)])
    log.finish()
    chunks, _ = log.wait_chunks(0, 0.0)
    query = LogQuery(timestamps=True)  # squarepeg's
    render = LogRenderer(query, log.start(query))
    stream = b"".join(bytes(part) for data, stamps in chunks for part in render.parts(data, stamps))
    pieces = [stream[at : at + LOG_READ_BYTES] for at in range(0, len(stream), LOG_READ_BYTES)]
    best = float("inf")
    for _ in range(rounds):
        decoder = TimestampedLogDecoder()
        started = time.process_time()
        written = sum(sum(map(len, decoder.feed_parts(piece))) for piece in pieces)
        best = min(best, time.process_time() - started)
        if written != len(output):
            raise SystemExit(f"bench: the decoder gave {written} bytes of {len(output)}")
    return mib / best


def expected_log(mib: int) -> bytes:
    """The output LOG_WRITER writes for `mib` MiB, byte for byte."""
    line = b"x" * 90 + b" %08d\n"
    block = b"".join(line % i for i in range(1000))
    return block * (mib * 1048576 // 100 // 1000)


def same_output(sandbox: KubernetesSandbox, env: dict[str, str], ours: str, kubectl: str) -> None:
    """Both tools of the TLS pair, through the same pipe, print exactly what the container
    wrote (a 4 MiB log: the timed runs send theirs to /dev/null, unchecked): else the bench
    stops, since the pair's ratio would compare different work."""
    mib, want = 4, hashlib.sha256(expected_log(4)).hexdigest()
    code = LOG_WRITER.format(mib=mib)
    ours_argv = [ours, "run", "--no-default-config", "python", sys.executable, "-c", code]
    name = running_log_pod(sandbox, env, mib)
    for tool, argv in (
        ("squarepeg run", ours_argv),
        ("kubectl logs -f", [kubectl, "logs", "-f", name]),
    ):
        pipeline = subprocess.run(
            ["sh", "-c", '"$@" | cat', "sh", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
        got = hashlib.sha256(pipeline.stdout).hexdigest()
        if got != want:
            raise SystemExit(
                f"bench: {tool} printed {len(pipeline.stdout)} bytes that differ from the "
                f"{mib} MiB the container wrote"
            )
    delete_pod(env, name)


def ctrl_c_latency(tool: str, env: dict[str, str], cap: float = 60.0) -> float:
    proc = subprocess.Popen(
        [tool, "run", "--no-default-config", "alpine", "sh", "-c", "echo ready; exec sleep 300"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    start = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return float("inf")
    finally:
        proc.stdout.close()
    return time.perf_counter() - start


def make_orphans(cluster: KubernetesCluster, user: str, *, mine: int, others: int) -> None:
    def pod(name: str, owner: str) -> dict[str, object]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": labels.own_labels(
                    run_id=secrets.token_hex(4), created_by=owner, keep=False
                ),
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "a", "command": ["true"]}],
            },
        }

    for i in range(others):
        cluster.create(
            pod(f"other-{secrets.token_hex(3)}-{i}", "someone-else"), namespace="default"
        )
    for i in range(mine):
        cluster.create(pod(f"orphan-{secrets.token_hex(3)}-{i}", user), namespace="default")


def wait_finished(sandbox: KubernetesSandbox) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        phases = [p.get("status", {}).get("phase") for p in sandbox.pods()]
        if all(phase in ("Succeeded", "Failed") for phase in phases):
            return
        time.sleep(0.2)


def clean_wall(
    sandbox: KubernetesSandbox, tool: str, env: dict[str, str], user: str, others: int
) -> float:
    cluster = KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]})
    existing_others = sum(1 for p in sandbox.pods() if p["metadata"]["name"].startswith("other-"))
    make_orphans(cluster, user, mine=200, others=max(0, others - existing_others))
    wait_finished(sandbox)
    sandbox.faults.latency_ms = 10
    try:
        wall = run_wall([tool, "clean", "--no-default-config", "--min-age", "0"], env)
    finally:
        sandbox.faults.latency_ms = 0
    left = [p for p in sandbox.pods() if p["metadata"]["name"].startswith("orphan-")]
    for p in left:  # the next tool starts from the same state
        cluster.delete(ResourceKind.POD, p["metadata"]["name"], namespace="default")
    if left:
        print(f"  ({tool}: {len(left)} orphans were not cleaned)")
    return wall


# `kubectl`: the TLS pair alone (ours and `kubectl logs -f`, both `| cat`); `logs` includes it.
PARTS = ("run", "logs", "kubectl", "interrupt", "clean")


def logs_rows(
    sandbox: KubernetesSandbox,
    env: dict[str, str],
    ours: str,
    theirs: str | None,
    mib: int,
    runs: int,
    *,
    plain: bool = True,
    tls_pair: bool = True,
) -> dict[str, tuple[float, float]]:
    """The 100-byte-line log rows, each measured `runs` times in turn (so load drifting during
    the run hits every row alike); medians of (whole command, streaming phase) MiB/s by key:
    `plain`: ours and 0.4.1, the sandbox's live follow to a raw reader and its backlog;
    `tls_pair`, when kubectl is installed: `kubectl logs -f` and ours again on a TLS sandbox
    (kubectl sends no credentials over plain HTTP), the same output."""
    kubectl = shutil.which("kubectl") if tls_pair else None
    samples: dict[str, list[tuple[float, float]]] = {}

    def add(key: str, value: tuple[float, float]) -> None:
        samples.setdefault(key, []).append(value)

    with contextlib.ExitStack() as stack:
        tls: tuple[KubernetesSandbox, dict[str, str]] | None = None
        if kubectl:
            # One log file per container (rotation off): the kubelet checks its 10 MiB
            # containerLogMaxSize at 10 s ticks, and a tick that falls between the pod's start
            # and kubectl's request (kubectl starts after the pod runs) would leave it only the
            # current file to read, fewer bytes than squarepeg's follow, there since the start.
            tls_sandbox = stack.enter_context(
                KubernetesSandbox(
                    kill_grace_seconds=0.2, tls=True, kubelet={"container_log_max_size": -1}
                )
            )
            tls = (tls_sandbox, {**env, "KUBECONFIG": str(tls_sandbox.kubeconfig_path)})
            same_output(*tls, ours, kubectl)
        for _ in range(runs):
            if plain:
                add("ours", log_throughput(sandbox, ours, env, mib))
                if theirs:
                    add("theirs", log_throughput(sandbox, theirs, env, mib))
                rate = raw_follow(sandbox, env, mib, mode="live")
                add("live", (rate, rate))
                rate = raw_follow(sandbox, env, mib, mode="backlog")
                add("backlog", (rate, rate))
            if kubectl and tls:
                # (all of it, the tool + cat alone): the rest is the sandbox and the container
                client: list[float] = []
                with cpu_spent() as cpu:
                    add(
                        "tls_ours", log_throughput(tls[0], ours, tls[1], mib, pipe=True, cpu=client)
                    )
                add("tls_ours_cpu", (cpu[0], client[0]))
                client = []
                with cpu_spent() as cpu:
                    add("kubectl", kubectl_follow(*tls, kubectl, mib, client))
                add("kubectl_cpu", (cpu[0], client[0]))
                for timestamps in (True, False):
                    key = "stream_timestamps" if timestamps else "stream_plain"
                    add(key, stream_follow(*tls, mib, timestamps=timestamps))
    return {
        key: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
        for key, rows in samples.items()
    }


def ratio(ours: float, theirs: float | None) -> str:
    return "n/a" if not theirs else f"{ours / theirs:.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--log-mib", type=int, default=256)
    parser.add_argument(
        "--log-runs",
        type=int,
        default=1,
        help="measure each 100-byte-line log row this many times, alternating; medians",
    )
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument(
        "--only",
        action="append",
        choices=PARTS,
        help="measure only this part (repeatable); default: all",
    )
    args = parser.parse_args()
    keep_freed_memory()  # the sandboxes below run in this process, as `squarepeg sandbox` does
    parts = set(args.only or PARTS)
    ours = str(our_bin("squarepeg"))
    load_before = os.getloadavg()
    # the kubectl pair alone needs no 0.4.1
    baseline = None if args.skip_baseline or parts <= {"kubectl"} else baseline_squarepeg()
    theirs = str(baseline) if baseline else None
    with (
        tempfile.TemporaryDirectory() as home,
        KubernetesSandbox(
            kill_grace_seconds=0.2, tls=False
        ) as sandbox,  # as bench/kubernetes_sandbox.py: raw HTTP, comparable with earlier figures
    ):
        user = "bench-user"
        env = {
            "HOME": home,
            "KUBECONFIG": str(sandbox.kubeconfig_path),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LOGNAME": user,
            "NO_COLOR": "1",
        }
        results: list[tuple[str, str, str, str, str]] = []

        if "run" in parts:
            t_ours = trivial(sandbox, ours, env, args.runs)
            t_theirs = trivial(sandbox, theirs, env, args.runs) if theirs else None
            results.append(
                (
                    "run alpine echo hi (wall)",
                    f"{t_ours['wall'] * 1000:.0f} ms",
                    f"{t_theirs['wall'] * 1000:.0f} ms" if t_theirs else "n/a",
                    ratio(t_ours["wall"], t_theirs["wall"] if t_theirs else None),
                    "<= 0.5x",
                )
            )
            results.append(
                (
                    "  API requests / TCP connections",
                    f"{t_ours['requests']:.0f} / {t_ours['connections']:.0f}",
                    f"{t_theirs['requests']:.0f} / {t_theirs['connections']:.0f}"
                    if t_theirs
                    else "n/a",
                    "",
                    "<= 8 requests",
                )
            )

        rows: dict[str, tuple[float, float]] = {}
        if "logs" in parts or "kubectl" in parts:
            rows = logs_rows(
                sandbox, env, ours, theirs, args.log_mib, args.log_runs, plain="logs" in parts
            )
        if "logs" in parts:
            l_ours, l_theirs = rows["ours"], rows.get("theirs")
            live, backlog = rows["live"][0], rows["backlog"][0]
            for index, label in enumerate(("whole command", "streaming phase")):
                results.append(
                    (
                        f"{args.log_mib} MiB log -> /dev/null, {label}",
                        f"{l_ours[index]:.1f} MiB/s",
                        f"{l_theirs[index]:.1f} MiB/s" if l_theirs else "n/a",
                        f"{l_ours[index] / l_theirs[index]:.1f}x faster" if l_theirs else "n/a",
                        ">= 5x",
                    )
                )
            results.append(
                (
                    "sandbox live follow, raw reader",
                    f"{live:.1f} MiB/s",
                    "",
                    f"ours {l_ours[1] / live:.0%} of it",
                    ">= 70%",
                )
            )
            results.append(
                (
                    "  its backlog (pod ended first)",
                    f"{backlog:.1f} MiB/s",
                    "",
                    f"ours {l_ours[1] / backlog:.0%} of it",
                    "(not a live follow)",
                )
            )
            alone = decoder_alone()
            results.append(
                (
                    "  the decoder alone, in-process",
                    f"{alone:.1f} MiB/s",
                    "",
                    f"70% of the live follow is {0.7 * live / alone:.0%} of it",
                    "(a bound, not a target)",
                )
            )
            # 0.4.1 hangs on long lines rendered one timestamp per line: capped at 10x ours.
            cap = 10 * args.log_mib / max(l_ours[0], 1.0)
            long_ours = log_throughput(sandbox, ours, env, args.log_mib, writer=LONG_LOG_WRITER)
            long_theirs = (
                log_throughput(
                    sandbox, theirs, env, args.log_mib, writer=LONG_LOG_WRITER, timeout=cap
                )
                if theirs
                else None
            )
            for index, label in enumerate(("whole command", "streaming phase")):
                results.append(
                    (
                        f"{args.log_mib} MiB log of 64 KiB lines, {label}",
                        f"{long_ours[index]:.1f} MiB/s "
                        f"({long_ours[index] / l_ours[index]:.2f}x the 100-byte row)",
                        (f"{long_theirs[index]:.1f} MiB/s" if long_theirs[index] else "hung")
                        if long_theirs
                        else "n/a",
                        f"{long_ours[index] / long_theirs[index]:.1f}x faster"
                        if long_theirs and long_theirs[index]
                        else "n/a",
                        ">= 0.9x the 100-byte row",
                    )
                )

        if "kubectl" in rows:
            tls_ours, l_kubectl = rows["tls_ours"], rows["kubectl"]
            for index, label in enumerate(("whole command", "streaming phase")):
                results.append(
                    (
                        f"TLS, | cat: ours, {label}",
                        f"{tls_ours[index]:.1f} MiB/s",
                        "",
                        "",
                        "",
                    )
                )
            ours_cpu, kubectl_cpu = rows["tls_ours_cpu"][0], rows["kubectl_cpu"][0]
            results.append(
                (
                    "TLS pair, CPU s/run: ours, kubectl",
                    f"{ours_cpu:.2f} s",
                    "",
                    f"{kubectl_cpu:.2f} s",
                    f"ours {ours_cpu / kubectl_cpu:.2f}x (tool, cat, sandbox, writer)",
                )
            )
            ours_client, kubectl_client = rows["tls_ours_cpu"][1], rows["kubectl_cpu"][1]
            results.append(
                (
                    "  of it the tool and cat",
                    f"{ours_client:.2f} s",
                    "",
                    f"{kubectl_client:.2f} s",
                    f"ours {ours_client / kubectl_client:.2f}x; the rest (sandbox, writer) "
                    f"{ours_cpu - ours_client:.2f} / {kubectl_cpu - kubectl_client:.2f} s",
                )
            )
            for index, label in enumerate(("whole command", "streaming phase")):
                results.append(
                    (
                        f"TLS, | cat: kubectl logs -f, {label}",
                        f"{l_kubectl[index]:.1f} MiB/s",
                        "",
                        f"ours {tls_ours[index] / l_kubectl[index]:.1f}x",
                        ">= 3x" if index == 1 else "(ours: pod start too)",
                    )
                )
            # what the sandbox and the TLS read leave a client of each query, nothing decoded
            for key, query in (("stream_timestamps", "ours"), ("stream_plain", "kubectl's")):
                results.append(
                    (
                        f"  TLS stream, no decoding, {query} query",
                        f"{rows[key][1]:.1f} MiB/s",
                        "",
                        f"ours {tls_ours[1] / rows[key][1]:.0%} of it",
                        "(a bound, not a target)",
                    )
                )

        if "interrupt" in parts:
            c_ours = ctrl_c_latency(ours, env)
            c_theirs = ctrl_c_latency(theirs, env) if theirs else None
            results.append(
                (
                    "Ctrl-C -> exit, silent container",
                    f"{c_ours * 1000:.0f} ms",
                    f"{c_theirs * 1000:.0f} ms" if c_theirs else "n/a",
                    ratio(c_ours, c_theirs),
                    "<= 1 s",
                )
            )

        if "clean" in parts:
            others = 1800
            k_ours = clean_wall(sandbox, ours, env, user, others)
            k_theirs = clean_wall(sandbox, theirs, env, user, others) if theirs else None
            results.append(
                (
                    "clean 200 of 2,000 pods, +10 ms/req",
                    f"{k_ours * 1000:.0f} ms",
                    f"{k_theirs * 1000:.0f} ms" if k_theirs else "n/a",
                    ratio(k_ours, k_theirs),
                    "<= 0.3x",
                )
            )

    print(f"{'measure':<38}{'ours':>14}{'0.4.1':>14}{'ratio':>14}  target")
    for name, a, b, r, target in results:
        print(f"{name:<38}{a:>14}{b:>14}{r:>14}  {target}")
    before, after = (" ".join(f"{v:.1f}" for v in load) for load in (load_before, os.getloadavg()))
    print(f"load average (1, 5, 15 min): {before} before, {after} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
