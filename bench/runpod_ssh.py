"""runpod-deploy on the `ssh` provider against runpod-deploy 0.8.4, on one loopback sshd.

    .venv/bin/python bench/runpod_ssh.py [--runs N] [--only ours|0.8.4]

One trivial job (a 2 s script) through our `runpod-deploy run` with `pod.provider: ssh` and
through runpod-deploy 0.8.4 (its own Python 3.13 venv, see _venv.py), alternating, against the
same LoopbackSshd (a real /usr/sbin/sshd on 127.0.0.1). Per run:

- overhead: the CLI's wall time (interpreter start included) minus the script's 2 s;
- marker -> noticed: the script prints `MARK $EPOCHREALTIME` right before the success marker;
  noticed is when that line first reaches the CLI's stdout or stderr (ours streams the log as it
  grows; 0.8.4 re-logs the log's tail on the poll that finds the marker);
- SSH connections: "Accepted publickey" lines in sshd's own log during the run, minus the
  connections rsync opened itself (one `rsync --server` command each, from the ForceCommand
  recorder), so a run that keeps one connection shows 1.

How 0.8.4 is given a pod. 0.8.4 never uses the runpod SDK: provisioning is `runpodctl`
subprocesses (reference notes §5, §6). The RunPod API sandbox (adapters/sandboxes/runpod) speaks
the SDK's GraphQL, and no runpodctl binary is here to point at it, so a small stand-in
`runpodctl` (a shell script, below) answers the calls 0.8.4 makes with the JSON it parses: `pod create --help` (flag probe),
`datacenter list -o json`, `pod create` -> {"id"}, `pod get <id> -o json` -> RUNNING with
ssh.{ip,port} = the loopback sshd, and `pod delete`. Its `ssh` and rsync's `-e ssh` go through an
`ssh` wrapper that only adds `-F /dev/null -o UserKnownHostsFile=<temp file>`: OpenSSH reads
~/.ssh from the passwd entry, not $HOME, and 0.8.4's `StrictHostKeyChecking=accept-new` would
otherwise write this machine's real known_hosts. Both sides run with telemetry off (0.8.4's best
case: its samples cost 4 ssh connections each) and 0.8.4 polls at its fastest (1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _venv import baseline_runpod_deploy, our_bin

from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key

SCRIPT_SEC = 2.0
BODY = 'sleep 2\nprintf "MARK %s\\n" "$EPOCHREALTIME"\necho BENCH_DONE\n'
MARK = re.compile(rb"MARK (\d+\.\d+)")

OURS_CONFIG = """\
schema_version: 2
name: bench-ssh
state_file: "{{config_dir}}/state-{{run_id}}.json"
pod: {{provider: ssh, image: n/a, datacenters: [LAB], gpu_order: [LAB-GPU]}}
storage: {{mode: ephemeral, volume_gb: 1}}
ssh: {{host: 127.0.0.1, port: {port}, user: {user}, key_path: {key}, workspaces_root: {root}}}
budget: {{cost_cap_usd: 1, assumed_hourly_rate_usd: 0.5, max_runtime_minutes: 10}}
telemetry: {{enabled: false}}
lifecycle: {{on_success: delete, on_failure: delete}}
run:
  script_path: "{{volume_mount}}/run.sh"
  log_path: "{{volume_mount}}/run.log"
  success_marker: BENCH_DONE
  body: |
{body}"""

BASELINE_CONFIG = """\
schema_version: 2
name: bench-ssh
state_file: {state}
pod: {{image: n/a, datacenters: [LAB], gpu_order: [LAB-GPU]}}
storage: {{mode: ephemeral, volume_gb: 1, volume_mount: {mount}}}
ssh: {{key_path: {key}}}
budget: {{cost_cap_usd: 1, assumed_hourly_rate_usd: 0.5, max_runtime_minutes: 10,
          poll_interval_sec: 1}}
