"""`runpod-deploy sandbox`'s fault knobs reach real clients: one set by a flag at start, one set
over the control endpoint (/sandbox/faults) while it runs, each changing what the real `runpod`
SDK sees; malformed knobs are one line, exit 2, before anything is served."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from helpers.console_scripts import runpod_deploy_bin
from helpers.runpod_sandbox import require_runpod_sdk, sandbox_exports

# The real SDK (1.x: GraphQL), in a fresh interpreter with only the exported variables. Each
# step prints one JSON line; `input()` waits for the test to set the endpoint knob in between.
CLIENT = r"""
import json, os, runpod
runpod.api_key = os.environ["RUNPOD_API_KEY"]
def attempt(call):
    try:
        return {"ok": call()}
    except Exception as exc:
        return {"error": str(exc)}
create = lambda: runpod.create_pod("knobs", "img", "NVIDIA GeForce RTX 3090")["id"]
print(json.dumps(attempt(create)), flush=True)           # the flag's stock-out fires
made = attempt(create)                                    # consumed: this one is placed
print(json.dumps(made), flush=True)
runpod.stop_pod(made["ok"])
input()                                                   # the test POSTs the knob now
print(json.dumps(attempt(lambda: runpod.resume_pod(made["ok"], 1)["id"])), flush=True)
print(json.dumps(attempt(lambda: runpod.resume_pod(made["ok"], 1)["id"])), flush=True)
"""


def _control(exports: dict[str, str], method: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        exports["RUNPOD_API_BASE_URL"] + "/sandbox/faults",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {exports['RUNPOD_API_KEY']}"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def test_a_flag_and_the_control_endpoint_change_what_the_sdk_sees(tmp_path: Path) -> None:
    require_runpod_sdk()
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    server = subprocess.Popen(
        [runpod_deploy_bin(), "sandbox", "--no-ssh", "--stock-out", "NVIDIA GeForce RTX 3090"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        exports = sandbox_exports(server)
        assert _control(exports, "GET")["stock_out_at_create"] == [
            {"gpu_id": "NVIDIA GeForce RTX 3090", "datacenter_id": None, "times": 1}
        ]
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT],
            env={**env, **exports},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert client.stdout is not None and client.stdin is not None
        refused = json.loads(client.stdout.readline())
        assert "no longer any instances" in refused["error"]
        assert "ok" in json.loads(client.stdout.readline())
        knobs = _control(exports, "POST", {"resume_without_free_gpus": 1})
        assert knobs["resume_without_free_gpus"] == 1 and knobs["stock_out_at_create"] == []
        client.stdin.write(b"\n")
        client.stdin.flush()
        assert "not enough free GPUs" in json.loads(client.stdout.readline())["error"]
        assert "ok" in json.loads(client.stdout.readline())  # consumed again
        _, err = client.communicate(timeout=60)
        assert client.returncode == 0, err.decode()
        assert _control(exports, "DELETE")["resume_without_free_gpus"] == 0
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err.decode()
    assert b"/sandbox/faults" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--stock-out", "@EU-RO-1"], "--stock-out '@EU-RO-1': name a GPU type"),
        (["--throttle", "createPod:x"], "--throttle 'x': TIMES must be a whole number"),
        (["--http-503", "getPod:0"], "--http-503: TIMES must be at least 1"),
        (["--faults", "{nope"], "--faults: not JSON"),
        (["--faults", '{"ssh_never_ready": 1}'], "fault flags: ssh_never_ready: true or false"),
        (
            ["--faults", '{"no_such_knob": 1}'],
            "fault flags: unknown fault knob(s) ['no_such_knob']",
        ),
        (["--faults", "@/no/such/file"], "--faults @/no/such/file: cannot read it"),
    ],
)
def test_bad_fault_flags_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    done = subprocess.run(
        [runpod_deploy_bin(), "sandbox", "--no-ssh", *args],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=60,
    )
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith("runpod-deploy: ") and needle in lines[0], lines
