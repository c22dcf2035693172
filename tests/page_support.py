"""AppTest helpers of the Surrogates page's tests: the page opened on one section, a chart's figure, a table found
by a column, a form submitted by its button's label."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.test_pages import page


def open_section(section: str, timeout: float = 120) -> AppTest:
    """The Surrogates page opened on ``section`` (the section is in the URL), with no exception and no error."""
    at = page("surrogates.py")
    at.query_params["sg_section"] = section
    at.run(timeout=timeout)
    assert not at.exception and not at.error, (at.exception, at.error)
    return at


def figure(at: AppTest, key: str) -> dict[str, Any]:
    """The plotly figure (JSON) of the chart with that key."""
    spec: dict[str, Any] = json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)
    return spec


def table(at: AppTest, column: str) -> Any:
    """The first table on the page with that column (AppTest keeps no dataframe keys)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def submit(at: AppTest, label: str, timeout: float = 120) -> AppTest:
    next(b for b in at.button if b.label == label).click().run(timeout=timeout)
    return at
