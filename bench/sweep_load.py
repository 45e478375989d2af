"""A CI fleet on one Kubernetes sandbox: concurrent `squarepeg run`s over a namespace with history.

For 1, 5, 10 and 25 concurrent runs x three histories, a batch of runs (50 by default) of
`squarepeg run alpine echo hi` by one user, measured on the server (the sandbox's own counters,
reset before each batch), for our squarepeg and for squarepeg 0.4.1 in the same script:

- requests per run, bytes of LIST answers per run, objects the server scanned per run;
- DELETEs in total (and how many found nothing: 404), TCP connections per run;
- sweeps in the batch (ours: Lease takeovers) and the most DELETEs one run sent (ours: its
  `sweeping N` line; 0.4.1: its `swept N` line, a lower bound);
- whether any sweep LIST (ours) returns a Running, Job-owned, kept or foreign object: each LIST
  the batch sent is asked again, and its items checked.

Histories: none; 1,000 old orphans of the user (finished 2 h ago, so every sweep may delete them;
topped up before each batch); 5,000 resources that no sweep may delete: 1/3 kept (the user's,
`squarepeg.io/keep`), 1/3 recent (the user's, finished within the hour: `orphan_sweep_min_age:
3600` for both tools), 1/3 foreign (another user's squarepeg pods and unlabelled pods).
Between batches the sweep Lease is deleted, so every batch starts as if the interval were over.

    .venv/bin/python bench/sweep_load.py [--runs 50] [--concurrency 1,5,10,25]
        [--history 0,1000,5000] [--skip-baseline] [--json out.json] [--plot docs/sweep-load.png]

The plot needs matplotlib (`.venv/bin/pip install matplotlib`); without it only the table is
printed.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _venv import baseline_squarepeg, our_bin

from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.sweep_schedule import sweep_lease_name

NS = "default"
USER = "bench-fleet"
OTHER = "someone-else"
MIN_AGE = 3600
FINISHED_LONG_AGO = "2000-01-01T00:00:00Z"
SWEEPING = re.compile(r"sweeping (\d+) orphaned")  # ours: the DELETEs this run sends
SWEPT = re.compile(r"swept (\d+) orphaned")  # 0.4.1: the DELETEs that found something


def pod(name: str, *, owner: str | None, keep: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["labels"] = labels.own_labels(
            run_id=f"history-{secrets.token_hex(4)}", created_by=owner, keep=keep
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "alpine", "command": ["true"]}],
        },
    }


def parallel(fn: Callable[[Any], object], items: Sequence[Any], workers: int = 8) -> None:
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, items))


def wait_finished(sandbox: KubernetesSandbox, names: set[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        phases = {
            p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in sandbox.pods(NS)
        }
        if all(phases.get(n) in ("Succeeded", "Failed") for n in names):
            return
        time.sleep(0.5)
    raise SystemExit("bench: history pods did not finish in time")


def age_finish(cluster: KubernetesCluster, name: str) -> None:
    """Make a finished pod look finished two hours ago (the /status subresource, as a kubelet)."""
    current = cluster.read(ResourceKind.POD, name, namespace=NS)
    if current is None:
        return
    status = current.get("status") or {}
    for entry in status.get("containerStatuses") or []:
        terminated = (entry.get("state") or {}).get("terminated")
        if terminated:
            terminated["finishedAt"] = FINISHED_LONG_AGO
    cluster._json(  # bench only: the port has no /status
        "PATCH",
        f"/api/v1/namespaces/{NS}/pods/{name}/status",
        body={"status": status},
        content_type="application/merge-patch+json",
    )


def create_pods(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster, manifests: list[dict[str, Any]]
) -> set[str]:
    parallel(lambda m: cluster.create(m, namespace=NS), manifests)
    names = {m["metadata"]["name"] for m in manifests}
    wait_finished(sandbox, names)
    return names


def old_orphans(sandbox: KubernetesSandbox) -> list[str]:
    return [
        p["metadata"]["name"] for p in sandbox.pods(NS) if p["metadata"]["name"].startswith("old-")
    ]


def top_up_old_orphans(sandbox: KubernetesSandbox, cluster: KubernetesCluster, want: int) -> None:
    missing = want - len(old_orphans(sandbox))
    if missing <= 0:
        return
    manifests = [pod(f"old-{secrets.token_hex(5)}", owner=USER) for _ in range(missing)]
    names = create_pods(sandbox, cluster, manifests)
    parallel(lambda n: age_finish(cluster, n), sorted(names))


def seed_lasting_history(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster, count: int
) -> None:
    third = count // 3
    manifests = [pod(f"kept-{i:05d}", owner=USER, keep=True) for i in range(third)]
    manifests += [pod(f"recent-{i:05d}", owner=USER) for i in range(third)]
    foreign = count - 2 * third
    manifests += [pod(f"foreign-{i:05d}", owner=OTHER) for i in range(foreign // 2)]
    manifests += [pod(f"plain-{i:05d}", owner=None) for i in range(foreign - foreign // 2)]
    create_pods(sandbox, cluster, manifests)


def clear_history(sandbox: KubernetesSandbox, cluster: KubernetesCluster) -> None:
    names = [p["metadata"]["name"] for p in sandbox.pods(NS)]
    parallel(lambda n: cluster.delete(ResourceKind.POD, n, namespace=NS), names)


def one_run(tool: str, env: dict[str, str], config: Path) -> tuple[int, str]:
    result = subprocess.run(
        [tool, "run", "--no-default-config", "--config", str(config), "alpine", "echo", "hi"],
        env=env,
        capture_output=True,
        timeout=600,
    )
    return result.returncode, result.stderr.decode(errors="replace")


def forbidden_items(cluster: KubernetesCluster, query: dict[str, list[str]]) -> list[str]:
    """Ask a sweep's pod LIST again; every item no sweep may delete, by why."""
    label = (query.get("labelSelector") or [None])[0]
    field = (query.get("fieldSelector") or [None])[0]
    if label is None or "squarepeg.io/created-by" not in label:
        return []
    bad = []
    for item in cluster.list(
        ResourceKind.POD, namespace=NS, label_selector=label, field_selector=field
    ):
        meta, phase = item["metadata"], (item.get("status") or {}).get("phase")
        own = meta.get("labels") or {}
        if phase == "Running" and "job-name in" not in label:
            bad.append("Running")
        if "job-name" in own and "job-name in" not in label:
            bad.append("Job-owned")
        if labels.KEEP in own:
            bad.append("kept")
        if own.get(labels.CREATED_BY) != USER:
            bad.append("foreign")
    return bad