telemetry: {{enabled: false}}
lifecycle: {{on_success: delete, on_failure: delete}}
run:
  script_path: "{{volume_mount}}/run.sh"
  log_path: "{{volume_mount}}/run.log"
  success_marker: BENCH_DONE
  body: |
{body}"""

# The stand-in `runpodctl`: every call 0.8.4's `run` makes, answered the way it parses them.
STANDIN_RUNPODCTL = """#!/bin/sh
printf '%s\\n' "$*" >> {calls}
case "$1 $2" in
  "pod create")
    case " $* " in
      *" --help "*)
        for f in gpu-id gpu-count spot min-vcpu-count min-memory-in-gb image data-center-ids \\
                 volume-mount-path cloud-type ports name network-volume-id volume-in-gb \\
                 container-disk-in-gb; do echo "      --$f string"; done ;;
      *) echo '{{"id": "standin-pod"}}' ;;
    esac ;;
  "pod get")
    echo '{{"id": "standin-pod", "desiredStatus": "RUNNING", "uptimeSeconds": 1,' \\
         '"costPerHr": 0.0, "ssh": {{"ip": "127.0.0.1", "port": {port}}}}}' ;;
  "datacenter list")
    echo '[{{"id": "LAB", "gpuAvailability": [{{"gpuId": "LAB-GPU", "stockStatus": "High"}}]}}]' ;;
  "pod stop"|"pod start"|"pod delete") echo "pod $3 ok" ;;
  *) echo "stand-in runpodctl: not supported: $*" >&2; exit 1 ;;
