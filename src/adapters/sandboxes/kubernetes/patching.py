"""PATCH bodies: JSON merge patch (RFC 7386, also used for strategic merge patch, with lists of
named items merged by name) and JSON patch (RFC 6902)."""

from __future__ import annotations

from typing import Any

from pegboard.adapters.kube_semantics.status import StatusError

from .store import JsonObject, deep_copy


def merge_patch(target: Any, patch: Any, *, strategic: bool) -> Any:
    if not isinstance(patch, dict):
        if strategic and isinstance(patch, list) and isinstance(target, list):
            return _merge_named_lists(target, patch)
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):  # strategic-merge directives ($patch, $retainKeys...) are ignored
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value, strategic=strategic)
    return result


def _merge_named_lists(target: list[Any], patch: list[Any]) -> list[Any]:
    """Strategic merge for lists of objects keyed by `name` (containers, env, ports...)."""
    if not all(isinstance(item, dict) and "name" in item for item in (*target, *patch)):
        return patch
    merged = [dict(item) for item in target]
    by_name = {item["name"]: index for index, item in enumerate(merged)}
    for item in patch:
        if item["name"] in by_name:
            index = by_name[item["name"]]
            merged[index] = merge_patch(merged[index], item, strategic=True)
        else:
            merged.append(item)
    return merged


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise StatusError(422, f"invalid JSON patch path {path!r}", reason="Invalid")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def json_patch(target: JsonObject, operations: list[Any]) -> JsonObject:
    doc = deep_copy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise StatusError(400, "a JSON patch operation needs 'op' and 'path'")
        *parents, last = _pointer(op["path"])
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        kind = op["op"]
        try:
            if kind in ("add", "replace"):
                if isinstance(node, list):
                    if last == "-":
                        node.append(op.get("value"))
                    elif kind == "add":
                        node.insert(int(last), op.get("value"))
                    else:
                        node[int(last)] = op.get("value")
                else:
                    node[last] = op.get("value")
            elif kind == "remove":
                if isinstance(node, list):
                    node.pop(int(last))
                else:
                    del node[last]
            elif kind == "test":
                current = node[int(last)] if isinstance(node, list) else node.get(last)
                if current != op.get("value"):
                    raise StatusError(
                        422, f"JSON patch test failed at {op['path']}", reason="Invalid"
                    )
            else:
                raise StatusError(400, f"unsupported JSON patch op {kind!r}")
        except (KeyError, IndexError, ValueError) as exc:
            raise StatusError(
                422, f"JSON patch failed at {op['path']}: {exc}", reason="Invalid"
            ) from None
    return doc


def apply_patch(current: JsonObject, body: Any, content_type: str) -> JsonObject:
    if content_type == "application/json-patch+json" or isinstance(body, list):
        if not isinstance(body, list):
            raise StatusError(400, "a JSON patch body must be a list of operations")
        return json_patch(current, body)
    if content_type == "application/apply-patch+yaml":
        raise StatusError(
            415, "server-side apply is not supported by the sandbox", reason="UnsupportedMediaType"
        )
    if not isinstance(body, dict):
        raise StatusError(400, "a merge patch body must be a JSON object")
    strategic = content_type == "application/strategic-merge-patch+json"
    return deep_copy(merge_patch(current, body, strategic=strategic))
