"""The click pieces both CLIs share, so `squarepeg` and `runpod-deploy` look and behave alike.

- `options.py`    `-h/--help` everywhere (CONTEXT_SETTINGS), `-o/--output table|json|yaml` with
                  `--json` as its alias, `-q/--quiet` and `-v/--verbose`.
- `version.py`    `--version`: `<prog> <version> (pegboard, compatible with <tool> <version>)`.
- `examples.py`   the Examples section every help page ends with.
- `completion.py` the `completion bash|zsh|fish` command.

Only this package (and the apps' own cli packages) import click; the output rendering itself
is pegboard.app.shared.output (no click), the verbose call lines pegboard.app.shared.call_trace.
"""
