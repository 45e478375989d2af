"""`runpod-deploy completion bash|zsh|fish`: the shared completion command (app/shared/cli)."""

from __future__ import annotations

from pegboard.app.shared.cli.completion import completion_command

completion = completion_command("runpod-deploy")
