"""Every value that goes into a RunPod GraphQL query passes through here first.

The `runpod` SDK builds queries by f-string interpolation (`name: "{name}"`), so a quote,
backslash or newline in a value would break the query or inject into it. Two rules:
- identifiers (pod, GPU, datacenter and volume ids, env names, ports, cloud type) must match
  what RunPod itself issues, otherwise the value is refused with one line naming it;
- free text (pod name, image, env values, mount path) is escaped as a GraphQL string body, so
  `"{escaped}"` is a well-formed literal that means exactly the original text.
Pure functions, no SDK import.
"""

from __future__ import annotations

import math
import re

from pegboard.domain.errors import Invalid

# RunPod ids: letters, digits and a few separators ("NVIDIA GeForce RTX 4090",
# "NVIDIA A100-SXM4-80GB", "EU-RO-1", "abc123xyz"); never quotes, braces, backslashes or newlines.
_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9 ._:/+()\-]{0,126}[A-Za-z0-9)])?")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_PORTS = re.compile(r"\d{1,5}/(?:tcp|http)")
CLOUD_TYPES = ("SECURE", "COMMUNITY", "ALL")


class UnsafeQueryValue(Invalid):
    """A value we refuse to place into a GraphQL query (raised before anything is sent)."""


def checked_id(value: str, what: str) -> str:
    """`value` when it looks like a RunPod id; else UnsafeQueryValue naming `what`."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise UnsafeQueryValue(
            f"{what} {value!r} is not a valid RunPod id (letters, digits, spaces and . _ : / + ( ) -)"
        )
    return value


def checked_env_name(value: str) -> str:
    if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
        raise UnsafeQueryValue(f"environment variable name {value!r} is not a valid identifier")
    return value


def checked_ports(ports: tuple[str, ...] | list[str]) -> str:
    """RunPod's "22/tcp,8888/http" form."""
    for port in ports:
        if (
            not isinstance(port, str)
            or not _PORTS.fullmatch(port)
            or int(port.split("/")[0]) > 65535
        ):
            raise UnsafeQueryValue(f"port {port!r} is not of the form N/tcp or N/http")
    return ",".join(ports)


def checked_cloud_type(value: str) -> str:
    if value not in CLOUD_TYPES:
        raise UnsafeQueryValue(f"cloud type {value!r} is not one of {', '.join(CLOUD_TYPES)}")
    return value


def checked_count(value: int, what: str, *, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise UnsafeQueryValue(f"{what} {value!r} is not a whole number >= {minimum}")
    return value


def checked_price(value: float, what: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise UnsafeQueryValue(f"{what} {value!r} is not a finite number")
    return float(value)


def graphql_text(value: str, what: str) -> str:
    """The body of a GraphQL string literal that denotes exactly `value`."""
    if not isinstance(value, str):
        raise UnsafeQueryValue(f"{what} {value!r} is not text")
    out = []
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ch in "\x7f\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)
