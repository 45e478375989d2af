"""Every exit code of `squarepeg`, in one place (docs/squarepeg/cli-reference.md, "Exit codes").

Constants only, no imports: the CLI reads USAGE_ERROR and INTERRUPTED on every start, `--help`
included, without importing attrs. Which code a finished run gets is exit_policy.py; only the
CLI (app/squarepeg/cli) turns an error into a process exit code. Apart from these, squarepeg
exits with the container's own code (0-255).
"""

from __future__ import annotations

USAGE_ERROR = 2  # a bad flag or config (UsageError, ConfigError, a click usage error)
# The container's output did not all reach stdout (the log could not be read to its confirmed end,
# or stdout refused a write): never the container's code, so a script can tell. 122 sits below
# docker's own 125-127 and clear of what commands commonly mean: 1-2 (failures, usage), 64-78
# (sysexits), 123 (xargs), 124 (timeout), 126/127 (shell), 128+N (signals), 255 (ssh, overflow).
OUTPUT_INCOMPLETE = 122
# docker run's "the runner itself failed": RunnerError, PortError and any other PegboardError;
# a container that never terminated or terminated without an exit code; `clean` when a list or
# delete failed.
RUNNER_FAILED = 125
INTERRUPTED = 130  # Ctrl-C or SIGTERM (128 + SIGINT); the run still cleaned up
OOM_KILLED = 137  # 128 + SIGKILL, what a shell reports for an OOM-killed process
# stdout's reader went away (`| head`): what a shell reports for a tool killed by SIGPIPE.
STDOUT_CLOSED = 141
MAX_EXIT_CODE = 255  # an exit status is one byte; a container's code beyond it is clamped here
