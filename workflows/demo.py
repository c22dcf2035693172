"""Demo studies seeded into a fresh database, so a newcomer has something to explore at once."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from engine.io.paths import data_dir
from engine.io.spec import TEMPLATES, parse_spec
from storage import Store, StoredStudy

if TYPE_CHECKING:
    from engine.study import StudySpec

TOY_STUDY = "Paper toy problem"
LAPLACIAN_STUDY = "GPU Laplacian (K40c)"
MATMUL_STUDY = "Matrix multiply (this CPU)"
#: Matrix order of the demo kernel: the -O3 baseline takes about 15 ms on a 2-core x86 VM.
MATMUL_N = 384


def seed_demo_studies(store: Store) -> list[str]:
    """Create the demo studies that are missing; returns the names created."""
    created: list[str] = []
    existing = set(store.study_names())
    if TOY_STUDY not in existing:
        spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
        from dataclasses import replace

        study = store.create_study(replace(spec, name=TOY_STUDY, description=(
            "The CCGrid'19 tutorial: 8 factors on 11 levels, y = -1.5 x1 + 1.3 x3 + 3.1 x5 - 1.4 x7 + 1.35 x8² "
            "+ 1.6 x1·x3 + noise. x2, x4, x6 are inert; the noise-free optimum is -8.9. Seeded with the paper's "
            "first step, a measured 12-run Plackett-Burman screening: open Analyze to read it.")))
        _measure_screening(store, study)
        created.append(TOY_STUDY)
    data = data_dir()
    laplacian = data / "laplacian" / "search_space.csv" if data else None
    if LAPLACIAN_STUDY not in existing and laplacian is not None and laplacian.is_file():
        from engine.io.table_import import import_table

        imported = import_table(laplacian, objective="time_per_pixel", name=LAPLACIAN_STUDY)
        store.create_study(imported.spec, imported.table)
        created.append(LAPLACIAN_STUDY)
    if MATMUL_STUDY not in existing and shutil.which("gcc"):
        store.create_study(matmul_spec())
        created.append(MATMUL_STUDY)
    return created


def _measure_screening(store: Store, study: StoredStudy) -> None:
    """Step A of the paper's tutorial: a 12-run Plackett–Burman design, measured (synthetic, instant)."""
    from engine.design import plackett_burman
    from engine.execution import Campaign
    from engine.runners import runner_from_spec
    from workflows.recording import store_recorder

    design = plackett_burman(study.spec.space, runs=12, seed=0).design
    design_id = store.save_design(study, design, name="Screening (Plackett-Burman, 12 runs)", kind="pb",
                                  formula="~ " + " + ".join(study.spec.space.names), step=1)
    runner = runner_from_spec(study.spec.runner, space=study.spec.space)
    Campaign(runner, space=study.spec.space).run(design, store_recorder(store, study, design_id=design_id,
                                                                        strategy="screening", step=1))


def matmul_spec() -> StudySpec:
    """The real local demo: the built-in matrix multiply kernel, compiled with gcc and timed here."""
    from engine.runners.ckernel import KERNELS
    from engine.study import StudySpec

    kernel = KERNELS["mm"]
    return StudySpec.from_dict({
        "name": MATMUL_STUDY,
        "description": (
            f"C = A·B for {MATMUL_N}×{MATMUL_N} doubles, generated from a C template per configuration, compiled with "
            "gcc and timed on this machine (3 repeats after a warm-up; output checked against a reference). "
            "Factors: tile sizes, unroll pragmas, scalar replacement, SIMD pragmas, OpenMP and threads, -O level, "
            "-march=native, -funroll-loops. Each result's metadata has its speed-up over gcc -O3."),
        "objective": "time",
        "direction": "minimize",
        "runner": {"kind": "ckernel", "kernel": "mm", "n": MATMUL_N, "repeats": 3, "warmup": 1, "timeout": 60},
        **kernel.space_dict(),
    })
