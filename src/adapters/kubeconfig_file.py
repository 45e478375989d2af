"""Kubeconfig files read with yaml alone: which files, which context, which namespace.

Light on purpose (no `kubernetes` import), so `--dry-run` can resolve the namespace in a few
milliseconds. Merging follows kubectl: files from `$KUBECONFIG` (a path list) or
`~/.kube/config`, missing files skipped, and the first file to set a value wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pegboard.adapters.bounded_files import read_bounded_text
from pegboard.domain.input_limits import MAX_RECORD_BYTES


def kubeconfig_paths(env: Mapping[str, str], home: Path) -> list[Path]:
    """The kubeconfig files kubectl would read, in order (existing or not)."""
    raw = env.get("KUBECONFIG", "")
    if raw:
        return [_expand(part, home) for part in raw.split(os.pathsep) if part]
    return [home / ".kube" / "config"]


def _expand(path: str, home: Path) -> Path:
    if path == "~" or path.startswith("~/"):
        return home / path[2:]
    return Path(path)


def load_documents(paths: list[Path]) -> list[dict[str, Any]]:
    """The parsed existing files; ValueError naming the file (and the line, for bad YAML) for a
    file that is not a YAML mapping."""
    documents = []
    for path in paths:
        if not path.is_file():
            continue
        import yaml  # ~10 ms: paid only when there is a kubeconfig to read

        # Bounded like every file pegboard reads; kubeconfigs with embedded certificates for
        # many clusters run to megabytes, so the records' limit rather than the configs'.
        text = read_bounded_text(path, limit=MAX_RECORD_BYTES)
        try:
            document = yaml.safe_load(text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            problem = exc.problem or exc.context or "not valid YAML"
            raise ValueError(f"{where}: {problem}") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: {' '.join(str(exc).split())}") from None
        if not isinstance(document, dict):
            raise ValueError(f"{path}: not a kubeconfig mapping")
        documents.append(document)
    return documents


def context_names(documents: list[dict[str, Any]]) -> list[str]:
    """Every context name the files define, first file first, without repeats."""
    names: dict[str, None] = {}
    for document in documents:
        for entry in document.get("contexts") or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                names.setdefault(entry["name"])
    return list(names)


def current_context(documents: list[dict[str, Any]]) -> str | None:
    """The first non-empty `current-context` (kubectl's merge rule)."""
    for document in documents:
        name = document.get("current-context")
        if isinstance(name, str) and name:
            return name
    return None


def find_context(documents: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The `context:` body of the first context entry called `name`."""
    for document in documents:
        for entry in document.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                body = entry.get("context")
                return body if isinstance(body, dict) else {}
    return None


def read_kubeconfig_namespace(
    context: str | None, env: Mapping[str, str], home: str | Path
) -> tuple[str, str | None] | None:
    """(context name, its namespace or None) from the kubeconfig; None on any problem at all."""
    try:
        documents = load_documents(kubeconfig_paths(env, Path(home)))
        name = context or current_context(documents)
        if not name:
            return None
        body = find_context(documents, name)
        if body is None:
            return None
        namespace = body.get("namespace")
        return name, namespace if isinstance(namespace, str) and namespace else None
    except Exception:  # degrade gracefully: --dry-run must work without a usable kubeconfig
        return None
