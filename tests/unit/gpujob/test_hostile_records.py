"""Records under the runs root that are broken or hostile (issue 7, items 12, 15): each reader
skips or reports the bad record in one line and keeps the rest, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pegboard.app.runpod_deploy.cli import main
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.forensics import parse_events, parse_manifest, parse_since
from pegboard.domain.input_limits import InputRejected

GOOD = {"event": "ok", "ts_utc": "2026-01-01T00:00:00Z"}
MANIFEST = {"job_name": "j", "pod_id": "p1", "failed": False, "wall_time_sec": 5}
DEEP_JSON = "[" * 100_000 + "]" * 100_000


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return int(caught.value.code or 0), out, err


@pytest.mark.parametrize(
    ("bad", "warning"),
    [
        (b'{"event": "x", "v": "\xff"}', "not valid UTF-8"),
        (b'{"event": "x", "v": "\x00"}', "malformed JSON"),
        (b'{"e": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested more than 64"),
        (b'{"event": "x", "n": ' + b"9" * 5000 + b"}", "more than 64 digits"),
        (b'{"event": "x", "n": NaN}', "NaN is not a JSON number"),
        (b"[1]", "not a JSON object"),
        (b"x" * (1024 * 1024 + 1), "longer than"),
    ],
)
def test_one_bad_events_line_is_skipped_and_the_others_kept(bad: bytes, warning: str) -> None:
    good = json.dumps(GOOD).encode()
    events, warnings = parse_events(good + b"\n" + bad + b"\n" + good + b"\n")
    assert events == [GOOD, GOOD]
    [only] = warnings
    assert only.startswith("line 2: ") and warning in only


def test_a_line_separator_inside_a_json_string_does_not_split_the_line() -> None:
    event = {"event": "x", "text": "a\u2028b\x1cc"}
    events, warnings = parse_events(json.dumps(event, ensure_ascii=False).encode() + b"\n")
    assert (events, warnings) == ([event], [])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (DEEP_JSON.encode(), "nested more than 64"),
        (b'{"a": ' + b"1" * 5000 + b"}", "more than 64 digits"),
        (b'{"a": \xff}', "not valid UTF-8"),
        (b"[]", "a JSON list, not an object"),
        (b"{", "malformed JSON"),
    ],
)
def test_parse_manifest_refuses_in_one_line(data: bytes, message: str) -> None:
    with pytest.raises(InputRejected, match=message):
        parse_manifest(data)


@pytest.mark.parametrize("text", ["99999999999d", "1" + "0" * 5000 + "s", "36700d"])
def test_since_past_a_century_is_a_usage_error_not_an_overflow(text: str) -> None:
    with pytest.raises(UsageError, match="--since must be at most 100 years"):
        parse_since(text)


def test_events_query_since_huge_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "events-query", "--root", str(tmp_path), "--since", "99999999999d")
    assert (code, out) == (2, "")
    assert err.strip().count("\n") == 0 and "--since must be at most 100 years" in err


def write_runs(root: Path) -> tuple[Path, Path]:
    runs = root / "artifacts" / "runpod"
    good, bad = runs / "20260101T000000Z", runs / "20260101T000001Z"
    for run_dir in (good, bad):
        run_dir.mkdir(parents=True)
    (good / "runpod_deploy_pull_manifest.json").write_text(json.dumps(MANIFEST))
    (good / "events.jsonl").write_text(json.dumps(GOOD) + "\n")
    (bad / "runpod_deploy_pull_manifest.json").write_text('{"a": ' + DEEP_JSON + "}")
    (bad / "events.jsonl").write_bytes(b"\xff\n" + DEEP_JSON.encode() + b"\n")
    return good, bad


def test_records_commands_skip_a_deeply_nested_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = write_runs(tmp_path)
    manifest = bad / "runpod_deploy_pull_manifest.json"

    code, out, err = cli(capsys, "ls-runs", "--project-root", str(tmp_path))
    assert code == 0 and good.name in out and bad.name not in out
    assert "Traceback" not in err and "nested more than 64" in err

    code, out, err = cli(capsys, "manifest-summary", "--root", str(tmp_path))
    assert code == 0 and "Traceback" not in err and "nested more than 64" in err

    code, out, err = cli(capsys, "manifest-summary", str(manifest))
    assert code == 2 and "Traceback" not in err

    code, out, err = cli(capsys, "compare-runs", str(good), str(bad))
    assert code == 2 and "Traceback" not in err and "nested more than 64" in err

    code, out, err = cli(capsys, "events", str(bad))
    assert code == 0 and "Traceback" not in err
    assert "line 1: not valid UTF-8" in err and "line 2: nested more than 64" in err

    code, out, err = cli(capsys, "events-query", "--root", str(tmp_path))
    assert code == 0 and out.count("\n") == 1 and "ok" in out


def test_events_from_dev_zero_are_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "events", "/dev/zero")
    assert code == 0 and out == ""
    assert "larger than 64 MiB" in err
