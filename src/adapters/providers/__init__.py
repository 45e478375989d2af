"""runpod-deploy's providers: one subpackage each, whose `PLUGIN` (a
pegboard.domain.gpujob.provider_plugin.ProviderPlugin) declares the provider.

`discover_registry()` is the one list of providers: every subpackage here that defines PLUGIN,
found by listing this package (a new provider is a new subpackage, nothing else). Each
subpackage's `__init__` stays light (attrs and the domain only), because `--help` and
`validate` import it; what reaches pods is imported by its `build`, when a process needs it.
"""

from __future__ import annotations

import importlib
import os
from functools import cache

from pegboard.domain.gpujob.provider_plugin import ProviderPlugin
from pegboard.domain.gpujob.provider_registry import ProviderRegistry

__all__ = ["discover_registry", "provider_names"]


def _subpackages() -> list[str]:
    """The provider packages here: folders with an __init__.py (a plain scan, not pkgutil's
    import machinery: `--help` lists the providers)."""
    names = set()
    for folder in __path__:
        with os.scandir(folder) as entries:
            for entry in entries:
                is_package = os.path.isfile(os.path.join(entry.path, "__init__.py"))
                if entry.is_dir() and entry.name.isidentifier() and is_package:
                    names.add(entry.name)
    return sorted(names)


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
