"""python -m pegboard.adapters.sandboxes.kubernetes [--port N] [--kubeconfig PATH] [--token T]
[--plain-http] [--pod-security NS=LEVEL]... [--apply FILE]... [--user NAME=VERBS:RESOURCES]...
[--node JSON]..."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pegboard.domain.errors import PegboardError, UsageError

from .sandbox import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pegboard.adapters.sandboxes.kubernetes",
        description="Serve a loopback Kubernetes API sandbox until SIGINT/SIGTERM.",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: any free port)"
    )
    parser.add_argument(
        "--kubeconfig", default=None, help="where to write the kubeconfig (default: a temp dir)"
    )
    parser.add_argument("--token", default=None, help="bearer token to require (default: random)")
    parser.add_argument(
        "--plain-http",
        action="store_true",
        help="serve HTTP instead of HTTPS (kubectl then sends no token)",
    )
    parser.add_argument(
        "--pod-security",
        action="append",
        default=[],
        metavar="NS=LEVEL",
        help="enforce and warn at a Pod Security level in a namespace (repeatable)",
    )
    parser.add_argument(
        "--apply",
        action="append",
        default=[],
        metavar="FILE",
        help="create the Namespaces, ResourceQuotas and LimitRanges of a YAML file first",
    )
    parser.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME=VERBS:RESOURCES",
        help="a user allowed only these rules, e.g. ci=get,list:pods;get:pods/log (repeatable)",
    )
    parser.add_argument(
        "--node",
        action="append",
        default=[],
        metavar="JSON",
        help='declare a node (repeatable), e.g. \'{"name": "gpu-0", "labels": '
        '{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, "capacity": {"nvidia.com/gpu": 8}, '
        '"taints": ["nvidia.com/gpu=present:NoSchedule"]}\'; without any, one node fits every pod',
    )
    args = parser.parse_args(argv)
    try:
        levels = dict(_pair(item, "--pod-security") for item in args.pod_security)
        users = [_pair(item, "--user") for item in args.user]
        nodes = [_node(item) for item in args.node]
        serve(
            args.port,
            args.kubeconfig,
            token=args.token,
            tls=not args.plain_http,
            users=users,
            pod_security=levels,
            object_files=args.apply,
            nodes=nodes,
        )
    except PegboardError as exc:
        print(f"kubernetes sandbox: {exc}", file=sys.stderr)
        sys.exit(2)


def _node(item: str) -> dict[str, Any]:
    try:
        node = json.loads(item)
    except ValueError as exc:
        raise UsageError(f"--node {item!r}: not JSON ({exc})") from None
    if not isinstance(node, dict):
        raise UsageError(f"--node {item!r}: expected a JSON object")
    return node


def _pair(item: str, flag: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not (sep and key and value):
        raise UsageError(f"{flag} {item!r}: expected NAME=VALUE")
    return key, value


if __name__ == "__main__":
    main()
