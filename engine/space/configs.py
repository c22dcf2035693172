"""Canonical identities for configurations, so a configuration measured once is recognised again.

A configuration's key is the JSON list of its level values in factor order, each value normalised to
its factor's level (``4`` and ``4.0`` and ``"4"`` give the same key). Keys make "already measured?"
a set lookup for strategies, runners and storage alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import UserError, brief
from engine.io.jsonable import plain
from engine.space.factors import Space

if TYPE_CHECKING:  # pandas at run time only where a frame is built: listing studies needs none
    import pandas as pd


def config_keys(space: Space, frame: pd.DataFrame) -> list[str]:
    """Key of every row of ``frame`` (values must be levels of their factors)."""
    return _joined(space, space.to_level_index(frame).T.tolist(), len(frame))


def config_keys_of(space: Space, configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Key of every configuration of ``configs`` (mappings; values must be levels of their factors), without a frame:
    a campaign's round of results is keyed in a tenth of the time :func:`config_keys` takes to build one."""
    columns = []
    for f in space.factors:
        values = [config[f.name] for config in configs]
        index = f.index_of(values)
        if (index < 0).any():
            raise UserError(f"factor '{f.name}': value {brief(values[int(index.argmin())])} is not one of its levels")
        columns.append(index.tolist())
    return _joined(space, columns, len(configs))


def _joined(space: Space, columns: list[list[int]], rows: int) -> list[str]:
    """Keys from level indices, one list per factor: each level's JSON text once, joined as json.dumps writes a list."""
    texts = [[json.dumps(plain(level)) for level in f.levels] for f in space.factors]
    parts = [[texts[j][i] for i in column] for j, column in enumerate(columns)]
    return ["[" + ",".join(row) + "]" for row in zip(*parts)] if parts else ["[]"] * rows


def config_key(space: Space, config: Mapping[str, Any]) -> str:
    return config_keys_of(space, [config])[0]


def config_from_key(space: Space, key: str) -> dict[str, Any]:
    """The configuration ``key`` names, its values as :func:`frame_from_keys` holds them (``1.0`` for a floating
    factor's ``1``), from the key alone: no frame, no pandas."""
    return {f.name: float(v) if f.floating else v for f, v in zip(space.factors, json.loads(key))}


def frame_from_keys(space: Space, keys: list[str]) -> pd.DataFrame:
    """Configurations (one column per factor, natural dtypes) from their keys."""
    import pandas as pd

    if not keys:
        return pd.DataFrame({f.name: pd.Series(dtype=f.level_array().dtype) for f in space.factors})
    rows = [json.loads(k) for k in keys]
    frame = pd.DataFrame(rows, columns=space.names)
    return space.from_level_index(space.to_level_index(frame))
