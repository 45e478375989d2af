"""`<prog> completion bash|zsh|fish`: print the shell's completion script (click's own).

    eval "$(squarepeg completion bash)"        # this shell
    squarepeg completion fish > ~/.config/fish/completions/squarepeg.fish

The script calls the tool back with `_<PROG>_COMPLETE=<shell>_complete`, which click answers
from the same command tree, lazy subcommands included.
"""

from __future__ import annotations

import click

from .examples import examples
from .options import CONTEXT_SETTINGS

SHELLS = ("bash", "zsh", "fish")


def complete_var(prog: str) -> str:
    """The environment variable click's completion uses for `prog` (`_RUNPOD_DEPLOY_COMPLETE`)."""
    return f"_{prog}_COMPLETE".replace("-", "_").upper()


def completion_command(prog: str) -> click.Command:
    """The `completion` command of `prog` (add it to the root group)."""

    @examples(
        f'eval "$({prog} completion bash)"',
        f"{prog} completion bash > ~/.local/share/bash-completion/completions/{prog}",
        f'{prog} completion zsh > "${{fpath[1]}}/_{prog}"',
        f"{prog} completion fish > ~/.config/fish/completions/{prog}.fish",
    )
    @click.command("completion", context_settings=CONTEXT_SETTINGS)
    @click.argument("shell", type=click.Choice(SHELLS), metavar="|".join(SHELLS))
    @click.pass_context
    def completion(ctx: click.Context, shell: str) -> int:
        """Print the shell completion script for bash, zsh or fish."""
        from click.shell_completion import get_completion_class

        completion_class = get_completion_class(shell)
        assert completion_class is not None  # SHELLS are click's built-in ones
        root = ctx.find_root().command
        script = completion_class(root, {}, prog, complete_var(prog)).source()
        click.echo(script)
        return 0

    return completion
