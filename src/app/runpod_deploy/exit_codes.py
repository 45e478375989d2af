"""Every exit code of `runpod-deploy`, in one place (docs/runpod-deploy/cli-reference.md).

Only the CLI (`cli/`) turns an outcome into a process exit code; use cases return these. No
code means two things: `cleanup --all-stopped` exited 2 on "some deletes failed" in 0.8.4,
the usage error's code; it has its own code now (4). A 0.8.4 script that tests for a non-zero
exit still sees a failure. Apart from these, `logs` exits with the remote `tail`'s status.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1  # the job, a provider call, a delete or a lookup failed; aborted at a prompt
EXIT_USAGE = 2  # a bad flag or config (UsageError/ConfigError, a click usage error)
EXIT_STOCKOUT = 3  # gpu-inventory: no configured GPU in stock in any configured datacenter
EXIT_CLEANUP_PARTIAL = 4  # cleanup --all-stopped: some of the deletes failed (0.8.4 exited 2)
EXIT_STDOUT_CLOSED = 141  # stdout's reader went away (`| head`), silent: the shell's SIGPIPE code
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM (the run still cleaned up and wrote its manifest)
