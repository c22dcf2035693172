"""The DuckDB store: the only code that talks to DuckDB.

One process owns a database file (DuckDB's own rule); every write is its own transaction, so a
measurement is durable the moment :meth:`Store.record_measurement` returns and killing the process
mid-campaign loses nothing already stored. Measurements are unique per (study, configuration,
repeat), so replaying a campaign after a crash cannot duplicate one.
"""

from __future__ import annotations

import json
import math
import re
import socket
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from engine.errors import UserError
from engine.io.jsonable import jsonable
from engine.runners.status import STATUSES
from engine.space.configs import config_key, config_keys, config_keys_of, frame_from_keys
from engine.study import StudySpec
from storage.schema import MIGRATIONS

if TYPE_CHECKING:  # pandas where a frame is built: `tunelab study list` starts without it
    import pandas as pd


class StoreError(UserError):
    """A storage problem a person can act on; the message is one sentence."""


class StoreLockedError(StoreError):
    """Another process holds the database file."""


class StudyNotFound(StoreError):
    pass


_T = TypeVar("_T")

#: One fetched row, as DuckDB returns it.
Row = tuple[Any, ...]


def _json(value: Any) -> str:
    return json.dumps(jsonable(value), separators=(",", ":"))


def _first(row: Row | None) -> Any:
    """The first column of the row a statement always returns (an aggregate, an ``INSERT ... RETURNING``)."""
    assert row is not None, "the statement returned no row"
    return row[0]


def json_row(store: Store, query: str, params: Iterable[Any], columns: Sequence[str],
             parsed: Sequence[str]) -> dict[str, Any] | None:
    """The first row of ``query`` as a dict over ``columns``, its JSON columns ``parsed``; None when there is none."""
    row = store._one(query, params)
    if row is None:
        return None
    found = dict(zip(columns, row))
    return found | {column: json.loads(found[column]) for column in parsed}


def json_frame(store: Store, query: str, parsed: Sequence[str], params: Iterable[Any] | None = None) -> pd.DataFrame:
    """The rows of ``query``, its JSON columns ``parsed`` into Python values."""
    frame = store._df(query, params)
    for column in parsed:
        frame[column] = [json.loads(value) for value in frame[column]]
    return frame


#: The columns of :meth:`Store.study_rows`, in order (the first ten are its query's).
STUDY_ROW = ("id", "name", "objective", "direction", "runner", "created_at", "table_rows", "table_valid", "measured",
             "measured_ok", "measurements", "factors", "size")


@dataclass(frozen=True)
class StoredStudy:
    id: int
    spec: StudySpec
    created_at: datetime

    @property
    def name(self) -> str:
        return self.spec.name


#: Bytes 8-11 of every DuckDB database file.
DUCKDB_MAGIC = b"DUCK"
IN_MEMORY = ":memory:"


def database_files(path: str | Path) -> tuple[Path, ...]:
    """The files that make up the database at ``path`` (the file and its write-ahead log), which
    nothing else may overwrite; none for an in-memory database."""
    if str(path) == IN_MEMORY:
        return ()
    file = Path(path).expanduser()
    return file, file.with_name(file.name + ".wal")


