"""Study file formats: spec files (YAML/TOML), table imports (CSV, Kernel Tuner caches) and exports.

Pure functions over text, bytes and DataFrames; saving a study is the storage layer's job.
"""

from engine.io.export import (
    StudyDocument,
    parse_study_json,
    safe_filename,
    study_to_csv,
    study_to_json,
    write_export,
)
from engine.io.ktcache import import_kt_cache
from engine.io.spec import TEMPLATES, dump_spec, load_spec, parse_spec
from engine.io.table_import import ImportedTable, import_table

__all__ = [
    "TEMPLATES",
    "ImportedTable",
    "StudyDocument",
    "dump_spec",
    "import_kt_cache",
    "import_table",
    "load_spec",
    "parse_spec",
    "parse_study_json",
    "safe_filename",
    "study_to_csv",
    "study_to_json",
    "write_export",
]
