"""Shell snippets every RemoteShell adapter runs on the pod: detach a script and probe it.

Shared so that the local shell, the SSH shell and their contract suite agree byte for byte.
The detached wrapper records the script's exit status atomically (write, then rename), and a
launcher returns at once with the wrapper's pid (also written atomically: a reader never sees a
half-written pid file). setsid gives the job its own process group,
so hanging up the connection (or Ctrl-C on this side) does not kill it; stopping the pod does.
"""

from __future__ import annotations

import shlex

from pegboard.domain.ports.remote_shell import DetachedStatus

_RUNNING = "RUNNING"
_GONE = "GONE"


def detach_command(
    *,
    script_path: str,
    log_path: str,
    status_path: str,
    pid_path: str,
    record_dir: str | None = None,
) -> str:
    """A command that starts `bash script_path` detached and prints its pid on stdout; with
    `record_dir`, an empty file named after the pid is made there first (what stopping the pod
    kills), so the job is on record before anyone learns its pid.

    The log is emptied once, by the launcher (`: >`, so it exists before the pid is printed);
    the job appends to it (O_APPEND): a log truncated while the job runs (logrotate's
    copytruncate, a `: > job.log`) then goes on from its new end, where a second truncating
    open would have the job write at its old offset, behind a hole of NUL bytes."""
    q = shlex.quote
    wrapper = (
        'bash "$1" >> "$2" 2>&1 < /dev/null; rc=$?; '
        'printf "%s\\n" "$rc" > "$3.tmp" && mv -f "$3.tmp" "$3"'
    )
    # Each external command costs the host a fork and an exec (a few ms, more under load):
    # mkdir and rm run only when there is something to make or remove (`[` is a builtin).
    parents = dict.fromkeys(_parent(p) for p in (log_path, status_path, pid_path))
    mkdir = "".join(f"{_mkdir_p(parent)} && " for parent in parents if parent)
    record = f'{_mkdir_p(record_dir)} && : > {q(record_dir)}/"$pid" && ' if record_dir else ""
    stale = (status_path, status_path + ".tmp")
    there = " || ".join(f"[ -e {q(p)} ] || [ -L {q(p)} ]" for p in stale)
    remove = f"if {there}; then rm -f {' '.join(q(p) for p in stale)}; fi"
    return (
        f"{mkdir}{remove} && : > {q(log_path)} && "
        f"{{ setsid bash -c {q(wrapper)} _ {q(script_path)} {q(log_path)} {q(status_path)} "
        f"> /dev/null 2>&1 < /dev/null & }} && pid=$! && {_GROUP_SETTLED}"
        f'printf "%s\\n" "$pid" > {q(pid_path)}.tmp && mv -f {q(pid_path)}.tmp {q(pid_path)} && '
        f"{record}"
        f'printf "%s\\n" "$pid"'
    )


# The job's process group exists only once the child has called setsid, a moment after `$!` is
# known: a kill of the group (`kill_groups`, a stop, Ctrl-C) before then finds no group, takes
# the job for gone, and the job starts anyway. So its pid is told only once the group is there,
# or the child is gone (no setsid): a bounded spin of builtins, at most a few hundred turns while
# the child execs setsid. `kill -0 "-PID"`, not `kill -0 -- -PID`: dash's kill has no `--`.
_GROUP_SETTLED = (
    '{ i=0; while [ $i -lt 20000 ] && ! kill -0 "-$pid" 2>/dev/null && kill -0 "$pid" 2>/dev/null; '
    "do i=$((i+1)); done; } && "
)


def detach_and_follow_command(
    *, script_path: str, log_path: str, status_path: str, pid_path: str, record_dir: str | None
) -> str:
    """detach_command, then the log followed from its first byte, in the same shell, until the
    job ends. The job is this shell's child, so `wait` sees it end (no polling), and the tail
    is stopped then: a launch and its follow share one channel, and the tail needs no kill of
    its own (a tail whose reader went away dies at its next write). Its last stderr line is
    what a status probe would print at that moment (LAUNCH_EXIT_PREFIX + the recorded exit
    status, or nothing when none was recorded): parse_launch_exit reads it, so the job's end
    reaches the caller on this channel without a probe of its own."""
    q = shlex.quote
    launch = detach_command(
        script_path=script_path,
        log_path=log_path,
        status_path=status_path,
        pid_path=pid_path,
        record_dir=record_dir,
    )
    # detach_command leaves the job's pid in $pid
    follow = (
        f'tail -c +1 -f -- {q(log_path)} & tail=$!; wait "$pid"; kill "$tail" 2>/dev/null; '
        f'printf "\\n{LAUNCH_EXIT_PREFIX}%s\\n" "$(cat {q(status_path)} 2>/dev/null)" >&2; '
        "exit 0"
    )
    return f"{launch} && {{ {follow}; }}"


