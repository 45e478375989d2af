"""runpod-deploy on its default provider (RunPod, REST v2) against the same run on the `ssh`
provider, alternating in one invocation: the default provider's local overhead is at most the
ssh provider's plus 0.2 s (issue 22).

    .venv/bin/python bench/runpod_default.py [--runs N]

Both run one trivial job (a 2 s script). The default provider talks to the RunPod API sandbox
(adapters/sandboxes/runpod) whose pods are real sshds on 127.0.0.1 (needs root and unshare, as
the e2e tests do); the ssh provider to one LoopbackSshd. Per run:

- overhead: the CLI's wall time minus the script's 2 s (on loopback the API answers in about a
  millisecond, so this is the CLI's own time plus the sandbox pod's boot, its sshd starting);
- CPU: user + system seconds of the CLI process (what this machine paid, whatever it waited on);
- GraphQL requests the run sent (0 unless the config asks for spot).

Figures of the same run, for scale: `import runpod` (the SDK 1.x import every default-provider
CLI process paid before the REST adapter, when the SDK is installed).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _venv import our_bin
from runpod_ssh import BODY, SCRIPT_SEC, ours_setup

from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.adapters.sandboxes.runpod.pod_ssh import can_namespace
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key

DEFAULT_CONFIG = """\
schema_version: 2
name: bench-default
state_file: "{{config_dir}}/state-{{run_id}}.json"
pod: {{image: "runpod/pytorch:2.4.0", datacenters: [EU-RO-1], gpu_order: [NVIDIA RTX A4000]}}
storage: {{mode: ephemeral, volume_gb: 20}}
ssh: {{key_path: {key}}}
budget: {{cost_cap_usd: 1, assumed_hourly_rate_usd: 0.5, max_runtime_minutes: 10}}
telemetry: {{enabled: false}}
lifecycle: {{on_success: delete, on_failure: delete}}
run:
  script_path: /workspace/run.sh
  log_path: /workspace/run.log
  success_marker: BENCH_DONE
  body: |
{body}"""


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode, done.stderr.decode(errors="replace")[-600:]


def sdk_import_sec() -> float | None:
    probe = "import time; t = time.perf_counter(); import runpod; print(time.perf_counter() - t)"
    done = subprocess.run(
        [str(our_bin("python")), "-c", probe], capture_output=True, text=True, check=False
    )
    return float(done.stdout) if done.returncode == 0 else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not can_namespace():
        print("runpod_default: needs root and unshare (sandbox pods see their own /workspace)")
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-default-") as name:
        tmp = Path(name)
        home = tmp / "home"
        key = home / ".ssh" / "id_ed25519"
        public = generate_key(key, comment="bench-client")
        sandbox = RunPodSandbox(ssh=True, public_keys=[]).start()
        try:
            with LoopbackSshd([public], record_commands=True) as sshd:
                ssh_argv, ssh_env, ssh_cwd = ours_setup(tmp, sshd, key)
                ssh_env = {**ssh_env, "HOME": str(home)}
                directory = tmp / "default"
                directory.mkdir()
                config = directory / "job.yaml"
                config.write_text(
                    DEFAULT_CONFIG.format(key=key, body=textwrap.indent(BODY, "    "))
                )
                default_argv = [str(our_bin("runpod-deploy")), "run", "--config", str(config)]
                default_env = {**os.environ, "HOME": str(home), **sandbox.environ()}
                samples: dict[str, list[tuple[float, float]]] = {"default": [], "ssh": []}
                graphql: list[int] = []
                for i in range(args.runs + 1):  # one warm-up each, alternating
                    for side, (argv, env, cwd) in {
                        "default": (default_argv, default_env, directory),
                        "ssh": (ssh_argv, ssh_env, ssh_cwd),
                    }.items():
                        asked = len(sandbox.received)
                        wall, cpu, code, err = timed(argv, env, cwd)
                        if code != 0:
                            print(f"  {side} run failed (exit {code}): {err}", file=sys.stderr)
                            return 1
                        if side == "default":
                            graphql.append(len(sandbox.received) - asked)
                        if i > 0:
                            samples[side].append((wall - SCRIPT_SEC, cpu))
        finally:
            sandbox.stop()
    print(f"runpod-deploy run, one {SCRIPT_SEC:.0f} s script ({args.runs} runs each, alternating)")
    medians = {}
    for side, got in samples.items():
        overheads = [o for o, _ in got]
        cpus = [c for _, c in got]
        medians[side] = statistics.median(overheads)
        print(
            f"  {side:>7}: overhead median {medians[side]:.3f} s (range {min(overheads):.3f}-"
            f"{max(overheads):.3f}); CLI CPU median {statistics.median(cpus):.3f} s"
        )
    extra = medians["default"] - medians["ssh"]
    print(
        f"  default - ssh: {extra:+.3f} s  (target <= +0.200 s); GraphQL requests a run: "
        f"{sorted(set(graphql))}"
    )
    sdk = sdk_import_sec()
    if sdk is not None:
        print(f"  for scale: `import runpod` (SDK 1.x, no longer imported) takes {sdk:.3f} s here")
    return 0


if __name__ == "__main__":
    sys.exit(main())
