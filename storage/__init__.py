"""Persistence for Tunelab: the only package that talks to DuckDB."""

from storage.store import STATUSES, Store, StoredStudy, StoreError, StoreLockedError, StudyNotFound, database_files

__all__ = ["STATUSES", "Store", "StoredStudy", "StoreError", "StoreLockedError", "StudyNotFound", "database_files"]
