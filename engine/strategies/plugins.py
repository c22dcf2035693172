"""The strategies the plug-ins add, by module and class, kept apart from :mod:`engine.strategies.registry` so that
a plug-in registering one (on import, when the registry loads the plug-ins) imports no strategy."""

from __future__ import annotations

#: A plug-in's strategies: name (upper case) -> (module, class).
PLUGGED: dict[str, tuple[str, str]] = {}


def register_strategy(name: str, module: str, attribute: str) -> None:
    """A plug-in's strategy: ``module.attribute`` (a :class:`~engine.strategies.base.Strategy` whose ``name`` is
    ``name``), imported when it is first named or the strategies are described."""
    PLUGGED[name.strip().upper()] = (module, attribute)
