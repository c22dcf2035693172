"""Study file formats: spec files (YAML/TOML), table imports (CSV, Kernel Tuner caches) and exports.

Pure functions over text, bytes and DataFrames; saving a study is the storage layer's job. Names are
imported on first use (:mod:`engine.lazy`): the CLI's printing needs :mod:`engine.io.jsonable` alone, and
``tunelab --help`` must not pay for pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.lazy import lazy_exports

_EXPORTS = {
    "export": ("StudyDocument", "parse_study_json", "study_to_csv", "study_to_json"),
    "files": ("safe_filename", "write_export"),
    "ktcache": ("import_kt_cache",),
    "spec": ("TEMPLATES", "dump_spec", "load_spec", "parse_spec"),
    "table_import": ("ImportedTable", "import_table"),
}
if TYPE_CHECKING:  # what mypy sees of the lazy names (_EXPORTS is what runs); keep the two in step
    from engine.io.export import StudyDocument as StudyDocument
    from engine.io.export import parse_study_json as parse_study_json
    from engine.io.export import study_to_csv as study_to_csv
    from engine.io.export import study_to_json as study_to_json
    from engine.io.files import safe_filename as safe_filename
    from engine.io.files import write_export as write_export
    from engine.io.ktcache import import_kt_cache as import_kt_cache
    from engine.io.spec import TEMPLATES as TEMPLATES
    from engine.io.spec import dump_spec as dump_spec
    from engine.io.spec import load_spec as load_spec
    from engine.io.spec import parse_spec as parse_spec
    from engine.io.table_import import ImportedTable as ImportedTable
    from engine.io.table_import import import_table as import_table
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
