"""TableRunner: an exhaustive table replayed; a configuration not in the table is ``invalid``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from engine.errors import UserError
from engine.runners.base import MeasureError, Runner, Trial, check_options
from engine.space.configs import config_keys
from engine.space.factors import Space


def key_of(space: Space, config: Mapping[str, Any]) -> str:
    """The configuration's key; a missing factor or a value that is no level makes it ``invalid``."""
    missing = [n for n in space.names if n not in config]
    if missing:
        raise MeasureError("invalid", f"configuration is missing factor '{missing[0]}'")
    try:
        return config_keys(space, pd.DataFrame([{n: config[n] for n in space.names}]))[0]
    except UserError as exc:
        raise MeasureError("invalid", str(exc)) from None


class TableRunner(Runner):
    """Looks a configuration up in a study's imported table: one value per configuration."""

    kind = "table"
    max_repeats = 1
    in_process = True
    OPTIONS = ("source",)

    def __init__(self, space: Space, table: pd.DataFrame, **common: Any) -> None:
        super().__init__(**common)
        missing = [c for c in (*space.names, "value") if c not in table.columns]
        if missing:
            raise UserError(f"runner 'table': the table has no column '{missing[0]}'")
        self.space = space
        keys = config_keys(space, table)
        status = table["status"] if "status" in table else pd.Series("ok", index=table.index)
        error = table["error"] if "error" in table else pd.Series(None, index=table.index, dtype=object)
        rows = zip(keys, table["value"].tolist(), status.tolist(), error.tolist())
        self.rows: dict[str, tuple[float | None, str, str | None]] = {}
        for key, value, state, message in rows:
            self.rows.setdefault(key, (value, str(state), message if isinstance(message, str) else None))

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], *, space: Space | None = None, table: pd.DataFrame | None = None,
                  **_: object) -> TableRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        if space is None or table is None:
            raise UserError("runner 'table': needs the study's space and its imported table (Store.study_table)")
        return cls(space, table, **cls.common(spec))

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        key = key_of(self.space, config)
        if key not in self.rows:
            raise MeasureError("invalid", "configuration is not in the table")
        value, status, error = self.rows[key]
        if status != "ok":
            raise MeasureError(status if status in ("failed", "timeout", "invalid") else "failed",
                               error or f"table row has status {status}")
        assert value is not None  # an ok row has a value
        return Trial(values=[float(value)], metadata={"source": "table"})
