"""`runpod-deploy run` lets its provider start reaching the machine before the CLI loads
(app/runpod_deploy/early_contact.py, seams.contact_provider_early, the ssh plugin's
early_contact): which command lines and configs start a key exchange, with which host, port and
timeout, and that nothing else (a dry run, --help, a template, a FIFO) contacts or reads
anything."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from pegboard.adapters import ssh_connection
from pegboard.app.runpod_deploy import early_contact, seams


@pytest.fixture
def contacts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The config path and flag contact_early passes on."""
    seen: list[tuple[Any, ...]] = []
    monkeypatch.setattr(seams, "contact_provider_early", lambda *args: seen.append(args))
    return seen


@pytest.fixture
def prestarts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The dials the ssh plugin would start: (host, port, user, key_path, use_agent, timeout)."""
    seen: list[tuple[Any, ...]] = []

    def record(target: ssh_connection.SshTarget, timeout: float) -> None:
        assert target.pod == target.host
        seen.append(
            (target.host, target.port, target.user, target.key_path, target.use_agent, timeout)
        )

    monkeypatch.setattr(ssh_connection, "prestart", record)
    monkeypatch.setenv("HOME", "/home/u")
    return seen


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--config", "job.yaml"], [("job.yaml", None)]),
        (["run", "--config=job.yaml", "-v"], [("job.yaml", None)]),
        (["run", "--ssh-ready-timeout-sec", "30", "--config", "j"], [("j", 30)]),
        (["run", "--ssh-ready-timeout-sec=7", "--config=j"], [("j", 7)]),
        (["run", "--var", "a=b", "--gpu-id", "--dry-run", "--config", "j"], [("j", None)]),
        (["run", "--config", "j", "--dry-run"], []),
        (["run", "--offline-dry-run", "--config", "j"], []),
        (["run", "--config", "j", "--help"], []),
        (["run", "-h"], []),
        (["run", "--ssh-ready-timeout-sec", "0", "--config", "j"], []),
        (["run", "--ssh-ready-timeout-sec", "x", "--config", "j"], []),
        (["run", "--config"], []),
        (["run"], []),
        (["validate", "--config", "j"], []),
        (["--version"], []),
        ([], []),
    ],
)
def test_which_command_lines_contact_early(
    argv: list[str], expected: list[tuple[Any, ...]], contacts: list[tuple[Any, ...]]
) -> None:
    early_contact.contact_early(argv)
    assert contacts == expected


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return str(path)


SSH = "pod: {provider: ssh}\nssh: {host: gpu.example, port: 2222}\n"
KEY = "/home/u/.ssh/id_ed25519"  # the default key_path, ~ as HOME


@pytest.mark.parametrize(
    ("text", "flag", "expected"),
    [
        # budget's default 900 s, capped at 10
        (SSH, None, [("gpu.example", 2222, "root", KEY, False, 10.0)]),
        (
            SSH + "budget: {ssh_ready_timeout_sec: 4}\n",
            None,
            [("gpu.example", 2222, "root", KEY, False, 4.0)],
        ),
        (
            SSH + "budget: {ssh_ready_timeout_sec: 4}\n",
            3,
            [("gpu.example", 2222, "root", KEY, False, 3.0)],
        ),
        ("pod: {provider: ssh}\nssh: {host: h}\n", None, [("h", 22, "root", KEY, False, 10.0)]),
        (
            "pod: {provider: ssh}\nssh: {host: h, user: me, key_path: /k, use_agent: true}\n",
            None,
            [("h", 22, "me", "/k", True, 10.0)],
        ),
        (
            "pod: {provider: ssh}\nssh: {host: h, key_path: ~/k}\n",
            None,
            [("h", 22, "root", "/home/u/k", False, 10.0)],
        ),
        (
            "pod: {provider: ssh}\nssh: {host: h, use_agent: true}\n",
            None,
            [("h", 22, "root", None, True, 10.0)],
        ),
        ("pod: {provider: ssh}\nssh: {host: '{host}'}\n", None, []),
        ("pod: {provider: ssh}\nssh: {host: h, user: '{me}'}\n", None, []),
        ("pod: {provider: ssh}\nssh: {host: h, use_agent: 'yes'}\n", None, []),
        ("pod: {provider: ssh}\nssh: {host: h, port: '22'}\n", None, []),
        ("pod: {provider: ssh}\nssh: {host: h, port: 70000}\n", None, []),
        (SSH + "budget: {ssh_ready_timeout_sec: '{t}'}\n", None, []),
        ("pod: {provider: ssh}\n", None, []),
        ("pod: {provider: runpod}\nssh: {host: h}\n", None, []),
        ("pod: {provider: nope}\nssh: {host: h}\n", None, []),
        ("ssh: {host: h}\n", None, []),  # the default provider (runpod) contacts nothing early
        ("pod: [\n", None, []),  # bad YAML: the run says so
    ],
)
def test_which_configs_start_a_key_exchange(
    tmp_path: Path,
    text: str,
    flag: int | None,
    expected: list[tuple[Any, ...]],
    prestarts: list[tuple[Any, ...]],
) -> None:
    seams.contact_provider_early(_config(tmp_path, text), flag)
    assert prestarts == expected


def test_a_missing_config_is_left_to_the_run(
    tmp_path: Path, prestarts: list[tuple[Any, ...]]
) -> None:
    seams.contact_provider_early(str(tmp_path / "absent.yaml"), None)
    assert prestarts == []


def test_a_fifo_config_is_not_read(tmp_path: Path, prestarts: list[tuple[Any, ...]]) -> None:
    """`--config /dev/stdin` or a named pipe: the run's own read gets every byte."""
    fifo = tmp_path / "job.yaml"
    os.mkfifo(fifo)
    holder = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer, so a reader would block
    try:
        os.write(holder, SSH.encode())
        done = threading.Thread(target=seams.contact_provider_early, args=(str(fifo), None))
        done.daemon = True
        done.start()
        done.join(5)
        assert not done.is_alive()
        assert os.read(holder, 4096) == SSH.encode()
    finally:
        os.close(holder)
    assert prestarts == []


def test_the_options_read_as_taking_a_value_are_runs_own() -> None:
    """early_contact skips the value of each `run` option that takes one, without loading click:
    its list is `run`'s own (cli/run.py), so an option added there cannot make the pre-reading
    take its value for a flag or miss a --config after it."""
    import click

    from pegboard.app.runpod_deploy.cli.run import run

    taking_a_value = {
        name
        for param in run.params
        if isinstance(param, click.Option) and not param.is_flag and not param.count
        for name in (*param.opts, *param.secondary_opts)
    }
    assert taking_a_value - {"--config", "--ssh-ready-timeout-sec"} == early_contact._VALUE_OPTIONS
