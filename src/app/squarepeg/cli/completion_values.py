"""What TAB offers for an option's value: the choices of `--mode` and `--pull`, the kubeconfig's
contexts for `--context`, the cluster's namespaces for `-n` (asked with a short timeout).

Completion runs in the shell's TAB: it must answer fast and never print a traceback, so a
kubeconfig or cluster that cannot answer offers nothing (seams.py says why each is safe)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import click

from pegboard.app.shared.seams import home_dir
from pegboard.app.squarepeg.seams import cluster_namespace_names, kubeconfig_context_names
from pegboard.domain.squarepeg.render import PULL_POLICIES

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    Completer = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]


def _items(values: Iterable[str]) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem  # a TAB's only, not every `run`'s import

    return [CompletionItem(value) for value in values]


def choices(values: Sequence[str]) -> Completer:
    def complete(
        ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return _items(v for v in values if v.startswith(incomplete.lower()))

    return complete


MODES = choices(("pod", "job"))
PULL_POLICY_NAMES = choices(tuple(PULL_POLICIES))


def contexts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    names = kubeconfig_context_names(os.environ, home_dir(os.environ))
    return _items(name for name in names if name.startswith(incomplete))


def namespaces(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    context = ctx.params.get("context")
    names = cluster_namespace_names(
        context if isinstance(context, str) else None, os.environ, home_dir(os.environ)
    )
    return _items(name for name in names if name.startswith(incomplete))
