"""Package attributes imported on first use (PEP 562).

``tunelab`` builds every sub-command's parser at start-up and the dashboard imports each page's
packages; statsmodels, scipy.stats and pandas take seconds to import, so naming a package must not
import them. A package lists ``{module: (name, ...)}`` and gets its ``__getattr__`` and ``__dir__``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]], namespace: dict[str, Any],
                 eager: Sequence[str] = ()) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(``__all__``, ``__getattr__``, ``__dir__``) for ``package``: a name of ``exports`` is imported
    from its module the first time it is read, then kept in ``namespace`` (the package's globals)."""
    module_of = {name: module for module, names in exports.items() for name in names}
    public = [*eager, *sorted(module_of)]

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return public

    return public, __getattr__, __dir__
