"""DiffTune's data in the store: CPUs, decoded blocks, measured throughputs, parameter tables and
simulator evaluations.

Plain functions over a :class:`~storage.store.Store` (as :mod:`storage.comparisons`), so the store
class stays about studies. The engine hands over documents (a decoded block, a table, a summary) as
JSON-able values; this module only keeps them. Measurements are keyed by CPU: experiments never mix
CPUs, and a rerun skips what one CPU has already measured in that pass (resumable).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from storage.store import Store, StoreError, _first, _json, json_frame

CPU_FIELDS = ("cpu_id", "vendor", "family", "model", "stepping", "microcode", "model_name", "mcpu")
MEASUREMENT_COLUMNS = ("hex", "status", "cycles_min", "cycles_median", "repeats", "error")


def save_cpu(store: Store, identity: Mapping[str, Any]) -> str:
    """Record a CPU's identity once (the first sighting is kept); returns its id."""
    missing = [f for f in ("cpu_id", "vendor", "family", "model") if identity.get(f) in (None, "")]
    if missing:
        raise StoreError(f"cpu identity: missing field '{missing[0]}'")
    store._exec(f"INSERT INTO cpus ({', '.join(CPU_FIELDS)}) VALUES ({', '.join('?' * len(CPU_FIELDS))})"
                " ON CONFLICT (cpu_id) DO NOTHING", [identity.get(f) for f in CPU_FIELDS])
    return str(identity["cpu_id"])


def cpus(store: Store) -> pd.DataFrame:
    return store._df(f"SELECT {', '.join(CPU_FIELDS)}, first_seen FROM cpus ORDER BY first_seen")


def save_decoded(store: Store, decoder: str, blocks: Mapping[str, Any]) -> int:
    """Keep decoded blocks (hex -> a JSON-able list of instructions) for ``decoder``; returns how many were new."""
    known = set(decoded(store, decoder, blocks))
    rows = [(h, len(body), _json(body)) for h, body in blocks.items() if h not in known]
    if rows:
        frame = pd.DataFrame(rows, columns=["hex", "n_instr", "decoded"]).assign(decoder=decoder)
        store.insert_frame("blocks", frame[["hex", "decoder", "n_instr", "decoded"]])
    return len(rows)


def decoded(store: Store, decoder: str, hexes: Iterable[str]) -> dict[str, Any]:
    """The stored decodings among ``hexes`` (hex -> the instructions as saved)."""
    wanted = list(dict.fromkeys(hexes))
    if not wanted:
        return {}
    rows = store._all("SELECT hex, decoded FROM blocks WHERE decoder = ? AND hex IN (SELECT unnest(?::VARCHAR[]))",
                      [decoder, wanted])
    return {h: json.loads(body) for h, body in rows}


def save_block_measurements(store: Store, cpu_id: str, pass_: int, results: pd.DataFrame) -> int:
    """Store one pass's results for one CPU (``MEASUREMENT_COLUMNS``; ``repeats`` any JSON-able value), replacing
    earlier rows of the same blocks, CPU and pass; returns the number stored."""
    missing = [c for c in MEASUREMENT_COLUMNS if c not in results.columns]
    if missing:
        raise StoreError(f"block measurements: missing column '{missing[0]}'")
    if results.empty:
        return 0
    frame = pd.DataFrame({
        "hex": results["hex"].astype(str), "cpu_id": cpu_id, "pass": int(pass_),
        "status": results["status"].astype(str),
        "cycles_min": pd.to_numeric(results["cycles_min"], errors="coerce"),
        "cycles_median": pd.to_numeric(results["cycles_median"], errors="coerce"),
        "repeats": [None if r is None or (isinstance(r, float) and r != r) else _json(r) for r in results["repeats"]],
        "error": [None if pd.isna(e) else str(e) for e in results["error"]],
    })
    with store.transaction() as con:
        con.execute("DELETE FROM block_measurements WHERE cpu_id = ? AND pass = ? AND hex IN "
                    "(SELECT unnest(?::VARCHAR[]))", [cpu_id, int(pass_), frame["hex"].tolist()])
        store.insert_frame("block_measurements", frame)
    return len(frame)


def block_measurements(store: Store, cpu_id: str | None = None, pass_: int | None = None) -> pd.DataFrame:
    """Stored measurements (all CPUs and passes unless named), ``repeats`` parsed back to lists."""
    clauses: list[str] = []
    params: list[Any] = []
    if cpu_id is not None:
        clauses.append("cpu_id = ?")
        params.append(cpu_id)
    if pass_ is not None:
        clauses.append("pass = ?")
        params.append(int(pass_))
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    frame = store._df(f"SELECT * FROM block_measurements {where} ORDER BY cpu_id, pass, hex", params)
    frame["repeats"] = [json.loads(r) if isinstance(r, str) else None for r in frame["repeats"]]
    return frame


