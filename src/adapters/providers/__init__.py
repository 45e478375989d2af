"""runpod-deploy's providers: one subpackage each, whose `PLUGIN` (a
pegboard.domain.gpujob.provider_plugin.ProviderPlugin) declares the provider.

`discover_registry()` is the one list of providers: every subpackage here that defines PLUGIN,
found by walking this package (a new provider is a new subpackage, nothing else). Each
subpackage's `__init__` stays light (attrs and the domain only), because `--help` and
`validate` import it; what reaches pods is imported by its `build`, when a process needs it.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from pegboard.domain.gpujob.provider_plugin import ProviderPlugin
from pegboard.domain.gpujob.provider_registry import ProviderRegistry

__all__ = ["discover_registry", "provider_names"]


def _subpackages() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if info.ispkg)


@cache
def discover_registry() -> ProviderRegistry:
    """Every provider package's PLUGIN; a package without one is a programming error."""
    plugins = []
    for name in _subpackages():
        module = importlib.import_module(f"{__name__}.{name}")
        plugin = getattr(module, "PLUGIN", None)
        if not isinstance(plugin, ProviderPlugin):
            raise TypeError(f"{module.__name__} defines no PLUGIN (a ProviderPlugin)")
        if plugin.name != name:
            raise TypeError(f"{module.__name__}.PLUGIN is named {plugin.name!r}, not {name!r}")
        plugins.append(plugin)
    return ProviderRegistry(plugins)


def provider_names() -> tuple[str, ...]:
    """The registered providers' names (the `--provider` choices), default first."""
    return discover_registry().names()
