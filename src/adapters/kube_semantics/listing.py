"""LIST options as the apiserver reads them: resourceVersion, resourceVersionMatch, limit, continue.

Which store answers (Kubernetes 1.31, ConsistentListFromCache on): a LIST is served from the
watch cache, whole, unless it carries a `continue` token, or a `limit` with a resourceVersion
other than "0", or a resourceVersionMatch other than NotOlderThan; then it reads etcd in key
order (`<namespace>/<name>`), one page of at most `limit` matching objects at a time. So
`resourceVersion=0` ignores `limit` (the cache does not paginate) and never returns a token.

A page's `continue` token is the apiserver's: base64 of `{"v":"meta.k8s.io/v1","rv":RV,
"start":"<last key>\\u0000"}`. `remainingItemCount` is set only when the LIST has no selector
(etcd counts keys, not matches). A token older than the compacted history is 410 Expired.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .status import Cause, StatusError, invalid

MATCH_EXACT = "Exact"
MATCH_NOT_OLDER_THAN = "NotOlderThan"
_CONTINUE_VERSION = "meta.k8s.io/v1"


@dataclass(frozen=True)
class ListOptions:
    """The paging and consistency options of one LIST request, checked."""

    resource_version: str | None = None
    resource_version_match: str | None = None
    limit: int = 0  # 0: no limit
    continue_rv: int | None = None  # from the continue token
    continue_start: str | None = None  # first key the next page may return

    @property
    def from_cache(self) -> bool:
        """True when the watch cache answers: whole, at the newest resourceVersion."""
        if self.continue_start is not None:
            return False
        if self.limit > 0 and self.resource_version != "0":
            return False
        return self.resource_version_match in (None, "", MATCH_NOT_OLDER_THAN)


def _forbidden(field: str, message: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {message}", "field": field}


def parse_list_options(
    *,
    limit: str | None,
    continue_token: str | None,
    resource_version: str | None,
    resource_version_match: str | None,
) -> ListOptions:
    """Check LIST options like ValidateListOptions and the etcd3 store do; StatusError otherwise."""
    causes: list[Cause] = []
    match = resource_version_match or None
    if match is not None:
        if match not in (MATCH_EXACT, MATCH_NOT_OLDER_THAN):
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "message": f'Unsupported value: "{match}": supported values: '
                    f'"{MATCH_EXACT}", "{MATCH_NOT_OLDER_THAN}", ""',
                    "field": "resourceVersionMatch",
                }
            )
        elif continue_token:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        elif not resource_version:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        elif match == MATCH_EXACT and resource_version == "0":
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if causes:
        raise invalid("ListOptions", "", causes, group="meta.k8s.io")
    if resource_version not in (None, "", "0"):
        try:
            if int(resource_version) < 0:
                raise ValueError
        except ValueError:
            raise StatusError(
                400, f"invalid resource version: strconv.ParseUint: parsing {resource_version!r}"
            ) from None
    try:
        size = int(limit) if limit else 0
    except ValueError:
        raise StatusError(400, f"limit: invalid value {limit!r}: must be an integer") from None
    options = ListOptions(resource_version or None, match, max(size, 0))
    if not continue_token:
        return options
    if resource_version not in (None, "", "0"):
        raise StatusError(400, "specifying resource version is not allowed when using continue")
    rv, start = decode_continue(continue_token)
    return ListOptions(resource_version or None, match, max(size, 0), rv, start)


def encode_continue(resource_version: int, last_key: str) -> str:
    token = {"v": _CONTINUE_VERSION, "rv": resource_version, "start": last_key + "\x00"}
    raw = json.dumps(token, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    """The (resourceVersion, start key) of a continue token; 400 BadRequest when it is not one."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("v") != _CONTINUE_VERSION:
            raise ValueError("continue key is not valid: incorrect encoded start resourceVersion")
        rv, start = data.get("rv"), data.get("start")
        if not isinstance(rv, int) or rv <= 0 or not isinstance(start, str) or not start:
            raise ValueError("continue key is not valid: incorrect encoded start resourceVersion")
        if start.startswith("/") or ".." in start.split("/"):
            raise ValueError("continue key is not valid: key cannot contain '..'")
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise StatusError(400, f"invalid continue token: {exc}") from None
    return rv, start


def expired_continue() -> StatusError:
    return StatusError(
        410,
        "The provided continue parameter is too old to display a consistent list result. You can "
        "start a new list without the continue parameter.",
        reason="Expired",
    )


@dataclass(frozen=True)
class Page:
    """One answer to a LIST: its items, the token for the next page, and the work it took."""

    items: list[Mapping[str, Any]]
    continue_token: str
    remaining_item_count: int | None
    scanned: int


def list_page(
    keyed: Iterable[tuple[str, Mapping[str, Any]]],
    predicate: Callable[[Mapping[str, Any]], bool],
    options: ListOptions,
    *,
    resource_version: int,
    has_selector: bool,
) -> Page:
    """Serve a LIST from (key, object) pairs: whole from the cache, or one page in key order."""
    if options.from_cache:
        pairs = list(keyed)
        return Page([obj for _, obj in pairs if predicate(obj)], "", None, len(pairs))
    ordered = sorted(keyed, key=lambda pair: pair[0])
    if options.continue_start is not None:
        ordered = [pair for pair in ordered if pair[0] >= options.continue_start]
    items: list[Mapping[str, Any]] = []
    scanned = 0
    last_key = ""
    for key, obj in ordered:
        if options.limit and len(items) >= options.limit:
            break
        scanned += 1
        last_key = key
        if predicate(obj):
            items.append(obj)
    left = len(ordered) - scanned
    if left <= 0:
        return Page(items, "", None, scanned)
    page_rv = options.continue_rv or resource_version
    remaining = None if has_selector else left
    return Page(items, encode_continue(page_rv, last_key), remaining, scanned)
