"""Every exit code of `runpod-deploy`, in one place (docs/runpod-deploy/cli-reference.md).

Only the CLI (`cli/`) turns an outcome into a process exit code; use cases return these.
`cleanup --all-stopped` keeps 0.8.4's 2 for "some deletes failed" (scripts test for it): it is
the one code a command shares with the usage error, and only that command returns it.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1  # the job, a provider call, a delete or a lookup failed; aborted at a prompt
EXIT_USAGE = 2  # a bad flag or config (pegboard.app.console maps UsageError/ConfigError here)
EXIT_STOCKOUT = 3  # gpu-inventory: no configured GPU in stock in any configured datacenter
EXIT_CLEANUP_PARTIAL = 2  # cleanup --all-stopped: some of the deletes failed (0.8.4's code)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM (the run still cleaned up and wrote its manifest)
