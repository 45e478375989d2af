"""The pure parts of the SSH adapters: backoff bounds, the pid header, rsync -e quoting and
progress forwarding."""

from __future__ import annotations

import io

import pytest

from pegboard.adapters.rsync_file_sync import _forward_progress, _rsync_quote
from pegboard.adapters.ssh_connection import Backoff
from pegboard.adapters.ssh_shell import _PidHeader
from pegboard.domain.errors import PortError


def test_backoff_doubles_up_to_the_cap_and_stops_within_the_budget() -> None:
    delays = Backoff(first=0.1, cap=1.0, budget=5.0).delays()
    assert delays[:5] == [0.1, 0.2, 0.4, 0.8, 1.0]
    assert sum(delays) <= 5.0 and len(delays) == 7
    assert Backoff(first=1.0, budget=0.5).delays() == []


def test_pid_header_is_stripped_even_when_split() -> None:
    header = _PidHeader()
    assert header.feed(b"12") == b""
    assert header.feed(b"34\nout") == b"out"
    assert header.pgid == 1234
    assert header.feed(b"more\n") == b"more\n"


def test_a_shell_that_prints_first_gives_no_group_to_kill() -> None:
    header = _PidHeader()
    assert header.feed(b"motd line\nrest") == b"motd line\nrest"
    assert header.pgid == 0


def test_rsync_e_quoting() -> None:
    assert _rsync_quote("-p") == "-p"
    assert _rsync_quote("/a b/key") == "'/a b/key'"
    assert _rsync_quote("/it's") == '"/it\'s"'
    with pytest.raises(PortError):
        _rsync_quote('/it\'s "odd"')


def test_only_carriage_return_updates_reach_the_terminal() -> None:
    out = io.BytesIO()
    rest = _forward_progress(b"   1,000  10%\r   5,000  50%\rNumber of files: 2\npartial", out)
    assert out.getvalue() == b"\r   1,000  10%\r   5,000  50%"
    assert rest == b"partial"


def test_paramiko_is_loaded_without_invoke_which_pegboard_never_uses() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from pegboard.adapters.ssh_connection import load_paramiko\n"
        "load_paramiko()\n"
        "import paramiko.transport, paramiko.config\n"
        "print('invoke' in sys.modules)\n"
        "import invoke\n"  # still importable afterwards
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_paramiko_loads_without_importlib_metadata_and_with_its_real_version() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pegboard.adapters.ssh_connection import load_paramiko\n"
            "load_paramiko()\n"
            "import paramiko\n"
            "print('importlib.metadata' in sys.modules, 'email.parser' in sys.modules)\n"
            "from importlib import metadata\n"
            "print(paramiko.__version__ == metadata.version('paramiko'))\n"
            # whatever else asks the stand-in paramiko kept is answered by the real module
            "print(paramiko.metadata.version('attrs') == metadata.version('attrs'))\n"
            "print(paramiko.metadata.PackageNotFoundError is metadata.PackageNotFoundError)\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["False False", "True", "True", "True"]
