"""The fenced code blocks of README.md and docs/, as the docs test runs them.

A block is run when its fence says `sh`, `console` or `python`, unless the line right above the
opening fence is `<!-- docs-test: skip (why) -->` (docs/development.md, "Docs that run").
In a `console` block only the lines starting with `$ ` are commands; the rest is output.
A shell command's expected exit code is 0, or what its comment promises (`# ... exits 3`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parents[2]
RUN_LANGUAGES = ("sh", "console", "python")
SKIP_MARKER = re.compile(r"^\s*<!-- docs-test: skip \((?P<why>[^)]+)\) -->\s*$")
ANY_SKIP_MARKER = re.compile(r"^\s*<!--\s*docs-test")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
EXPECTED_EXIT = re.compile(r"#.*\bexits (\d+)\b")


@attrs.frozen
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    skip: str | None  # the marker's reason

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


@attrs.frozen
class Command:
    text: str  # one complete shell command (a loop, continuation lines and all)
    expected_exit: int
    block: Block


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        start, indent = index, opening["indent"]
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].strip() != "```":
            body.append(
                lines[index][len(indent) :] if lines[index].startswith(indent) else lines[index]
            )
            index += 1
        index += 1
        marker = SKIP_MARKER.match(lines[start - 1]) if start else None
        found.append(
            Block(
                page=page,
                line=start + 1,
                lang=opening["lang"],
                text="\n".join(body) + "\n",
                skip=marker["why"] if marker else None,
            )
        )
    return found


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in RUN_LANGUAGES and b.skip is None]


def shell_commands(block: Block) -> list[Command]:
    """The block's commands, each complete on its own (bash -n accepts it)."""
    if block.lang == "console":
        lines = [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
    else:
        lines = block.text.splitlines()
    commands: list[Command] = []
    pending: list[str] = []
    for line in lines:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending.append(line)
        text = "\n".join(pending)
        if text.endswith("\\") or not _complete(text):
            continue
        promised = EXPECTED_EXIT.search(text)
        commands.append(Command(text, int(promised.group(1)) if promised else 0, block))
        pending = []
    assert not pending, f"{block.where}: an incomplete shell command: {pending}"
    return commands


def _complete(text: str) -> bool:
    done = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True)
    return done.returncode == 0


@attrs.frozen
class Pasted:
    """What one bash printed for commands pasted in order: each command's output and code."""

    stdout: str
    stderr: str
    codes: dict[int, int]

    def out_of(self, index: int) -> str:
        return _section(self.stdout, index)

    def err_of(self, index: int) -> str:
        return _section(self.stderr, index)

    def check(self, commands: list[tuple[str, int, str]]) -> None:
        """Each (command, expected code, where) exited as promised, without a traceback."""
        for index, (text, expected, where) in enumerate(commands):
            assert self.codes.get(index) == expected, (
                f"{where}: {text!r} exited {self.codes.get(index)}, expected {expected}:\n"
                f"{self.out_of(index)}\n{self.err_of(index)}"
            )
            assert "Traceback" not in self.err_of(index), (where, text, self.err_of(index))


def paste_into_bash(
    commands: list[str], *, cwd: Path, env: dict[str, str], tmp_dir: Path, timeout: float
) -> Pasted:
    """The commands in one `bash`, in order, as a reader pastes them; `/tmp/` is `tmp_dir`.
    Whatever they left running in the background is killed at the end (its own session)."""
    import os
    import signal

    script = ["set +e"]
    for index, text in enumerate(commands):
        script += [
            f"echo '@@ {index}'; echo '@@ {index}' >&2",
            text.replace("/tmp/", f"{tmp_dir}/"),
            f'printf "\\n@@ rc {index} %d\\n" $?',  # on a line of its own after any output
        ]
    proc = subprocess.Popen(
        ["bash", "-c", "\n".join(script)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)  # a hang guard, not a measurement
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    codes = {int(m[0]): int(m[1]) for m in re.findall(r"^@@ rc (\d+) (\d+)$", out, flags=re.M)}
    return Pasted(out, err, codes)


def _section(text: str, index: int) -> str:
    """What the command at `index` printed (between its marker and the next)."""
    start = text.find(f"@@ {index}\n")
    end = text.find(f"@@ {index + 1}\n", start)
    return text[start : end if end != -1 else None]
