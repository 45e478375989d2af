"""`runpod-deploy run --config PATH`: the provider starts reaching its machine before the CLI
loads (the console script calls this first; seams.contact_provider_early does the rest).

The ssh provider's key exchange then runs while click, the config's schema and the composition
root import (~0.15 s), instead of after them. The command line is only looked at here, not
validated: click parses it as usual, and a dial takes the early key exchange only where host,
port and timeout match (adapters/ssh_connection.py). A dry run, `--help`, or anything this
reading does not understand contacts nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

# `run`'s options that take a value (cli/run.py): their values are skipped, not read as flags.
_VALUE_OPTIONS = frozenset(
    {
        "--var",
        "--vars-file",
        "--cost-cap-usd",
        "--max-runtime-minutes",
        "--gpu-id",
        "--datacenter-id",
        "--max-gpu-price",
        "-o",
        "--output",
    }
)
_NO_CONTACT = frozenset({"--dry-run", "--offline-dry-run", "-h", "--help", "--"})


def contact_early(argv: Sequence[str]) -> None:
    """argv without the program name."""
    if not argv or argv[0] != "run":
        return
    config: str | None = None
    ready: int | None = None
    args = iter(argv[1:])
    for arg in args:
        if arg in _NO_CONTACT:
            return
        name, equals, value = arg.partition("=")
        if name in ("--config", "--ssh-ready-timeout-sec"):
            given = value if equals else next(args, None)
            if given is None:
                return
            if name == "--config":
                config = given
            elif given.isdigit() and int(given) >= 1:
                ready = int(given)
            else:
                return
        elif name in _VALUE_OPTIONS and not equals:
            next(args, None)
    if config:
        from .seams import contact_provider_early

        contact_provider_early(config, ready)