LAUNCH_EXIT_PREFIX = "pegboard-job-ended:"


def parse_launch_exit(stderr: bytes) -> DetachedStatus | None:
    """The job's end as detach_and_follow_command's last stderr line says it; None when that
    line is not there (the launch shell did not get to the end: ask the host instead)."""
    text = stderr.decode(errors="replace").rstrip("\n")
    line = text.rpartition("\n")[2]
    if not line.startswith(LAUNCH_EXIT_PREFIX):
        return None
    status = line[len(LAUNCH_EXIT_PREFIX) :]
    return parse_detached_status(status) if status.strip() else DetachedStatus(running=False)


def detached_status_command(*, pid_path: str, status_path: str) -> str:
    """A command printing the exit status, RUNNING, or GONE (status re-checked after kill -0)."""
    s, p = shlex.quote(status_path), shlex.quote(pid_path)
    # A zombie (dead, not yet reaped by a lazy init) counts as dead: read its /proc state.
    alive = (
        'alive() { if [ -d /proc/self ]; then st=$(sed "s/^.*) //" "/proc/$1/stat" 2>/dev/null '
        '| cut -c1); [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]; '
        'else kill -0 "$1" 2>/dev/null; fi; }; '
    )
    return (
        f"{alive}if [ -s {s} ]; then cat {s}; "
        f'elif [ -s {p} ] && alive "$(cat {p})"; then echo {_RUNNING}; '
        f"elif [ -s {s} ]; then cat {s}; else echo {_GONE}; fi"
    )


def kill_groups_function(*, grace: float) -> str:
    """Shell functions defining `kill_groups PGID...`: SIGTERM each process group, SIGKILL what
    is left after `grace` seconds. A zombie does not count as alive: a detached job's leader is
    reparented to the host's init, which may never reap it (containers). A group no signal
    reaches (`kill -0` fails: the usual case, the job already ended) is dead without reading
    every process's /proc/N/stat. POSIX sh: `kill -SIG "-PGID"` (dash's kill takes no `--`: it
    would fail on every group, hidden by the 2>/dev/null, and kill nothing)."""
    steps = max(1, round(grace / 0.05))
    return (
        'group_alive() { g=$1; kill -0 "-$g" 2>/dev/null || return 1; '
        "[ -d /proc/self ] || return 0; for s in /proc/[0-9]*/stat; do "
        'read -r line < "$s" 2>/dev/null || continue; set -- ${line##*) }; '
        '[ "$1" != Z ] && [ "$3" = "$g" ] && return 0; '
        "done; return 1; }; "
        'kill_groups() { [ $# -eq 0 ] && return 0; for g in "$@"; do kill -TERM "-$g" '
        "2>/dev/null; done; i=0; while [ $i -lt "
        f"{steps}"
        ' ]; do alive=; for g in "$@"; do group_alive "$g" && alive=1; done; '
        '[ -z "$alive" ] && return 0; sleep 0.05; i=$((i+1)); done; '
        'for g in "$@"; do kill -KILL "-$g" 2>/dev/null; done; return 0; }; '
    )


def parse_detached_status(output: str) -> DetachedStatus:
    """Read what detached_status_command printed."""
    text = output.strip()
    if text == _RUNNING:
        return DetachedStatus(running=True)
    if text == _GONE or not text:
        return DetachedStatus(running=False)
    try:
        return DetachedStatus(running=False, exit_code=int(text.splitlines()[0]))
    except ValueError:
        return DetachedStatus(running=False)


def parse_pid(output: str) -> int:
    """The pid detach_command printed; ValueError when there is none."""
    return int(output.strip().splitlines()[-1])


def _mkdir_p(directory: str) -> str:
    """`mkdir -p directory`, run only when it is not a directory yet."""
    return f"if [ ! -d {shlex.quote(directory)} ]; then mkdir -p {shlex.quote(directory)}; fi"


def _parent(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head
