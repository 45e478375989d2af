"""python -m pegboard.adapters.sandboxes.runpod [--port N] [--api-key K] [--public-key PATH]..."""

from __future__ import annotations

import argparse

from .sandbox import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pegboard.adapters.sandboxes.runpod",
        description="Serve a loopback RunPod API sandbox until SIGINT/SIGTERM.",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: any free port)"
    )
    parser.add_argument("--api-key", default=None, help="bearer key to require (default: random)")
    parser.add_argument(
        "--public-key",
        action="append",
        default=None,
        help="public key file the pods trust (repeatable; default: ~/.ssh/id_*.pub)",
    )
    parser.add_argument(
        "--no-ssh", action="store_true", help="pods answer an SSH banner only (no sshd)"
    )
    args = parser.parse_args(argv)
    serve(args.port, api_key=args.api_key, public_key_files=args.public_key, ssh=not args.no_ssh)


if __name__ == "__main__":
    main()