def check_database_path(path: str) -> None:
    """Refuse, in one line, a path DuckDB would not keep data in: an empty one (DuckDB then runs in
    memory and every command 'succeeds' keeping nothing), a folder or a special file, or an existing
    file that is not a DuckDB database (DuckDB opens some, a CSV for one, as an in-memory database).

    A zero-byte file is refused too: DuckDB cannot open it, it is what a crash while creating a
    database or a stray ``touch`` leaves, and deleting a person's file to start afresh is not ours
    to decide; the message says to delete it or pick a new name.
    """
    if not path.strip():
        raise StoreError("database '': empty path; name a DuckDB file with --db or $TUNELAB_DB")
    if path == IN_MEMORY:
        return
    file = Path(path).expanduser()
    if not file.parent.resolve().is_dir():
        raise StoreError(f"database {path}: folder {file.parent.resolve()} does not exist")
    try:
        st = file.stat()
    except FileNotFoundError:
        return  # a new database
    except OSError as exc:
        raise StoreError(f"database {path}: cannot open ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"database {path}: is a folder, not a DuckDB file")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"database {path}: not a regular file (a device, FIFO or socket); choose a DuckDB file")
    if st.st_size == 0:
        raise StoreError(f"database {path}: an empty file, not a DuckDB database; delete it or choose a new file name")
    try:
        with open(file, "rb") as handle:
            header = handle.read(12)
    except OSError as exc:
        raise StoreError(f"database {path}: cannot open ({exc.strerror})") from None
    if header[8:12] != DUCKDB_MAGIC:
        raise StoreError(f"database {path}: not a DuckDB database file; refusing to open it (choose another --db)")


def _open_connection(path: str) -> duckdb.DuckDBPyConnection:
    check_database_path(path)
    try:
        return duckdb.connect(path)
    except duckdb.IOException as exc:
        text = str(exc)
        if "lock" in text.lower():
            pid = re.search(r"PID (\d+)", text)
            who = f" (PID {pid.group(1)})" if pid else ""
            raise StoreLockedError(
                f"database {path} is in use by another process{who}; stop it or choose another file with --db"
            ) from None
        reason = "permission denied" if "ermission" in text else text.splitlines()[0]
        raise StoreError(f"database {path}: cannot open ({reason})") from None
    except duckdb.Error as exc:
        raise StoreError(f"database {path}: cannot open ({str(exc).splitlines()[0]})") from None


class Store:
    """Studies, measurements, designs, models, decisions and exports in one DuckDB file."""

    def __init__(self, path: str | Path = "tunelab.duckdb") -> None:
        self.path = str(path)
        self._con = _open_connection(self.path)
        self._lock = threading.RLock()
        self._specs: dict[int, StudySpec] = {}
        self._migrate()

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _run(self, query: str, params: Iterable[Any] | None,
             fetch: Callable[[duckdb.DuckDBPyConnection], _T]) -> _T:
        """Execute and fetch under the lock: one DuckDB connection must not serve two threads at once."""
        with self._lock:
            try:
                cursor = self._con.execute(query, list(params) if params is not None else None)
                return fetch(cursor)
            except duckdb.IOException as exc:
                raise StoreError(f"database {self.path}: write failed ({str(exc).splitlines()[0]})") from None

    def _exec(self, query: str, params: Iterable[Any] | None = None) -> None:
        self._run(query, params, lambda cursor: None)

    def _one(self, query: str, params: Iterable[Any] | None = None) -> Row | None:
        """The first row; the result is read to its end, so the connection is free for what comes next
        (an ``INSERT ... RETURNING`` left half-read blocks a following ``register``)."""
        rows = self._all(query, params)
        return rows[0] if rows else None

    def _scalar(self, query: str, params: Iterable[Any] | None = None) -> Any:
        """The first column of the one row ``query`` always returns."""
        return _first(self._one(query, params))

    def _all(self, query: str, params: Iterable[Any] | None = None) -> list[Row]:
        return self._run(query, params, lambda cursor: cursor.fetchall())

    def _df(self, query: str, params: Iterable[Any] | None = None) -> pd.DataFrame:
        return self._run(query, params, lambda cursor: cursor.df())

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One all-or-nothing write (held under the lock): yields the connection, commits on success."""
        with self._lock:
            self._con.execute("BEGIN TRANSACTION")
            try:
                yield self._con
                self._con.execute("COMMIT")
            except BaseException:
                self._con.execute("ROLLBACK")
                raise

    def insert_frame(self, table: str, frame: pd.DataFrame) -> None:
        """Bulk-insert ``frame`` (columns named as ``table``'s; the others take their defaults) in one statement."""
        columns = ", ".join(frame.columns)
        with self._lock:
            self._con.register("_incoming_frame", frame)
            try:
                self._con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM _incoming_frame")
            finally:
                self._con.unregister("_incoming_frame")

    def _migrate(self) -> None:
        with self._lock:
            self._con.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, description VARCHAR,"
                " applied_at TIMESTAMP DEFAULT current_timestamp)"
            )
            done = {r[0] for r in self._con.execute("SELECT version FROM schema_version").fetchall()}
            for version, description, sql in MIGRATIONS:
                if version in done:
                    continue
                with self.transaction() as con:
                    con.execute(sql)
                    con.execute("INSERT INTO schema_version (version, description) VALUES (?, ?)", [version, description])

    @property
    def schema_version(self) -> int:
        return int(self._scalar("SELECT max(version) FROM schema_version"))

    # -- studies -------------------------------------------------------------------------------------
    def create_study(self, spec: StudySpec, table: pd.DataFrame | None = None) -> StoredStudy:
        """Store a new study; ``table`` (factor columns + value/status/error) makes it a table study."""
        with self._lock:
            if self._one("SELECT 1 FROM studies WHERE name = ?", [spec.name]):
                raise StoreError(f"study '{spec.name}' already exists; pick another name or delete it first")
            with self.transaction() as con:
                study_id = _first(con.execute(
                    "INSERT INTO studies (name, description, objective, direction, runner, spec)"
                    " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                    [spec.name, spec.description, spec.objective, spec.direction, _json(dict(spec.runner)),
                     _json(spec.to_dict())],
                ).fetchone())
                if table is not None:
                    self._insert_table(study_id, spec, table)
        return self.get_study(spec.name)

    def _insert_table(self, study_id: int, spec: StudySpec, table: pd.DataFrame) -> None:
        import pandas as pd

        rows = pd.DataFrame(
            {
                "study_id": study_id,
                "config_key": config_keys(spec.space, table),
                "value": pd.to_numeric(table["value"], errors="coerce").astype(float),
                "status": table["status"].astype(str) if "status" in table else "ok",
                "error": table["error"].astype(object).where(table["error"].notna(), None) if "error" in table else None,
            }
        ).drop_duplicates("config_key", keep="first")
        self.insert_frame("table_rows", rows)

    def get_study(self, name: str) -> StoredStudy:
        row = self._one("SELECT id, spec, created_at FROM studies WHERE name = ?", [name])
        if row is None:
            known = [r[0] for r in self._all("SELECT name FROM studies ORDER BY name")]
            hint = f"; known studies: {', '.join(known[:8])}" if known else "; there are no studies yet"
            raise StudyNotFound(f"study '{name}' not found{hint}")
        study_id, spec_text, created = row
        if study_id not in self._specs:
            self._specs[study_id] = StudySpec.from_dict(json.loads(spec_text))
        return StoredStudy(study_id, self._specs[study_id], created)

    def study_names(self) -> list[str]:
        return [r[0] for r in self._all("SELECT name FROM studies ORDER BY created_at, id")]

    def list_studies(self) -> pd.DataFrame:
        """One row per study with its size and how much of it is measured (:meth:`study_rows` as a frame)."""
        import pandas as pd

        return pd.DataFrame(self.study_rows(), columns=list(STUDY_ROW))

    def study_rows(self) -> list[dict[str, Any]]:
        """One dict per study (the keys of STUDY_ROW) with its size and how much of it is measured; no pandas, so
        a command that lists studies starts fast."""
        rows = self._all(
            """
            SELECT s.id, s.name, s.objective, s.direction, json_extract_string(s.runner, '$.kind') AS runner,
                   s.created_at,
                   coalesce(t.rows, 0) AS table_rows, coalesce(t.valid, 0) AS table_valid,
                   coalesce(m.configs, 0) AS measured, coalesce(m.ok, 0) AS measured_ok,
                   coalesce(m.n, 0) AS measurements
            FROM studies s
            LEFT JOIN (SELECT study_id, count(*) AS rows, count(*) FILTER (WHERE status = 'ok') AS valid
                       FROM table_rows GROUP BY study_id) t ON t.study_id = s.id
            LEFT JOIN (SELECT study_id, count(DISTINCT config_key) AS configs,
                              count(DISTINCT config_key) FILTER (WHERE status = 'ok') AS ok, count(*) AS n
                       FROM measurements GROUP BY study_id) m ON m.study_id = s.id
            ORDER BY s.created_at, s.id
            """
        )
        studies = [dict(zip(STUDY_ROW, row)) for row in rows]
        for study in studies:
            space = self.get_study(study["name"]).spec.space
            study.update(factors=len(space.factors), size=space.size)
        return studies

    def delete_study(self, name: str) -> None:
        study = self.get_study(name)
        with self._lock:
            with self.transaction() as con:
                for table in ("table_rows", "measurements", "models", "decisions", "exports", "study_notes"):
                    con.execute(f"DELETE FROM {table} WHERE study_id = ?", [study.id])
                con.execute("DELETE FROM design_rows WHERE design_id IN (SELECT id FROM designs WHERE study_id = ?)",
                            [study.id])
                con.execute("DELETE FROM designs WHERE study_id = ?", [study.id])
                con.execute("DELETE FROM studies WHERE id = ?", [study.id])
        self._specs.pop(study.id, None)

    def update_study_spec(self, name: str, spec: StudySpec) -> StoredStudy:
        """Replace a study's spec; refused once anything was measured, designed or imported for it."""
        study = self.get_study(name)
        used = self._scalar(
            "SELECT (SELECT count(*) FROM measurements WHERE study_id = $1) + (SELECT count(*) FROM designs"
            " WHERE study_id = $1) + (SELECT count(*) FROM table_rows WHERE study_id = $1)",
            [study.id],
        )
        if used:
            raise StoreError(f"study '{name}' already has data; save the edited space as a new study instead")
        if spec.name != name and self._one("SELECT 1 FROM studies WHERE name = ?", [spec.name]):
            raise StoreError(f"study '{spec.name}' already exists")
        self._exec(
            "UPDATE studies SET name = ?, description = ?, objective = ?, direction = ?, runner = ?, spec = ? WHERE id = ?",
            [spec.name, spec.description, spec.objective, spec.direction, _json(dict(spec.runner)),
             _json(spec.to_dict()), study.id],
        )
        self._specs.pop(study.id, None)
        return self.get_study(spec.name)

    def study_table(self, name: str) -> pd.DataFrame:
        """The exhaustive table of a table study: factor columns, then value, status, error."""
        study = self.get_study(name)
        rows = self._df(
            "SELECT config_key, value, status, error FROM table_rows WHERE study_id = ? ORDER BY rowid", [study.id]
        )
        return self._expand(study.spec, rows)

    def table_values(self, name: str) -> list[Row]:
        """(configuration key, value, status) of every row of a table study's table, in :meth:`study_table`'s order."""
        return self._values("table_rows", "rowid", name)

    def _expand(self, spec: StudySpec, rows: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd

        configs = frame_from_keys(spec.space, rows["config_key"].tolist())
        return pd.concat([configs, rows.drop(columns=["config_key"]).reset_index(drop=True)], axis=1)

    # -- measurements ----------------------------------------------------------------------------------
    def record_measurement(
        self,
        study: StoredStudy,
        config: Mapping[str, Any],
        value: float | None,
        status: str = "ok",
        *,
        error: str | None = None,
        repeat: int | None = None,
        host: str | None = None,
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
        strategy: str | None = None,
        step: int | None = None,
        design_id: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> int | None:
        """Commit one measurement now. Returns its id, or None if that (config, repeat) was already stored."""
        if status not in STATUSES:
            raise StoreError(f"measurement status {status!r} is not one of {', '.join(STATUSES)}")
        key = config_key(study.spec.space, config)
        value = None if value is None or not math.isfinite(float(value)) else float(value)
        with self._lock:
            if repeat is None:
                repeat = self._scalar(
                    "SELECT coalesce(max(repeat) + 1, 0) FROM measurements WHERE study_id = ? AND config_key = ?",
                    [study.id, key],
                )
            row = self._one(
                "INSERT INTO measurements (study_id, config_key, repeat, value, status, error, host, started_at,"
                " finished_at, strategy, step, design_id, metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT DO NOTHING RETURNING id",
                [study.id, key, int(repeat), value, status, error, host or socket.gethostname(), started_at,
                 finished_at or datetime.now(UTC).replace(tzinfo=None), strategy, step, design_id,
                 _json(dict(metadata or {}))],
            )
        return None if row is None else int(row[0])

    def record_measurements(self, study: StoredStudy, rows: Sequence[Mapping[str, Any]]) -> int:
        """Commit many measurements in one statement (all or none): each row holds ``config`` and ``repeat`` and
        any of ``record_measurement``'s keywords, ``value`` and ``status``. A (configuration, repeat) already
        stored is skipped, as there. Returns how many were new. One transaction for a campaign's round of results:
        one per result held the owner near 165 results/s (issue 35 §3)."""
        import pyarrow as pa

        if not rows:
            return 0
        for row in rows:
            if row.get("status", "ok") not in STATUSES:
                raise StoreError(f"measurement status {row.get('status')!r} is not one of {', '.join(STATUSES)}")
        space = study.spec.space
        host, now = socket.gethostname(), datetime.now(UTC).replace(tzinfo=None)

        def number(value: Any) -> float | None:
            return None if value is None or not math.isfinite(float(value)) else float(value)

        def column(name: str) -> list[Any]:
            return [row.get(name) for row in rows]

        incoming = pa.table({
            "study_id": pa.array([study.id] * len(rows), pa.int64()),
            "config_key": pa.array(config_keys_of(space, [row["config"] for row in rows]), pa.string()),
            "repeat": pa.array([int(row["repeat"]) for row in rows], pa.int64()),
            "value": pa.array([number(v) for v in column("value")], pa.float64()),
            "status": pa.array([str(row.get("status", "ok")) for row in rows], pa.string()),
            "error": pa.array(column("error"), pa.string()),
            "host": pa.array([v or host for v in column("host")], pa.string()),
            "started_at": pa.array(column("started_at"), pa.timestamp("us")),
            "finished_at": pa.array([v or now for v in column("finished_at")], pa.timestamp("us")),
            "strategy": pa.array(column("strategy"), pa.string()),
            "step": pa.array(column("step"), pa.int64()),
            "design_id": pa.array(column("design_id"), pa.int64()),
            "metadata": pa.array([_json(dict(v or {})) for v in column("metadata")], pa.string()),
        })
        columns = ", ".join(incoming.column_names)
        with self._lock:
            self._con.register("_incoming_measurements", incoming)
            try:
                return len(self._all(f"INSERT INTO measurements ({columns}) SELECT {columns} FROM _incoming_measurements"
                                     " ON CONFLICT DO NOTHING RETURNING id"))
            finally:
                self._con.unregister("_incoming_measurements")

    def measurements(self, name: str, design_id: int | None = None, step: int | None = None) -> pd.DataFrame:
        """Every stored repeat: factor columns, then value, status, error, repeat and provenance."""
        study = self.get_study(name)
        where, params = "study_id = ?", [study.id]
        if design_id is not None:
            where, params = where + " AND design_id = ?", params + [design_id]
        if step is not None:
            where, params = where + " AND step = ?", params + [step]
        rows = self._df(
            "SELECT config_key, value, status, error, repeat, host, started_at, finished_at, strategy, step,"
            f" design_id, id AS measurement_id FROM measurements WHERE {where} ORDER BY id",
            params,
        )
        return self._expand(study.spec, rows)

    def measured_values(self, name: str) -> list[Row]:
        """(configuration key, value, status) of every stored repeat in the order measured: what the best measured
        configuration is found from, read without the frame of :meth:`measurements` (and pandas)."""
        return self._values("measurements", "id", name)

    def _values(self, table: str, order: str, name: str) -> list[Row]:
        study = self.get_study(name)
        return self._all(f"SELECT config_key, value, status FROM {table} WHERE study_id = ? ORDER BY {order}", [study.id])

    def measured_keys(self, study: StoredStudy) -> set[str]:
        rows = self._all("SELECT DISTINCT config_key FROM measurements WHERE study_id = ?", [study.id])
        return {r[0] for r in rows}

    # -- designs ---------------------------------------------------------------------------------------
    def save_design(
        self,
        study: StoredStudy,
        frame: pd.DataFrame,
        *,
        name: str,
        kind: str,
        formula: str | None = None,
        params: Mapping[str, Any] | None = None,
        criteria: Mapping[str, Any] | None = None,
        forced: Iterable[bool] | None = None,
        step: int | None = None,
    ) -> int:
        """Store a design; its rows become pending measurements until measured."""
        import pandas as pd

        keys = config_keys(study.spec.space, frame)
        forced_flags = list(forced) if forced is not None else [False] * len(keys)
        with self._lock:
            with self.transaction() as con:
                design_id = _first(con.execute(
                    "INSERT INTO designs (study_id, name, kind, formula, params, criteria, step)"
                    " VALUES (?,?,?,?,?,?,?) RETURNING id",
                    [study.id, name, kind, formula, _json(dict(params or {})), _json(dict(criteria or {})), step],
                ).fetchone())
                self.insert_frame("design_rows", pd.DataFrame(
                    {"design_id": design_id, "position": range(len(keys)), "config_key": keys,
                     "forced": [bool(f) for f in forced_flags]}
                ))
        return int(design_id)

    def designs(self, name: str) -> pd.DataFrame:
        """Designs of a study with their size and how many rows are still pending."""
        study = self.get_study(name)
        return self._df(
            """
            SELECT d.id, d.name, d.kind, d.formula, d.step, d.criteria, d.params, d.created_at,
                   count(r.position) AS rows,
                   count(r.position) FILTER (WHERE NOT EXISTS (
                       SELECT 1 FROM measurements m WHERE m.study_id = d.study_id AND m.config_key = r.config_key
                   )) AS pending
            FROM designs d LEFT JOIN design_rows r ON r.design_id = d.id
            WHERE d.study_id = ? GROUP BY ALL ORDER BY d.id
            """,
            [study.id],
        )

    def design_rows(self, name: str, design_id: int, pending_only: bool = False) -> pd.DataFrame:
        """A design's configurations (factor columns, position, forced, measured)."""
        study = self.get_study(name)
        rows = self._df(
            """
            SELECT r.config_key, r.position, r.forced,
                   EXISTS (SELECT 1 FROM measurements m WHERE m.study_id = ? AND m.config_key = r.config_key) AS measured
            FROM design_rows r JOIN designs d ON d.id = r.design_id
            WHERE r.design_id = ? AND d.study_id = ? ORDER BY r.position
            """,
            [study.id, design_id, study.id],
        )
        if rows.empty and not self._one("SELECT 1 FROM designs WHERE id = ? AND study_id = ?", [design_id, study.id]):
            raise StoreError(f"design {design_id} does not belong to study '{name}'")
        if pending_only:
            rows = rows[~rows["measured"]].reset_index(drop=True)
        return self._expand(study.spec, rows)

    # -- models, decisions, exports ----------------------------------------------------------------------
    def save_model(self, study: StoredStudy, *, formula: str, transform: str, coefficients: Any, anova: Any,
                   lam: float | None = None, summary: Mapping[str, Any] | None = None, step: int | None = None) -> int:
        return int(self._scalar(
            "INSERT INTO models (study_id, step, formula, transform, box_cox_lambda, coefficients, anova, summary)"
            " VALUES (?,?,?,?,?,?,?,?) RETURNING id",
            [study.id, step, formula, transform, lam, _json(coefficients), _json(anova), _json(dict(summary or {}))],
        ))

    def models(self, name: str) -> pd.DataFrame:
        study = self.get_study(name)
        return self._df("SELECT * FROM models WHERE study_id = ? ORDER BY id", [study.id])

    def log_decision(self, study: StoredStudy, *, kind: str, proposed: Any, chosen: Any, outcome: str, actor: str,
                     explanation: str = "", evidence: Any = None, step: int | None = None,
                     note: str | None = None) -> int:
        """Append to the audit log: what was proposed, what was chosen, by whom, on what evidence, and
        the person's own note."""
        return int(self._scalar(
            "INSERT INTO decisions (study_id, step, kind, proposed, chosen, outcome, actor, explanation, evidence,"
            " note) VALUES (?,?,?,?,?,?,?,?,?,?) RETURNING id",
            [study.id, step, kind, _json(proposed), None if chosen is None else _json(chosen), outcome, actor,
             explanation, _json(evidence if evidence is not None else {}), note or None],
        ))

    def study_notes(self, name: str) -> str:
        """The study's notes (Markdown), empty when none were written."""
        study = self.get_study(name)
        rows = self._run("SELECT text FROM study_notes WHERE study_id = ?", [study.id], lambda c: c.fetchall())
        return str(rows[0][0]) if rows else ""

    def save_study_notes(self, study: StoredStudy, text: str) -> None:
        self._exec("INSERT OR REPLACE INTO study_notes (study_id, text, updated_at) VALUES (?, ?, current_timestamp)",
                   [study.id, text])

    def withdraw_decision(self, study: StoredStudy, decision_id: int) -> None:
        """Mark a decision withdrawn: it stays in the log, with when, and no longer applies."""
        self._exec("UPDATE decisions SET withdrawn_at = current_timestamp WHERE study_id = ? AND id = ?",
                   [study.id, decision_id])

    def decisions(self, name: str) -> pd.DataFrame:
        study = self.get_study(name)
        return self._df("SELECT * FROM decisions WHERE study_id = ? ORDER BY id", [study.id])

    def log_export(self, study: StoredStudy, fmt: str, path: str | None, size: int | None) -> int:
        return int(self._scalar(
            "INSERT INTO exports (study_id, format, path, bytes) VALUES (?,?,?,?) RETURNING id",
            [study.id, fmt, path, size],
        ))

    def exports(self, name: str) -> pd.DataFrame:
        study = self.get_study(name)
        return self._df("SELECT * FROM exports WHERE study_id = ? ORDER BY id", [study.id])
