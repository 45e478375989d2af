"""python -m pegboard.adapters.sandboxes.kubernetes [--port N] [--kubeconfig PATH] [--token T]
[--plain-http]"""

from __future__ import annotations

import argparse
import sys

from pegboard.domain.errors import PegboardError

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
    args = parser.parse_args(argv)
    try:
        serve(args.port, args.kubeconfig, token=args.token, tls=not args.plain_http)
    except PegboardError as exc:
        print(f"kubernetes sandbox: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
