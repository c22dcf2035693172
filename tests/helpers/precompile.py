"""Import every module of the project, and the libraries its tests and commands load, so that their bytecode is
written once (``make test`` runs this beside mypy, with ``PYTHONDONTWRITEBYTECODE`` unset).

The test install does not compile all of site-packages (18,000 files, 90 s of CPU for a fresh clone); only what is
imported gets compiled, about a quarter of it, on the core mypy leaves idle."""

from __future__ import annotations

import importlib
import pkgutil
import warnings

#: Libraries loaded lazily by code paths the walk below does not import at module level.
LIBRARIES = ("plotly.graph_objects", "plotly.express", "streamlit.web.bootstrap", "playwright.sync_api",
             "xdist", "dask.distributed", "optuna", "torch_geometric", "sklearn.ensemble", "numba",
             "pyarrow.parquet", "scipy.stats", "statsmodels.api")
PACKAGES = ("engine", "storage", "workflows", "app")


def modules() -> list[str]:
    names = list(LIBRARIES)
    for package in PACKAGES:
        root = importlib.import_module(package)
        # app.main and __main__ modules run when imported (the Streamlit script, the CLI)
        names += [info.name for info in pkgutil.walk_packages(root.__path__, f"{package}.")
                  if info.name != "app.main" and not info.name.endswith("__main__")]
    return names


def main() -> None:
    warnings.simplefilter("ignore")
    from streamlit.logger import set_log_level

    set_log_level("error")  # its "no runtime found" warnings are expected outside a server
    names, missing = modules(), []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional extra that is not installed (triton...)
            missing.append(name)
    print(f"bytecode written for {len(names) - len(missing)} modules and what they import"
          + (f"; not importable without an optional extra: {', '.join(missing)}" if missing else ""))


if __name__ == "__main__":
    main()
