"""Startup time of `squarepeg --help` and a client-side `--dry-run`, against squarepeg 0.4.1.

Reports medians of N runs as ratios to `python -c pass` and to squarepeg 0.4.1 (installed in
.bench-venv on first use; reported as unavailable when it cannot be installed). Target: both
commands at most 0.3x squarepeg 0.4.1's time (issue 19).

    .venv/bin/python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _venv import baseline_squarepeg, median_ms, our_bin, paired_wall_times, wall_times

DRY_RUN = ["run", "--dry-run", "--cpus", "0.5", "-m", "512m", "alpine", "echo", "hi"]
TARGET_RATIO = 0.3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        # No user config and no kubeconfig: both tools do the same, purely local work.
        env = {"HOME": home, "KUBECONFIG": str(Path(home) / "missing"), "NO_COLOR": "1"}
        python_ms = median_ms(wall_times([sys.executable, "-c", "pass"], runs=args.runs, env=env))
        ours = str(our_bin("squarepeg"))
        baseline = baseline_squarepeg()
        print(f"python -c pass: {python_ms:.1f} ms (median of {args.runs})")
        print(f"{'command':<22}{'ours ms':>9}{'x python':>10}{'0.4.1 ms':>10}{'x 0.4.1':>9}")
        ok = True
        for label, argv in (("--help", ["--help"]), ("run --dry-run ...", DRY_RUN)):
            if baseline is None:
                our_ms = median_ms(wall_times([ours, *argv], runs=args.runs, env=env))
                print(f"{label:<22}{our_ms:>9.1f}{our_ms / python_ms:>10.2f}{'n/a':>10}{'n/a':>9}")
                continue
            base_argv = [str(baseline), *argv]
            if argv is DRY_RUN:
                base_argv.insert(2, "--no-default-config")
            # Alternate the two tools, so a change in machine load hits both alike.
            our_times, base_times = paired_wall_times(
                [ours, *argv], base_argv, runs=args.runs, env=env
            )
            our_ms, base_ms = median_ms(our_times), median_ms(base_times)
            ratio = our_ms / base_ms
            ok = ok and ratio <= TARGET_RATIO
            line = f"{label:<22}{our_ms:>9.1f}{our_ms / python_ms:>10.2f}"
            line += f"{base_ms:>10.1f}{ratio:>9.2f}"
            print(line)
        if baseline is None:
            print("squarepeg 0.4.1 baseline: unavailable")
        else:
            print(f"target: <= {TARGET_RATIO}x squarepeg 0.4.1: {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
