"""Docker-style cpu/memory/gpu values -> Kubernetes quantities, and Kubernetes quantity checks.

Docker `--cpus 0.5` means half a core: Kubernetes `500m`. Docker `-m 512m` means 512 MiB:
Kubernetes `512Mi` (in Kubernetes `512m` is 0.512 *bytes*). All arithmetic is exact (Decimal).
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation, localcontext

from pegboard.domain.errors import UsageError

__all__ = [
    "MAX_QUANTITY",
    "bytes_to_k8s_memory",
    "docker_cpus_to_k8s",
    "docker_gpus_to_count",
    "docker_memory_to_bytes",
    "docker_memory_to_k8s",
    "k8s_cpu_quantity",
    "k8s_memory_quantity",
    "parse_k8s_quantity",
]

_BINARY_UNITS = (("Ei", 1024**6), ("Pi", 1024**5), ("Ti", 1024**4), ("Gi", 1024**3),
                 ("Mi", 1024**2), ("Ki", 1024))  # fmt: skip
# docker (go-units RAMInBytes): a number, an optional space, k/m/g/t/p, optional i, optional b.
_DOCKER_MEMORY = re.compile(r"(\d+(?:\.\d+)?) ?(?:([kmgtp])i?)?b?", re.IGNORECASE)
_DOCKER_FACTORS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
# Kubernetes resource.Quantity: sign, number, then a binary/decimal suffix or an exponent.
_K8S_QUANTITY = re.compile(
    r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?"
)
_K8S_SUFFIX_FACTORS: dict[str, Decimal] = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
    "P": Decimal(10**15), "E": Decimal(10**18),
    "Ki": Decimal(1024), "Mi": Decimal(1024**2), "Gi": Decimal(1024**3),
    "Ti": Decimal(1024**4), "Pi": Decimal(1024**5), "Ei": Decimal(1024**6),
}  # fmt: skip
_GPU = re.compile(r"(?:count=)?(\d+)")
# Kubernetes stores a quantity's value as a 64-bit count (of bytes, millicores, devices); past
# it the apiserver refuses or overflows. Refusing it here also keeps every step exact: Decimal
# arithmetic runs with enough precision for any value below it (28 digits would round bytes).
MAX_QUANTITY = 2**63 - 1
_MAX_DIGITS = 40  # digits (or exponent digits) in one quantity string
_EXACT = 80  # Decimal precision for the arithmetic: exact for every value that passes the above


def _check_size(value: Decimal, raw: str, *, flag: str) -> None:
    if value > MAX_QUANTITY:
        raise UsageError(f"{flag} {raw!r}: too large (at most {MAX_QUANTITY})")


def _check_digits(raw: str, *, flag: str) -> None:
    if sum(char.isdigit() for char in raw) > _MAX_DIGITS:
        raise UsageError(f"{flag} {raw!r}: more than {_MAX_DIGITS} digits")


def _finite_decimal(raw: str, *, flag: str) -> Decimal:
    _check_digits(raw, flag=flag)
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        raise UsageError(f"{flag} {raw!r}: not a number") from None
    if not value.is_finite():
        raise UsageError(f"{flag} {raw!r}: must be a finite number")
    if value < 0:
        raise UsageError(f"{flag} {raw!r}: must not be negative")
    _check_size(value * 1000, raw, flag=flag)  # counted in millicores
    return value


def docker_cpus_to_k8s(raw: str, *, flag: str = "--cpus") -> str:
    """`2` -> `2`, `0.5` -> `500m`, `0.0001` -> `1m` (whole millicores, rounded up)."""
    cores = _finite_decimal(raw, flag=flag)
    if cores == cores.to_integral_value():
        return str(int(cores))
    with localcontext(prec=_EXACT):
        millicores = (cores * 1000).to_integral_value(rounding=ROUND_CEILING)
    return f"{int(millicores)}m"


def docker_memory_to_bytes(raw: str, *, flag: str = "--memory") -> int:
    """Docker memory size in bytes: 1024-based units, fraction of a byte truncated."""
    match = _DOCKER_MEMORY.fullmatch(raw.strip())
    if match is None:
        raise UsageError(
            f"{flag} {raw!r}: expected a docker size such as 512m, 1.5g or 1073741824 "
            "(units b, k, m, g, t, p; 1024-based)"
        )
    _check_digits(raw, flag=flag)
    number, unit = match.groups()
    with localcontext(prec=_EXACT):
        size = Decimal(number) * _DOCKER_FACTORS[(unit or "").lower()]
    _check_size(size, raw, flag=flag)
    return int(size)


def bytes_to_k8s_memory(size: int) -> str:
    """The largest exact binary unit: 536870912 -> `512Mi`; otherwise plain bytes."""
    if size < 0:
        raise ValueError("memory size must not be negative")
    for suffix, factor in _BINARY_UNITS:
        if size and size % factor == 0:
            return f"{size // factor}{suffix}"
    return str(size)


def docker_memory_to_k8s(raw: str, *, flag: str = "--memory") -> str:
    """`512m` -> `512Mi`, `1.5g` -> `1536Mi`, `0.1m` -> `104857`."""
    return bytes_to_k8s_memory(docker_memory_to_bytes(raw, flag=flag))


def parse_k8s_quantity(raw: str) -> Decimal | None:
    """The value of a Kubernetes quantity string (exact), or None when it is not one, has more
    than 40 digits or an exponent past 40 (no real quantity does)."""
    match = _K8S_QUANTITY.fullmatch(raw)
    if match is None or sum(char.isdigit() for char in raw) > _MAX_DIGITS:
        return None
    number, suffix = match.groups()
    suffix = suffix or ""
    with localcontext(prec=_EXACT):
        if suffix in _K8S_SUFFIX_FACTORS:  # before the exponent: `E` and `Ei` are suffixes
            return Decimal(number) * _K8S_SUFFIX_FACTORS[suffix]
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_DIGITS:  # 1e999999999: no quantity, and past any context
            return None
        return Decimal(number).scaleb(exponent)


def _memory_hint(raw: str) -> str:
    """A likely intended binary quantity for a docker-ish or milli-suffixed memory value."""
    match = _DOCKER_MEMORY.fullmatch(raw.strip())
    if match and match.group(2):
        number, unit = match.groups()
        return f"{number}{unit.upper()}i"
    return "e.g. 512Mi or 2Gi"


def k8s_cpu_quantity(raw: str, *, flag: str) -> str:
    """A Kubernetes cpu quantity (`500m`, `0.5`, `2`), checked and returned as given."""
    value = parse_k8s_quantity(raw.strip())
    if value is None:
        raise UsageError(f"{flag} {raw!r}: expected a Kubernetes cpu quantity such as 500m or 2")
    if value < 0:
        raise UsageError(f"{flag} {raw!r}: must not be negative")
    _check_size(value * 1000, raw, flag=flag)  # counted in millicores
    return raw.strip()


def k8s_memory_quantity(raw: str, *, flag: str) -> str:
    """A Kubernetes memory quantity (`512Mi`, `1G`, `1e9`), checked and returned as given.

    `512m` is rejected: in Kubernetes it means 0.512 bytes, never what anyone wants.
    """
    text = raw.strip()
    match = _K8S_QUANTITY.fullmatch(text)
    value = parse_k8s_quantity(text)
    if match is None or value is None:
        hint = _memory_hint(text)
        did_you_mean = f"did you mean {hint}?" if not hint.startswith("e.g.") else hint
        raise UsageError(f"{flag} {raw!r}: not a Kubernetes memory quantity; {did_you_mean}")
    if match.group(2) in ("m", "u", "n"):
        raise UsageError(
            f"{flag} {raw!r}: '{match.group(2)}' is a fraction of a byte in Kubernetes; "
            f"did you mean {match.group(1)}Mi?"
            if match.group(2) == "m"
            else f"{flag} {raw!r}: '{match.group(2)}' is a fraction of a byte in Kubernetes"
        )
    if value < 0:
        raise UsageError(f"{flag} {raw!r}: must not be negative")
    _check_size(value, raw, flag=flag)
    return text


def docker_gpus_to_count(raw: str, *, flag: str = "--gpus") -> int:
    """`N` or `count=N`; docker's `all` and `device=...` have no Kubernetes equivalent."""
    match = _GPU.fullmatch(raw.strip())
    if match is None:
        raise UsageError(
            f"{flag} {raw!r}: expected a GPU count (N or count=N); 'all' and 'device=' "
            "cannot be expressed as a Kubernetes resource request"
        )
    _check_digits(raw, flag=flag)
    count = int(match.group(1))
    _check_size(Decimal(count), raw, flag=flag)
    return count