esac
"""

SSH_WRAPPER = """#!/bin/sh
exec /usr/bin/ssh -F /dev/null -o UserKnownHostsFile={known_hosts} "$@"
"""


@attrs.frozen
class Sample:
    wall: float
    exit_code: int
    marker_latency: float | None
    connections: int
    rsync_connections: int
    last_error: str

    @property
    def overhead(self) -> float:
        return self.wall - SCRIPT_SEC


def timed_run(argv: Sequence[str], *, env: dict[str, str], cwd: Path, sshd: LoopbackSshd) -> Sample:
    """One CLI run; stdout and stderr are read as they arrive, each line stamped on arrival."""
    logins_before = sshd.accepted_logins()
    commands_before = len(sshd.recorded_commands())
    seen: list[tuple[float, bytes]] = []
    lock = threading.Lock()

    def drain(stream: object) -> None:
        for line in iter(stream.readline, b""):  # type: ignore[attr-defined]
            arrived = time.time()
            with lock:
                seen.append((arrived, line))

    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    readers = [threading.Thread(target=drain, args=(s,)) for s in (proc.stdout, proc.stderr)]
    for reader in readers:
        reader.start()
    code = proc.wait()
    wall = time.perf_counter() - start
    for reader in readers:
        reader.join()
    latency = None
    for arrived, line in sorted(seen, key=lambda item: item[0]):
        found = MARK.search(line)
        if found:
            latency = arrived - float(found.group(1))
            break
    time.sleep(0.2)  # sshd logs a login before the client sees it; rsync's sessions end later
    commands = sshd.recorded_commands()[commands_before:]
    rsyncs = sum(1 for c in commands if c.startswith("rsync --server"))
    logins = sshd.accepted_logins() - logins_before
    error = next((line.decode(errors="replace").strip() for _, line in reversed(seen)), "")
    return Sample(wall, code, latency, logins - rsyncs, rsyncs, error)


def ours_setup(tmp: Path, sshd: LoopbackSshd, key: Path) -> tuple[list[str], dict[str, str], Path]:
    directory = tmp / "ours"
    directory.mkdir()
    config = directory / "job.yaml"
    config.write_text(
        OURS_CONFIG.format(
            port=sshd.port,
            user=pwd.getpwuid(os.getuid()).pw_name,
            key=key,
            root=directory / "workspaces",
            body=textwrap.indent(BODY, "    "),
        )
    )
    env = {**os.environ, "HOME": str(tmp / "home")}
    return [str(our_bin("runpod-deploy")), "run", "--config", str(config)], env, directory


def baseline_setup(
    tmp: Path, sshd: LoopbackSshd, key: Path, script: Path
) -> tuple[list[str], dict[str, str], Path]:
    directory = tmp / "rd084"
    fakebin = directory / "bin"
    fakebin.mkdir(parents=True)
    (directory / "pod").mkdir()
    runpodctl = fakebin / "runpodctl"
    runpodctl.write_text(
        STANDIN_RUNPODCTL.format(calls=directory / "runpodctl.calls", port=sshd.port)
    )
    ssh = fakebin / "ssh"
    ssh.write_text(SSH_WRAPPER.format(known_hosts=directory / "known_hosts"))
    for exe in (runpodctl, ssh):
        exe.chmod(0o755)
    config = directory / "job.yaml"
    config.write_text(
        BASELINE_CONFIG.format(
            state=directory / "state.json",
            mount=directory / "pod",
            key=key,
            body=textwrap.indent(BODY, "    "),
        )
    )
    env = {
        **os.environ,
        "HOME": str(tmp / "home"),
        "PATH": f"{fakebin}{os.pathsep}{os.environ['PATH']}",
    }
    return [str(script), "run", "--config", str(config)], env, directory


def summarize(name: str, samples: list[Sample]) -> dict[str, object]:
    ok = [s for s in samples if s.exit_code == 0]
    if not ok:
        last = samples[-1] if samples else None
        print(f"  {name}: no successful run" + (f" (last: {last.last_error})" if last else ""))
        return {}
    overheads = [s.overhead for s in ok]
    latencies = [s.marker_latency for s in ok if s.marker_latency is not None]
    conns = sorted({s.connections for s in ok})
    rsyncs = sorted({s.rsync_connections for s in ok})
    print(
        f"  {name}: {len(ok)}/{len(samples)} runs ok; overhead median {statistics.median(overheads):.3f} s "
        f"(range {min(overheads):.3f}-{max(overheads):.3f}); marker -> noticed median "
        f"{statistics.median(latencies) * 1000:.0f} ms (range {min(latencies) * 1000:.0f}-"
        f"{max(latencies) * 1000:.0f}); SSH connections a run {conns} (+ rsync's own: {rsyncs})"
        if latencies
        else f"  {name}: {len(ok)} runs ok but no MARK line seen"
    )
    return {
        "overhead": statistics.median(overheads),
        "marker": statistics.median(latencies) if latencies else None,
        "connections": conns,
        "rsync": rsyncs,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=("ours", "0.8.4"))
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    baseline = None if args.only == "ours" else baseline_runpod_deploy()
    with tempfile.TemporaryDirectory(prefix="bench-ssh-") as name:
        tmp = Path(name)
        (tmp / "home").mkdir()
        key = tmp / "client" / "id_ed25519"
        public = generate_key(key, comment="bench-client")
        with LoopbackSshd([public], record_commands=True) as sshd:
            sides: dict[str, tuple[list[str], dict[str, str], Path]] = {}
            if args.only != "0.8.4":
                sides["ours"] = ours_setup(tmp, sshd, key)
            if baseline is not None:
                sides["0.8.4"] = baseline_setup(tmp, sshd, key, baseline)
            samples: dict[str, list[Sample]] = {side: [] for side in sides}
            # Alternate the two sides so drift in machine load hits both; one warm-up each.
            for i in range(args.runs + 1):
                for side, (argv, env, cwd) in sides.items():
                    sample = timed_run(argv, env=env, cwd=cwd, sshd=sshd)
                    if i > 0:
                        samples[side].append(sample)
                    elif sample.exit_code != 0:
                        print(f"  {side} warm-up failed: {sample.last_error}", file=sys.stderr)
    print(
        f"runpod-deploy run, one {SCRIPT_SEC:.0f} s script over one loopback sshd ({args.runs} runs)"
    )
    figures = {side: summarize(side, got) for side, got in samples.items()}
    ours, base = figures.get("ours"), figures.get("0.8.4")
    if ours and base:
        ratio = float(ours["overhead"]) / float(base["overhead"])  # type: ignore[arg-type]
        print(f"  overhead ratio ours / 0.8.4: {ratio:.2f}x  (target <= 0.15x, issue 19)")
        print("  targets: marker -> noticed <= 100 ms; exactly 1 SSH connection a run")
    if args.json:
        print(json.dumps(figures))
    return 0 if all(figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