def save_param_table(store: Store, name: str, arch: str, body: Mapping[str, Any],
                     provenance: Mapping[str, Any] | None = None) -> int:
    """Keep a parameter table (as its JSON document) under a unique name; returns its id."""
    if store._one("SELECT 1 FROM param_tables WHERE name = ?", [name]) is not None:
        raise StoreError(f"parameter table '{name}': exists already; choose another name")
    return int(store._scalar("INSERT INTO param_tables (name, arch, provenance, body) VALUES (?, ?, ?, ?) RETURNING id",
                             [name, arch, _json(dict(provenance or {})), _json(dict(body))]))


def param_table(store: Store, name: str) -> dict[str, Any]:
    """One stored table: ``name``, ``arch``, ``provenance``, ``body`` (parsed) and ``created_at``."""
    row = store._one("SELECT name, arch, provenance, body, created_at FROM param_tables WHERE name = ?", [name])
    if row is None:
        raise StoreError(f"parameter table '{name}': not found")
    return {"name": row[0], "arch": row[1], "provenance": json.loads(row[2]), "body": json.loads(row[3]),
            "created_at": row[4]}


def param_tables(store: Store) -> pd.DataFrame:
    frame = store._df("SELECT id, name, arch, provenance, created_at FROM param_tables ORDER BY id")
    frame["provenance"] = [json.loads(p) for p in frame["provenance"]]
    return frame


def reserve_evaluation_id(store: Store) -> int:
    """An evaluation id no other evaluation will take, for what is stored under it before the evaluation itself
    (an experiment's tables, kept as each is learnt); :func:`save_evaluation` takes it as ``evaluation_id``."""
    return int(store._scalar("SELECT nextval('simulator_evaluation_id_seq')"))


def save_evaluation(store: Store, *, arch: str, truth: str, cpu_id: str | None, summary: Any,
                    predictions: pd.DataFrame, evaluation_id: int | None = None) -> int:
    """An evaluation (its summary) and every block's prediction per predictor, in one transaction; under the
    id :func:`reserve_evaluation_id` gave, or a new one."""
    missing = [c for c in ("hex", "predictor", "cycles", "truth") if c not in predictions.columns]
    if missing:
        raise StoreError(f"evaluation predictions: missing column '{missing[0]}'")
    twice = predictions[predictions.duplicated(["hex", "predictor"])]
    if len(twice):
        raise StoreError(f"evaluation predictions: block {twice['hex'].iloc[0]} predicted twice by "
                         f"'{twice['predictor'].iloc[0]}'")
    with store.transaction() as con:
        evaluation_id = int(_first(con.execute(
            "INSERT INTO simulator_evaluations (id, arch, truth, cpu_id, summary)"
            " VALUES (coalesce(?, nextval('simulator_evaluation_id_seq')), ?, ?, ?, ?) RETURNING id",
            [evaluation_id, arch, truth, cpu_id, _json(summary)]).fetchone()))
        rows = predictions[["hex", "predictor", "cycles", "truth"]].copy()
        rows.insert(0, "evaluation_id", evaluation_id)
        store.insert_frame("simulator_predictions", rows)
    return evaluation_id


def evaluations(store: Store) -> pd.DataFrame:
    """Stored evaluations, newest first, ``summary`` parsed."""
    return json_frame(store, "SELECT id, arch, truth, cpu_id, summary, created_at FROM simulator_evaluations ORDER BY id DESC",
                      ["summary"])


def evaluation_predictions(store: Store, evaluation_id: int) -> pd.DataFrame:
    return store._df("SELECT hex, predictor, cycles, truth FROM simulator_predictions WHERE evaluation_id = ?"
                     " ORDER BY hex, predictor", [int(evaluation_id)])


def search_blocks(store: Store, decoder: str, text: str, limit: int = 200) -> list[str]:
    """Decoded blocks whose hex or instructions (assembly, opcode names) contain ``text``, case-insensitive."""
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = store._all("SELECT hex FROM blocks WHERE decoder = ? AND (hex ILIKE ? ESCAPE '\\' OR decoded ILIKE ? ESCAPE '\\')"
                      " ORDER BY n_instr, hex LIMIT ?", [decoder, pattern, pattern, int(limit)])
    return [str(r[0]) for r in rows]
