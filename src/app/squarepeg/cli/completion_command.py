"""`squarepeg completion bash|zsh|fish`: the shell completion script (the shared command)."""

from __future__ import annotations

from pegboard.app.shared.cli.completion import completion_command

completion = completion_command("squarepeg")
