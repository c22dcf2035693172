"""Canonical identities for configurations, so a configuration measured once is recognised again.

A configuration's key is the JSON list of its level values in factor order, each value normalised to
its factor's level (``4`` and ``4.0`` and ``"4"`` give the same key). Keys make "already measured?"
a set lookup for strategies, runners and storage alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.io.jsonable import plain
from engine.space.factors import Space

if TYPE_CHECKING:  # pandas at run time only where a frame is built: listing studies needs none
    import pandas as pd


def config_keys(space: Space, frame: pd.DataFrame) -> list[str]:
    """Key of every row of ``frame`` (values must be levels of their factors)."""
    index = space.to_level_index(frame)
    # Each level's JSON text once; a key is the row's texts joined as json.dumps would write the list.
    texts = [[json.dumps(plain(level)) for level in f.levels] for f in space.factors]
    columns = [[texts[j][i] for i in column] for j, column in enumerate(index.T.tolist())]
    return ["[" + ",".join(parts) + "]" for parts in zip(*columns)] if columns else ["[]"] * len(frame)


def config_key(space: Space, config: Mapping[str, Any]) -> str:
    import pandas as pd

    return config_keys(space, pd.DataFrame([{name: config[name] for name in space.names}]))[0]


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
