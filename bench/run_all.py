"""Run every benchmark in bench/ in turn (`make bench`); each prints its own ratios.

Benchmarks are not part of the test gate: they compare against baselines measured in the same
run (python itself, a bare HTTP server, squarepeg 0.4.1 in .bench-venv, runpod-deploy 0.8.4 in
.bench-venv-runpod-deploy), so run them on a quiet machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHES = (
    "startup.py",
    "squarepeg_run.py",
    "runpod_local.py",
    "runpod_ssh.py",
    "runpod_default.py",
    "kubernetes_sandbox.py",
    "memory.py",
)


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = []
    for name in BENCHES:
        print(f"\n=== bench/{name}", flush=True)
        if subprocess.run([sys.executable, str(here / name)], check=False).returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