def batch(
    sandbox: KubernetesSandbox,
    cluster: KubernetesCluster,
    tool: str,
    *,
    ours: bool,
    concurrency: int,
    runs: int,
    env: dict[str, str],
    config: Path,
) -> dict[str, Any]:
    cluster.delete(ResourceKind.LEASE, sweep_lease_name(USER), namespace=NS)
    sandbox.stats.reset()
    first_request = len(sandbox.requests)
    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda _: one_run(tool, env, config), range(runs)))
    wall = time.monotonic() - started
    stats = sandbox.stats.to_json()
    mine = sandbox.requests[first_request:]
    failures = [err for code, err in results if code != 0]
    pattern = SWEEPING if ours else SWEPT
    per_run_deletes = [sum(int(n) for n in pattern.findall(err)) for _, err in results]
    lease_takes = sum(
        1
        for r in mine
        if "/leases" in r.path
        and r.method in ("POST", "PUT")
        and r.status is not None
        and 200 <= r.status < 300
    )
    sweeps = lease_takes if ours else sum(1 for n in per_run_deletes if n)
    bad: list[str] = []
    if ours:
        seen: set[str] = set()
        for r in mine:
            if r.verb == "list" and r.path.endswith("/pods"):
                key = json.dumps(r.params(), sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    bad += forbidden_items(cluster, r.params())
    return {
        "runs": runs,
        "failed": len(failures),
        "first_failure": failures[0][-400:] if failures else None,
        "wall_s": wall,
        "requests_per_run": stats["requests"] / runs,
        "by_verb": stats["byVerb"],  # where the requests went (JSON only)
        "list_bytes_per_run": stats["listBytes"] / runs,
        "scanned_per_run": stats["objectsScanned"] / runs,
        "deletes": stats["deletes"],
        "deletes_404": stats["deletesNotFound"],
        "connections_per_run": stats["connections"] / runs,
        "sweeps": sweeps,
        "max_deletes_one_run": max(per_run_deletes) if per_run_deletes else 0,
        "forbidden_in_sweep_lists": sorted(set(bad)),
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| tool | history | concurrent | requests/run | LIST bytes/run | scanned/run | "
        "DELETEs (404) | connections/run | sweeps | max DELETEs one run | failed |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = []
    for r in rows:
        lines.append(
            f"| {r['tool']} | {r['history']} | {r['concurrency']} | {r['requests_per_run']:.1f} | "
            f"{r['list_bytes_per_run'] / 1024:,.0f} KiB | {r['scanned_per_run']:,.0f} | "
            f"{r['deletes']:,} ({r['deletes_404']:,}) | {r['connections_per_run']:.1f} | "
            f"{r['sweeps']} | {r['max_deletes_one_run']:,} | {r['failed']} |"
        )
    return head + "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench: matplotlib is not installed; no plot", file=sys.stderr)
        return False
    metrics = [
        ("requests_per_run", "requests per run"),
        ("list_bytes_per_run", "LIST bytes per run"),
        ("scanned_per_run", "objects scanned per run"),
        ("deletes", "DELETEs per batch"),
    ]
    histories = sorted(
        {r["history"] for r in rows}, key=lambda h: [x["history"] for x in rows].index(h)
    )
    fig, axes = plt.subplots(
        len(metrics), len(histories), figsize=(4 * len(histories), 12), squeeze=False
    )
    for col, history in enumerate(histories):
        for row, (key, title) in enumerate(metrics):
            ax = axes[row][col]
            for tool, style in (("ours", "o-"), ("0.4.1", "s--")):
                points = [r for r in rows if r["tool"] == tool and r["history"] == history]
                if points:
                    ax.plot(
                        [p["concurrency"] for p in points],
                        [max(p[key], 0.5) for p in points],
                        style,
                        label=tool,
                    )
            ax.set_yscale("log")
            ax.set_xticks([p["concurrency"] for p in rows if p["history"] == history])
            if row == 0:
                ax.set_title(f"history: {history}", fontsize=10)
            if col == 0:
                ax.set_ylabel(title)
            if row == len(metrics) - 1:
                ax.set_xlabel("concurrent runs")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("squarepeg run under a CI fleet: server-side cost (log scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    return True


HISTORY_NAMES = {0: "none", 1000: "1,000 old orphans", 5000: "5,000 kept/recent/foreign"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--concurrency", default="1,5,10,25")
    parser.add_argument("--history", default="0,1000,5000")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument(
        "--lasting-from",
        type=int,
        default=5000,
        help="histories this big are kept/recent/foreign; smaller ones are old orphans",
    )
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--plot", type=Path, help="write the PNG plot here")
    parser.add_argument("--from-json", type=Path, help="table and plot of an earlier run's rows")
    args = parser.parse_args()
    if args.from_json:
        rows = json.loads(args.from_json.read_text())
        print(table(rows))
        if args.plot:
            plot(rows, args.plot)
        return 0
    levels = [int(x) for x in args.concurrency.split(",")]
    histories = [int(x) for x in args.history.split(",")]
    tools = [("ours", str(our_bin("squarepeg")), True)]
    if not args.skip_baseline:
        baseline = baseline_squarepeg()
        if baseline is not None:
            tools.append(("0.4.1", str(baseline), False))
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as home,
        KubernetesSandbox(kill_grace_seconds=0.2) as sandbox,
    ):
        config = Path(home) / "fleet.yaml"
        config.write_text(f"orphan_sweep_min_age: {MIN_AGE}\n")
        env = {
            "HOME": home,
            "KUBECONFIG": str(sandbox.kubeconfig_path),
            "PATH": "/usr/bin:/bin",
            "LOGNAME": USER,
            "USER": USER,
        }
        cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)})
        for history in histories:
            clear_history(sandbox, cluster)
            if history >= args.lasting_from:
                seed_lasting_history(sandbox, cluster, history)
            for concurrency in levels:
                for name, tool, ours in tools:
                    if 0 < history < args.lasting_from:
                        top_up_old_orphans(sandbox, cluster, history)
                    row = batch(
                        sandbox,
                        cluster,
                        tool,
                        ours=ours,
                        concurrency=concurrency,
                        runs=args.runs,
                        env=env,
                        config=config,
                    )
                    row.update(tool=name, history=HISTORY_NAMES.get(history, str(history)))
                    row["concurrency"] = concurrency
                    rows.append(row)
                    print(
                        f"{name:6} history={history:5} concurrency={concurrency:2}: "
                        f"{row['requests_per_run']:.1f} req/run, "
                        f"{row['list_bytes_per_run'] / 1024:,.0f} KiB LIST/run, "
                        f"{row['scanned_per_run']:,.0f} scanned/run, "
                        f"{row['deletes']} DELETEs ({row['deletes_404']} 404), "
                        f"{row['sweeps']} sweeps, max {row['max_deletes_one_run']} by one run, "
                        f"{row['failed']} failed, {row['wall_s']:.0f} s"
                        + (
                            f", FORBIDDEN in sweep LISTs: {row['forbidden_in_sweep_lists']}"
                            if row["forbidden_in_sweep_lists"]
                            else ""
                        ),
                        flush=True,
                    )
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
