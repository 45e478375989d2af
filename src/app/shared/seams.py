"""The outside world both apps read, as plain functions (no dependency-injector, no adapters
imported until called).

The composition roots (`app/*/container.py`) make providers of these; commands that never leave
this machine (`--dry-run`, `config show`, `validate`) call them directly, so they do not pay for
importing dependency-injector. Adapters are imported inside each function: `--help` never loads
yaml, kubernetes or paramiko.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pegboard.domain.documents import SourceDocument
    from pegboard.domain.ports.clock import Clock


def local_user_name(environ: Mapping[str, str] | None = None) -> str:
    """The local user name, never raising: LOGNAME/USER/LNAME/USERNAME, then the passwd entry,
    then `uid-<n>` (OpenShift-style arbitrary UIDs have no passwd entry)."""
    env = os.environ if environ is None else environ
    for key in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if env.get(key):
            return env[key]
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None:
        try:
            import pwd

            return pwd.getpwuid(uid).pw_name
        except (KeyError, ImportError, OSError):
            return f"uid-{uid}"
    return "unknown"


def home_dir(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or os.path.expanduser("~")


def random_hex() -> str:
    """Six hex digits: what secrets.token_hex(3) does, without importing secrets (~8 ms)."""
    return os.urandom(3).hex()


def current_stdout() -> TextIO:
    return sys.stdout


def current_stderr() -> TextIO:
    return sys.stderr


def read_config_text(path: Path) -> str:
    """A small user file (--vars-file, --env-file): bounded and strict UTF-8 (InputRejected)."""
    from pegboard.adapters.bounded_files import read_bounded_text
    from pegboard.domain.input_limits import MAX_CONFIG_BYTES

    return read_bounded_text(path, limit=MAX_CONFIG_BYTES)


def read_record_bytes(path: Path, limit: int) -> bytes:
    """A record file (manifest, events.jsonl): at most `limit` bytes (InputRejected past it)."""
    from pegboard.adapters.bounded_files import read_bounded_bytes

    return read_bounded_bytes(path, limit=limit)


def read_yaml_document(path: Path) -> SourceDocument:
    """A YAML config file as a SourceDocument (bounded; ConfigError on bad YAML)."""
    from pegboard.adapters.yaml_documents import read_yaml_document as read

    return read(path)


def dump_yaml(obj: Any) -> str:
    from pegboard.adapters.yaml_dump import dump_yaml as dump

    return dump(obj)


def system_clock() -> Clock:
    from pegboard.adapters.system_clock import SystemClock

    return SystemClock()


def utc_now(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), UTC)
