"""Peak RSS of the CLIs while they stream output: does it grow with the output's size?

- `squarepeg run` of a container writing M MiB of 100-byte lines, to /dev/null, against one
  Kubernetes API sandbox (as bench/squarepeg_run.py), at a small and a large M; squarepeg 0.4.1
  alongside when installed;
- `runpod-deploy run` on the local provider and on the ssh provider (one loopback sshd) of a
  script writing M MiB to its job log (streamed to our stdout, sent to /dev/null), at a small
  and a large M.

Peak RSS is the CLI process's own high-water mark (VmHWM), sampled until it exits: the
container or job script (run by the sandbox or by the provider's shell) is not counted.
Target: the large output's peak within 10 MiB of the small one's (nothing held per byte of output).

    .venv/bin/python bench/memory.py [--small-mib S] [--large-mib L] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import os
import pwd
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _venv import baseline_squarepeg, our_bin
from runpod_local import write_config
from runpod_ssh import OURS_CONFIG
from squarepeg_run import LOG_WRITER

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key

GROWTH_LIMIT_MIB = 10.0


def _high_water_mib(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def peak_rss_mib(argv: list[str], env: dict[str, str]) -> float:
    """The peak resident set of one run of argv, its own process only, in MiB.

    Sampled from /proc/PID/status VmHWM (the kernel's high-water mark) every 10 ms until exit:
    the rusage of wait4 would fold in the job script and other children the CLI waits for.
    """
    peak = 0.0
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.DEVNULL)
        while proc.poll() is None:
            peak = max(peak, _high_water_mib(proc.pid) or 0.0)
            time.sleep(0.01)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv[:3])} ... exited {proc.returncode}")
    return peak


def squarepeg_peak(tool: str, env: dict[str, str], mib: int) -> float:
    code = LOG_WRITER.format(mib=mib)
    return peak_rss_mib(
        [tool, "run", "--no-default-config", "python", sys.executable, "-c", code], env
    )


def runpod_local_peak(directory: Path, env: dict[str, str], mib: int) -> float:
    config = write_config(directory, f"memory{mib}", job_body(mib))
    return peak_rss_mib([str(our_bin("runpod-deploy")), "run", "--config", str(config), "-q"], env)


def job_body(mib: int) -> str:
    # 100-byte lines, as the squarepeg case; `yes` is as fast as the shell gets.
    return f"yes {'x' * 99} | head -c {mib * 1048576}\necho BENCH_DONE\n"


def runpod_ssh_peak(
    directory: Path, env: dict[str, str], sshd: LoopbackSshd, key: Path, mib: int
) -> float:
    config = directory / f"ssh{mib}.yaml"
    config.write_text(
        OURS_CONFIG.format(
            port=sshd.port,
            user=pwd.getpwuid(os.getuid()).pw_name,
            key=key,
            root=directory / "workspaces",
            body=textwrap.indent(job_body(mib), "    "),
        )
    )
    return peak_rss_mib([str(our_bin("runpod-deploy")), "run", "--config", str(config), "-q"], env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-mib", type=int, default=1)
    parser.add_argument("--large-mib", type=int, default=256)
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    sizes = (args.small_mib, args.large_mib)
    baseline = None if args.skip_baseline else baseline_squarepeg()
    rows: list[tuple[str, list[float]]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        KubernetesSandbox(kill_grace_seconds=0.2, tls=False) as sandbox,
    ):
        directory = Path(tmp)
        env = {
            "HOME": str(directory / "home"),
            "KUBECONFIG": str(sandbox.kubeconfig_path),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LOGNAME": "bench-user",
            "NO_COLOR": "1",
            "PEGBOARD_LOCAL_PODS_ROOT": str(directory / "pods"),
        }
        (directory / "home").mkdir()
        rows.append(
            ("squarepeg run", [squarepeg_peak(str(our_bin("squarepeg")), env, m) for m in sizes])
        )
        if baseline is not None:
            rows.append(
                ("squarepeg 0.4.1 run", [squarepeg_peak(str(baseline), env, m) for m in sizes])
            )
        rows.append(
            ("runpod-deploy run, local", [runpod_local_peak(directory, env, m) for m in sizes])
        )
        key = directory / "client" / "id_ed25519"
        public = generate_key(key, comment="bench-client")
        with LoopbackSshd([public]) as sshd:
            peaks = [runpod_ssh_peak(directory, env, sshd, key, m) for m in sizes]
        rows.append(("runpod-deploy run, ssh", peaks))
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    header = "".join(f"{f'{m} MiB':>12}" for m in sizes)
    print(f"{'peak RSS (MiB)':<28}{header}{'growth':>10}  target <= {GROWTH_LIMIT_MIB:.0f} MiB")
    ok = True
    for name, peaks in rows:
        growth = peaks[-1] - peaks[0]
        if not name.startswith("squarepeg 0.4.1"):
            ok = ok and growth <= GROWTH_LIMIT_MIB
        print(f"{name:<28}{''.join(f'{p:>12.1f}' for p in peaks)}{growth:>10.1f}")
    print(f"target: {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
