"""python -m pegboard.adapters.sandboxes.kubernetes [--port N] [--kubeconfig PATH] [--token T]"""

from __future__ import annotations

import argparse

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
    args = parser.parse_args(argv)
    serve(args.port, args.kubeconfig, token=args.token)


if __name__ == "__main__":
    main()
