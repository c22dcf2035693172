"""Issue 30 §3 in chromium: a predicted best worse than the best measurement says so on Export and offers the
measured one (Export wrote a prediction 5 units worse than the measured best, with no warning)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_support import predicted_export, served, wait_ready
from tests.test_browser_proposal import prepare as prepare_toy_design
from tests.test_predicted_best import accept_proposal

pytestmark = pytest.mark.browser


def prepare(db: Path) -> None:
    """The toy after the Design page's defaults, and a decision accepted on a model of two inert factors."""
    prepare_toy_design(db)
    accept_proposal(db, "y ~ x2 + x4")


server = served(prepare)


def test_a_prediction_worse_than_the_measured_best_says_so_and_offers_the_measured_one(server, page):
    code = predicted_export(page, server)
    predicted = json.loads(code.inner_text())
    warning = page.locator("[data-testid='stAlert']", has_text="worse than the best measured")
    expect(warning).to_contain_text(f"{predicted['value']:.4g} is worse than the best measured")
    said = warning.inner_text()
    page.get_by_role("button", name="Export the measured best instead").click()
    wait_ready(page)
    expect(code).to_contain_text('"source": "measured"')
    measured = json.loads(code.inner_text())
    assert measured["value"] < predicted["value"] and f"best measured {measured['value']:.4g}" in said
    expect(page.get_by_role("radio", name="Measured")).to_be_checked()
