"""Persistence for Tunelab: the only package that talks to DuckDB."""

from engine.runners.status import STATUSES
from storage.store import Store, StoredStudy, StoreError, StoreLockedError, StudyNotFound, database_files

__all__ = ["STATUSES", "Store", "StoredStudy", "StoreError", "StoreLockedError", "StudyNotFound", "database_files"]
