"""Fuzz both CLIs' config loaders and every records reader with generated hostile files.

Alias bombs, nesting, sizes, encodings and numbers. For every file: the loader either accepts
it or refuses it with one line (a PegboardError, exit 2 at the CLI; record readers skip the
record with a one-line warning), using under 2 s of CPU and under 200 MB. Most cases run
in-process against the loader functions (CPU time with time.process_time, memory with
tracemalloc's peak); a handful go through the installed console scripts as subprocesses
(CPU time and peak RSS of that child from os.wait4). CPU time, not wall time: the bound is
about the work done, and a loaded CI machine must not make it flaky.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.runpod_configs import MINIMAL_YAML
from pegboard.adapters.providers import discover_registry
from pegboard.adapters.yaml_documents import read_yaml_document
from pegboard.app.runpod_deploy.job_loading import load_job, merge_cli_vars
from pegboard.app.runpod_deploy.run_history import read_events, read_manifest
from pegboard.app.squarepeg.config_loading import load_config_layers
from pegboard.domain.errors import PegboardError
from pegboard.domain.gpujob.forensics import parse_events, parse_manifest
from pegboard.domain.input_limits import MAX_CONFIG_BYTES, InputRejected

CPU_SECONDS = 2.0
MEMORY_BYTES = 200 * 1024 * 1024
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# Writing a few MiB per example would dominate the run; the size cases are few and fixed.
FUZZ_SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip


def bounded(call: Callable[[], object], label: str) -> object:
    """`call()` twice: once timed (CPU < CPU_SECONDS), once traced (peak < MEMORY_BYTES).

    Two runs because tracemalloc slows allocation-heavy code several times over; the result
    (or exception) of the first run is returned (raised)."""
    started = time.process_time()
    try:
        result = call()
    finally:
        cpu = time.process_time() - started
        assert cpu < CPU_SECONDS, f"{label}: {cpu:.2f} s of CPU"
        tracemalloc.start()
        try:
            call()
        except Exception:  # the first run's outcome is the one returned or raised
            pass
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert peak < MEMORY_BYTES, f"{label}: {peak / 1e6:.0f} MB"
    return result


def refused_in_one_line(call: Callable[[], object], label: str) -> None:
    """`call` returns, or raises a PegboardError whose message is one line; nothing else."""
    try:
        bounded(call, label)
    except PegboardError as exc:
        message = str(exc)
        assert message and "\n" not in message, f"{label}: {message!r}"


# --- generated hostile YAML ------------------------------------------------------------------


def alias_bomb(levels: int, width: int) -> bytes:
    lines = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return ("\n".join(lines) + "\n").encode()


def nested(depth: int, style: str) -> bytes:
    if style == "flow-list":
        return b"a: " + b"[" * depth + b"1" + b"]" * depth + b"\n"
    if style == "flow-map":
        return b"a: " + b"{k: " * depth + b"1" + b"}" * depth + b"\n"
    if style == "block":
        depth = min(depth, 400)  # each level is one more indented line
        return b"".join(b"  " * i + b"k%d:\n" % i for i in range(depth)) + b"  " * depth + b"v: 1\n"
    return b"a: " + b"[" * depth  # unterminated


NUMBER_LITERALS = st.one_of(
    st.sampled_from([".inf", "-.inf", ".nan", "1e308", "1e400", "-1e400", "-0", "1_000",
                     "0x" + "f" * 300, "0b" + "1" * 3000, "1:2:3:4:5:6", "0o7777777777777777777777777"]),
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.integers(-(10**40), 10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)  # fmt: skip

SQUAREPEG_NUMERIC_KEYS = ["timeout: {}", "orphan_sweep_min_age: {}", "defaults:\n  memory: {}",
                          "defaults:\n  cpus: {}", "defaults:\n  env:\n    A: {}",
                          "profiles:\n  p:\n    timeout: {}"]  # fmt: skip
RUNPOD_NUMERIC_KEYS = [("budget", "cost_cap_usd"), ("budget", "assumed_hourly_rate_usd"),
                       ("budget", "max_runtime_minutes"), ("pod", "gpu_count"),
                       ("storage", "volume_gb"), ("telemetry", "sample_interval_sec"),
                       ("variables", "x")]  # fmt: skip


def corrupt(data: bytes, at: int, junk: bytes) -> bytes:
    at = at % (len(data) + 1)
    return data[:at] + junk + data[at:]


ENCODING_JUNK = st.sampled_from(
    [b"\xff", b"\x00", b"\x01", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x1b[31m", b"\t\r"]
)


def squarepeg_base() -> bytes:
    return b"timeout: 300\ndefaults:\n  env:\n    A: b\nprofiles:\n  p:\n    quiet: true\n"


def runpod_base() -> bytes:
    return MINIMAL_YAML.encode()


@st.composite
def hostile_yaml(draw: st.DrawFn, tool: str) -> bytes:
    base = squarepeg_base() if tool == "squarepeg" else runpod_base()
    kind = draw(st.sampled_from(["bomb", "nesting", "number", "encoding", "random", "mixed"]))
    if kind == "bomb":
        return alias_bomb(draw(st.integers(1, 12)), draw(st.integers(1, 12)))
    if kind == "nesting":
        style = draw(st.sampled_from(["flow-list", "flow-map", "block", "open"]))
        return nested(draw(st.integers(1, 20_000)), style)
    if kind == "number":
        literal = draw(NUMBER_LITERALS)
        if tool == "squarepeg":
            return draw(st.sampled_from(SQUAREPEG_NUMERIC_KEYS)).format(literal).encode() + b"\n"
        section, key = draw(st.sampled_from(RUNPOD_NUMERIC_KEYS))
        return _runpod_with(section, key, literal)
    if kind == "encoding":
        return corrupt(base, draw(st.integers(0, 10_000)), draw(ENCODING_JUNK))
    if kind == "random":
        return draw(st.binary(max_size=2000))
    # mixed: a bomb inside an otherwise valid config, under a key each tool reads
    bomb = alias_bomb(draw(st.integers(5, 10)), draw(st.integers(5, 10))).decode()
    indented = "".join("  " + line + "\n" for line in bomb.splitlines())
    key = "kubernetes:\n  spec:\n" if tool == "squarepeg" else "variables:\n"
    return base + (key + indented.replace("\n  ", "\n    ").replace("  a0", "    a0", 1)).encode()


def _runpod_with(section: str, key: str, literal: str) -> bytes:
    lines = MINIMAL_YAML.splitlines()
    if section in ("budget", "telemetry", "variables"):
        lines.append(f"{section}:\n  {key}: {literal}")
    else:
        index = lines.index(f"{section}:")
        lines.insert(index + 1, f"  {key}: {literal}")
    return ("\n".join(lines) + "\n").encode()


# --- the loaders, in-process -----------------------------------------------------------------


def load_squarepeg(path: Path, home: Path) -> object:
    return load_config_layers(
        config_paths=[str(path)],
        no_default_config=True,
        profile=None,
        environ={},
        home=home,
        read_document=read_yaml_document,
    )


def load_runpod(path: Path, home: Path) -> object:
    return load_job(
        config_path=path,
        read_document=read_yaml_document,
        providers=discover_registry(),
        cli_vars={},
        home=str(home),
        now=NOW,
        unique_suffix="beef",
    )


@FUZZ_SETTINGS
@given(data=hostile_yaml("squarepeg"))
def test_squarepeg_config_loader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(data)
    refused_in_one_line(lambda: load_squarepeg(path, tmp_path), f"squarepeg {data[:60]!r}")


@FUZZ_SETTINGS
@given(data=hostile_yaml("runpod"))
def test_runpod_deploy_config_loader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(data)
    refused_in_one_line(lambda: load_runpod(path, tmp_path), f"runpod-deploy {data[:60]!r}")


@st.composite
def template_bomb(draw: st.DrawFn) -> bytes:
    """Variables that multiply each other: `aN: "{aN-1}{aN-1}..."`, used or not."""
    levels, width = draw(st.integers(1, 14)), draw(st.integers(1, 12))
    lines = ["variables:", f'  a0: "{"x" * draw(st.integers(1, 50))}"']
    for level in range(1, levels + 1):
        lines.append(f'  a{level}: "' + ("{a" + str(level - 1) + "}") * width + '"')
    body = "echo {a" + str(levels) + "}" if draw(st.booleans()) else "echo hi"
    config = MINIMAL_YAML.replace('echo "[hello] DONE"', body + '\n    echo "[hello] DONE"')
    return (config + "\n".join(lines) + "\n").encode()


@FUZZ_SETTINGS
@given(data=template_bomb())
def test_runpod_deploy_template_bombs(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(data)
    refused_in_one_line(lambda: load_runpod(path, tmp_path), "template bomb")


@pytest.mark.parametrize("size", [MAX_CONFIG_BYTES, MAX_CONFIG_BYTES + 1, 3 * MAX_CONFIG_BYTES])
@pytest.mark.parametrize("filler", [b"k: [1, 2, 3]\n", b"# comment\n", b"x"])
def test_config_sizes(tmp_path: Path, size: int, filler: bytes) -> None:
    data = (filler * (size // len(filler) + 1))[:size]
    path = tmp_path / "config.yaml"
    path.write_bytes(data)
    refused_in_one_line(lambda: load_squarepeg(path, tmp_path), f"squarepeg {size} bytes")
    refused_in_one_line(lambda: load_runpod(path, tmp_path), f"runpod-deploy {size} bytes")


# --- vars files ------------------------------------------------------------------------------

JSON_NUMBERS = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0", "1.5e-400"]),
    st.integers(1, 6000).map(lambda n: "9" * n),
)


@st.composite
def hostile_json(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["nesting", "number", "encoding", "random", "values"]))
    if kind == "nesting":
        depth = draw(st.integers(1, 200_000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        inner = opener * depth + "1" + closer * depth
        return ('{"x": ' + inner + "}").encode()
    if kind == "number":
        return ('{"x": ' + draw(JSON_NUMBERS) + "}").encode()
    if kind == "encoding":
        return corrupt(b'{"x": "value", "y": 1}', draw(st.integers(0, 30)), draw(ENCODING_JUNK))
    if kind == "random":
        return draw(st.binary(max_size=2000))
    values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=20,
    )
    return json.dumps(draw(st.dictionaries(st.text(max_size=10), values, max_size=5))).encode()


@FUZZ_SETTINGS
@given(data=hostile_json())
def test_vars_file_reader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "vars.json"
    path.write_bytes(data)
    refused_in_one_line(lambda: merge_cli_vars([], path), f"--vars-file {data[:60]!r}")


# --- records readers -------------------------------------------------------------------------


@contextmanager
def warnings_are_one_line(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        yield
    for record in caplog.records:
        assert "\n" not in record.getMessage(), record.getMessage()


@FUZZ_SETTINGS
@given(data=hostile_json())
def test_manifest_readers(tmp_path: Path, caplog: pytest.LogCaptureFixture, data: bytes) -> None:
    path = tmp_path / "runpod_deploy_pull_manifest.json"
    path.write_bytes(data)
    try:
        bounded(lambda: parse_manifest(data), "parse_manifest")
    except InputRejected as exc:
        assert "\n" not in str(exc)
    with warnings_are_one_line(caplog):
        manifest = bounded(lambda: read_manifest(path), "read_manifest")
    assert manifest is None or isinstance(manifest, dict)


@FUZZ_SETTINGS
@given(lines=st.lists(hostile_json(), min_size=1, max_size=5), good_at=st.integers(0, 5))
def test_events_readers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, lines: list[bytes], good_at: int
) -> None:
    good = b'{"event": "kept", "ts_utc": "2026-01-01T00:00:00Z"}'
    lines = [line.replace(b"\n", b" ") for line in lines]
    lines.insert(good_at % (len(lines) + 1), good)
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    events, warnings = bounded(lambda: parse_events(data), "parse_events")  # type: ignore[misc]
    assert {"event": "kept", "ts_utc": "2026-01-01T00:00:00Z"} in events  # one bad line hides none
    assert all("\n" not in warning for warning in warnings)
    with warnings_are_one_line(caplog):
        assert bounded(lambda: read_events(path), "read_events") == events


def test_record_readers_on_devices_and_huge_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    big = tmp_path / "events.jsonl"
    with big.open("wb") as handle:  # sparse: 65 MiB of NULs, no disk used
        handle.truncate(65 * 1024 * 1024)
    for path in (Path("/dev/zero"), big):
        with warnings_are_one_line(caplog):
            assert bounded(lambda: read_events(path), str(path)) == []  # noqa: B023
            assert bounded(lambda: read_manifest(path), str(path)) is None  # noqa: B023


# --- a handful through the real console scripts ----------------------------------------------


def console_script(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"the {name} console script is not installed next to this interpreter")
    return found


# Runs the command as its own child and reports that child's rusage: measured from the test
# process itself, a forked child's peak RSS would include the pytest image it was forked from.
_MEASURE = """
import json, resource, subprocess, sys
code = subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as handle:
    json.dump({"code": code, "cpu": usage.ru_utime + usage.ru_stime, "rss_kb": usage.ru_maxrss},
              handle)
