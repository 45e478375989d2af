"""runpod-deploy on the local provider: run overhead, marker latency, dead-script latency.

    .venv/bin/python bench/runpod_local.py [--runs N]

Figures (medians):
- overhead: wall time of `runpod-deploy run` (a subprocess, interpreter start included) minus
  the wall time of the same script run directly with bash, measured in the same run (the
  baseline); also the in-process overhead of run_job (no interpreter start). Target <= 1.0 s.
- marker latency: the script prints `MARK $EPOCHREALTIME` and the success marker; latency is
  when that chunk reached the job's stdout callback minus the time printed. Target <= 0.1 s.
- dead-script latency: the script prints its time and exits 1 without the marker; latency is
  the `run_failed` event's timestamp minus the time printed. Target <= 1 s.
runpod-deploy 0.8.4 (reference notes §5, §8, §17): 5.7 s overhead at its fastest poll, 1.1 s
marker latency at best (60 s poll by default), and a dead script waits its whole budget.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _venv import our_bin

SLEEP_SEC = 1.0
CONFIG = textwrap.dedent(
    """\
    schema_version: 2
    name: bench
    state_file: "{{config_dir}}/state-{{run_id}}.json"
    pod: {{provider: local, image: local/bash, datacenters: [LOCAL], gpu_order: [LOCAL-GPU]}}
    storage: {{mode: ephemeral, volume_gb: 1}}
    budget: {{cost_cap_usd: 1, assumed_hourly_rate_usd: 0.5, max_runtime_minutes: 10}}
    telemetry: {{enabled: {telemetry}}}
    run:
      script_path: "{{volume_mount}}/run.sh"
      log_path: "{{volume_mount}}/run.log"
      success_marker: BENCH_DONE
      body: |
    {body}
    """
)


def write_config(directory: Path, name: str, body: str, *, telemetry: bool = False) -> Path:
    indented = textwrap.indent(body, "    ")
    path = directory / f"{name}.yaml"
    path.write_text(CONFIG.format(body=indented, telemetry=str(telemetry).lower()))
    return path


def cli_overhead(directory: Path, runs: int, env: dict[str, str]) -> tuple[float, float]:
    body = f"sleep {SLEEP_SEC}\necho BENCH_DONE\n"
    config = write_config(directory, "trivial", body)
    script = directory / "direct.sh"
    script.write_text(body)
    ours, direct = [], []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [str(our_bin("runpod-deploy")), "run", "--config", str(config), "-q"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        ours.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"bench run failed: {done.stderr.decode()}")
        start = time.perf_counter()
        subprocess.run(["bash", str(script)], stdout=subprocess.DEVNULL, check=True)
        direct.append(time.perf_counter() - start)
    return statistics.median(ours), statistics.median(direct)


def in_process(directory: Path, name: str, body: str, env: dict[str, str]) -> dict[str, object]:
    """One run_job in this process; returns timings the callbacks saw, and the manifest."""
    os.environ.update(env)
    from pegboard.app.runpod_deploy.container import current_container
    from pegboard.app.runpod_deploy.run_job import run_job
    from pegboard.app.runpod_deploy.run_types import RunRequest

    container = current_container()
    arrivals: list[tuple[float, bytes]] = []
    deps = container.run_deps(job_output=lambda chunk: arrivals.append((time.time(), chunk)))
    config = write_config(directory, name, body)
    start = time.perf_counter()
    result = run_job(RunRequest(config_path=config), deps)
    wall = time.perf_counter() - start
    run_dir = Path(result.run_dir or "")
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    manifest = json.loads((run_dir / "runpod_deploy_pull_manifest.json").read_text())
    return {
        "wall": wall,
        "arrivals": arrivals,
        "events": events,
        "manifest": manifest,
        "exit": result.exit_code,
    }


def printed_time(arrivals: list[tuple[float, bytes]]) -> tuple[float, float]:
    for arrived, chunk in arrivals:
        for line in chunk.decode().splitlines():
            if line.startswith("MARK "):
                return float(line.split()[1]), arrived
    raise SystemExit("no MARK line seen")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        env = {
            **os.environ,
            "PEGBOARD_LOCAL_PODS_ROOT": str(directory / "pods"),
            "HOME": str(directory / "home"),
        }
        cli, direct = cli_overhead(directory, args.runs, env)
        stamp = 'printf "MARK %s\\n" "$EPOCHREALTIME"'
        in_proc, marker, dead, phases = [], [], [], {}
        for i in range(args.runs):
            ok = in_process(
                directory, f"ok{i}", f"sleep {SLEEP_SEC}\n{stamp}\necho BENCH_DONE\n", env
            )
            in_proc.append(float(ok["wall"]) - SLEEP_SEC)  # type: ignore[arg-type]
            printed, arrived = printed_time(ok["arrivals"])  # type: ignore[arg-type]
            marker.append(arrived - printed)
            phases = ok["manifest"]["phase_durations_sec"]  # type: ignore[index]
            bad = in_process(directory, f"dead{i}", f"sleep 0.2\n{stamp}\nexit 1\n", env)
            printed, _ = printed_time(bad["arrivals"])  # type: ignore[arg-type]
            failed = [e for e in bad["events"] if e["event"] == "run_failed"]  # type: ignore[union-attr]
            noticed = _epoch(failed[0]["ts_utc"])
            dead.append(noticed - printed)
    overhead = cli - direct
    print(f"runpod-deploy run, local provider ({args.runs} runs, medians)")
    print(f"  baseline (same script with bash directly): {direct:.3f} s")
    print(f"  runpod-deploy run (subprocess):            {cli:.3f} s")
    print(
        f"  overhead, CLI incl. interpreter start:     {overhead:.3f} s  (target <= 1.0 s; "
        f"0.8.4: 5.7 s)  ratio to the script: {cli / direct:.2f}x"
    )
    print(f"  overhead, run_job in-process:              {statistics.median(in_proc):.3f} s")
    print(
        f"  marker written -> noticed:                 {statistics.median(marker) * 1000:.0f} ms"
        f"  (target <= 100 ms; 0.8.4: >= 1100 ms)"
    )
    print(
        f"  dead script -> noticed:                    {statistics.median(dead) * 1000:.0f} ms"
        f"  (target <= 1000 ms; 0.8.4: the whole budget)"
    )
    print(
        "  phases of the last in-process run (s): "
        + ", ".join(f"{k} {v:.3f}" for k, v in phases.items())
    )


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


if __name__ == "__main__":
    main()
