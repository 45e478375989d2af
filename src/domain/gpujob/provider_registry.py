"""The one list of runpod-deploy providers: name -> ProviderPlugin (provider_plugin.py).

Built by `pegboard.adapters.providers.discover_registry()` (one package a provider) and handed
to the core as a value: the job spec's `pod.provider` values and sections, the `--provider`
choices and the capability questions of the core's rules all come from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.provider_plugin import ConfigSection, ProviderPlugin
from pegboard.domain.gpujob.spec import DEFAULT_PROVIDER

__all__ = ["DEFAULT_PROVIDER", "ProviderRegistry"]


class ProviderRegistry(Mapping[str, ProviderPlugin[Any]]):
    """Registered providers by name: the default first, then by name."""

    def __init__(self, plugins: Iterable[ProviderPlugin[Any]]) -> None:
        by_name: dict[str, ProviderPlugin[Any]] = {}
        for plugin in plugins:
            if plugin.name in by_name:
                raise ValueError(f"two provider plugins are named {plugin.name!r}")
            by_name[plugin.name] = plugin
        order = sorted(by_name, key=lambda name: (name != DEFAULT_PROVIDER, name))
        self._plugins = {name: by_name[name] for name in order}
        sections: dict[str, ConfigSection] = {}
        for plugin in self._plugins.values():
            for section in plugin.sections:
                known = sections.setdefault(section.key, section)
                if known != section:
                    raise ValueError(
                        f"provider {plugin.name!r} declares section {section.key!r} differently"
                    )
        self._sections = sections

    def __getitem__(self, name: str) -> ProviderPlugin[Any]:
        return self._plugins[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)

    def names(self) -> tuple[str, ...]:
        return tuple(self._plugins)

    def plugin(self, name: str, *, what: str = "pod.provider") -> ProviderPlugin[Any]:
        """The plugin named `name`; an unknown name is a UsageError listing the known ones."""
        try:
            return self._plugins[name]
        except KeyError:
            raise UsageError(
                f"{what}: unknown provider {name!r} ({' or '.join(self._plugins)})"
            ) from None

    @property
    def sections(self) -> Mapping[str, ConfigSection]:
        """Every config section some provider reads, by key."""
        return self._sections

    def with_plugin(self, plugin: ProviderPlugin[Any]) -> ProviderRegistry:
        """This registry plus `plugin` (replacing one of the same name): tests and embedders."""
        others = [p for name, p in self._plugins.items() if name != plugin.name]
        return ProviderRegistry([*others, plugin])

    # --- capabilities; a name no plugin has (a test's "fake" cloud) gets the defaults -------
    def billed(self, name: str) -> bool:
        plugin = self._plugins.get(name)
        return True if plugin is None else plugin.billed

    def has_gpu_catalog(self, name: str) -> bool:
        plugin = self._plugins.get(name)
        return True if plugin is None else plugin.gpu_catalog