"""


def run_bounded(argv: list[str], tmp_path: Path) -> tuple[int, str, str]:
    """Run a console script; assert its CPU time and peak RSS."""
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "KUBECONFIG": str(tmp_path / "none")}
    report = tmp_path / "rusage.json"
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(report), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    usage = json.loads(report.read_text())
    assert usage["cpu"] < CPU_SECONDS, f"{argv}: {usage['cpu']:.2f} s of CPU"
    assert usage["rss_kb"] * 1024 < MEMORY_BYTES, f"{argv}: {usage['rss_kb']} KB peak RSS"
    assert done.returncode == 0, done.stderr
    return int(usage["code"]), done.stdout, done.stderr


def hostile_files(root: Path) -> dict[str, Path]:
    files = {
        "alias-bomb": alias_bomb(9, 9),
        "nesting": nested(100_000, "flow-list"),
        "huge-int": b"timeout: " + b"9" * 5000 + b"\n",
        "not-utf8": b"timeout: 300\nname: \xff\n",
        "template-bomb": b"",
    }
    paths = {}
    for name, data in files.items():
        paths[name] = root / f"{name}.yaml"
        paths[name].write_bytes(data)
    paths["template-bomb"].write_bytes(
        (MINIMAL_YAML + "variables:\n  a0: xxxxxxxxxx\n" + "".join(
            f'  a{i}: "' + ("{a" + str(i - 1) + "}") * 10 + '"\n' for i in range(1, 11)
        )).encode()
    )  # fmt: skip
    paths["dev-zero"] = Path("/dev/zero")
    return paths


@pytest.mark.parametrize(
    "name", ["alias-bomb", "nesting", "huge-int", "not-utf8", "dev-zero", "template-bomb"]
)
def test_console_scripts_refuse_hostile_configs(tmp_path: Path, name: str) -> None:
    path = hostile_files(tmp_path)[name]
    squarepeg, runpod_deploy = console_script("squarepeg"), console_script("runpod-deploy")
    runs = [[runpod_deploy, "validate", "--config", str(path)]]
    if name != "template-bomb":  # a runpod-deploy-only feature
        runs.append([squarepeg, "config", "show", "--no-default-config", "--config", str(path)])
    for argv in runs:
        code, out, err = run_bounded(argv, tmp_path)
        assert (code, out) == (2, ""), (argv, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (argv, err)


def test_console_scripts_skip_hostile_records(tmp_path: Path) -> None:
    runs_root = tmp_path / "artifacts" / "runpod"
    good, bad = runs_root / "20260101T000000Z", runs_root / "20260101T000001Z"
    for run_dir in (good, bad):
        run_dir.mkdir(parents=True)
    (good / "runpod_deploy_pull_manifest.json").write_text('{"job_name": "j", "pod_id": "p"}')
    (good / "events.jsonl").write_text('{"event": "kept"}\n')
    deep = b"[" * 100_000 + b"]" * 100_000
    (bad / "runpod_deploy_pull_manifest.json").write_bytes(b'{"a": ' + deep + b"}")
    (bad / "events.jsonl").write_bytes(deep + b"\n\xff\n" + b'{"event": "also kept"}\n')
    runpod_deploy = console_script("runpod-deploy")
    cases = [
        (["ls-runs", "--project-root", str(tmp_path)], 0),
        (["manifest-summary", "--root", str(tmp_path)], 0),
        (["compare-runs", str(good), str(bad)], 2),  # documented: 2, a record that is bad input
        (["events", str(bad)], 0),
        (["events-query", "--root", str(runs_root)], 0),
        (["events-query", "--root", str(runs_root), "--since", "99999999999d"], 2),
    ]
    for argv, expected in cases:
        code, _, err = run_bounded([runpod_deploy, *argv], tmp_path)
        assert code == expected, (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        # One line per bad record (two bad events lines, one bad manifest), nothing else.
        assert len(err.splitlines()) <= 3, (argv, err)
