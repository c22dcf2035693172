"""Demo studies seeded into a fresh database, so a newcomer has something to explore at once."""

from __future__ import annotations

from engine.io.spec import TEMPLATES, parse_spec
from engine.paths import data_dir
from storage.store import Store

TOY_STUDY = "Paper toy problem"
LAPLACIAN_STUDY = "GPU Laplacian (K40c)"


def seed_demo_studies(store: Store) -> list[str]:
    """Create the demo studies that are missing; returns the names created."""
    created = []
    existing = set(store.study_names())
    if TOY_STUDY not in existing:
        spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
        from dataclasses import replace

        store.create_study(replace(spec, name=TOY_STUDY, description=(
            "The CCGrid'19 tutorial: 8 factors on 11 levels, y = -1.5 x1 + 1.3 x3 + 3.1 x5 - 1.4 x7 + 1.35 x8² "
            "+ 1.6 x1·x3 + noise. x2, x4, x6 are inert; the noise-free optimum is -8.9.")))
        created.append(TOY_STUDY)
    data = data_dir()
    laplacian = data / "laplacian" / "search_space.csv" if data else None
    if LAPLACIAN_STUDY not in existing and laplacian is not None and laplacian.is_file():
        from engine.io.table import import_table

        imported = import_table(laplacian, objective="time_per_pixel", name=LAPLACIAN_STUDY)
        store.create_study(imported.spec, imported.table)
        created.append(LAPLACIAN_STUDY)
    return created
