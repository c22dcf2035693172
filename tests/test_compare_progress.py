"""The Compare page's progress line (issue 31 §2): counts per strategy after every run, the time left, and,
while a slow run holds the count still, how long ago the last one ended."""

from __future__ import annotations

from app.compare_progress import QUIET_S, CompareProgress


def test_the_line_counts_each_unfinished_strategy_and_drops_the_finished():
    counts = CompareProgress(["RS", "BO"], reps=2)
    assert counts.fraction == 0.0
    counts(1, 4, "RS")
    counts(2, 4, "RS")
    counts(3, 4, "BO")
    now = counts.last_run_at
    assert counts.fraction == 0.75
    assert counts.text(None, now=now) == "3/4 runs · BO 1/2"
    assert counts.text(12.4, now=now) == "3/4 runs · BO 1/2 · about 12 s left"


def test_a_count_standing_still_says_when_the_last_run_ended():
    counts = CompareProgress(["BO"], reps=20)
    counts(1, 20, "BO")
    assert "ago" not in counts.text(None, now=counts.last_run_at + QUIET_S - 1)
    assert counts.text(None, now=counts.last_run_at + 37.2).endswith("· last run ended 37 s ago")
