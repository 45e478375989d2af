"""resource.Quantity arithmetic for admission: exact values and the apiserver's canonical form
(staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go, Quantity.String and
CanonicalizeBytes): `1000m` prints as `1`, `1536Mi` stays `1536Mi`, `1024` as `1024`."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pegboard.domain.squarepeg.quantities import parse_k8s_quantity

_DECIMAL_SUFFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""),
                     (-3, "m"), (-6, "u"), (-9, "n"))  # fmt: skip
_BINARY_SUFFIXES = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


class Amount:
    """A quantity's exact value and whether it prints in binary (Ki, Mi, ...) units."""

    __slots__ = ("binary", "value")

    def __init__(self, value: Decimal, *, binary: bool = False) -> None:
        self.value = value
        self.binary = binary

    @classmethod
    def parse(cls, raw: Any) -> Amount:
        text = str(raw)
        value = parse_k8s_quantity(text)
        return cls(value if value is not None else Decimal(0), binary=text.endswith("i"))

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.value + other.value, binary=self.binary)  # Quantity.Add keeps its format

    def __str__(self) -> str:
        return canonical(self.value, binary=self.binary)


def canonical(value: Decimal, *, binary: bool = False) -> str:
    if value == 0:
        return "0"
    if binary and abs(value) >= 1024 and value == value.to_integral_value():
        whole = int(value)
        for shift, suffix in _BINARY_SUFFIXES:
            if whole % (1 << shift) == 0:
                return f"{whole >> shift}{suffix}"
    for exponent, suffix in _DECIMAL_SUFFIXES:
        scaled = value.scaleb(-exponent)
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return f"{int(value.scaleb(9).to_integral_value(rounding='ROUND_CEILING'))}n"


def amounts(resources: Any) -> dict[str, Amount]:
    if not isinstance(resources, Mapping):
        return {}
    return {str(key): Amount.parse(value) for key, value in resources.items()}


def canonical_list(resources: Any) -> dict[str, str]:
    """A ResourceList as the apiserver stores it: every quantity in canonical form."""
    return {key: str(amount) for key, amount in amounts(resources).items()}


def pretty(resources: Mapping[str, Amount]) -> str:
    """quota.prettyPrint: `k=v` sorted by key, joined by commas."""
    return ",".join(f"{key}={resources[key]}" for key in sorted(resources))
