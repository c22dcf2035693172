"""A background job's time left comes from the throughput it was seen to make, never from its start-up."""

from __future__ import annotations

import pytest

import app.jobs as jobs
from app.jobs import Job


def test_the_time_left_waits_for_measured_progress_and_ignores_the_start_up(monkeypatch):
    clock = iter([100.0, 115.0, 116.0, 117.0, 117.5])
    monkeypatch.setattr(jobs.time, "time", lambda: next(clock))
    job = Job(key="k", label="run")
    assert job.eta_seconds(0.0) is None  # t = 100: the pool starts
    assert job.eta_seconds(0.125) is None  # t = 115: the first result, 15 s in: no throughput yet
    assert job.eta_seconds(0.25) == pytest.approx(6.0)  # 1 s per eighth: 6 eighths left, not 45 s
    assert job.eta_seconds(0.375) == pytest.approx(5.0)
    assert job.eta_seconds(0.375) == pytest.approx(5.0)  # a poll without progress keeps the estimate


def test_no_time_left_is_said_when_done_or_before_anything_moved(monkeypatch):
    monkeypatch.setattr(jobs.time, "time", lambda: 5.0)
    job = Job(key="k", label="run")
    assert job.eta_seconds(0.5) is None and job.eta_seconds(1.0) is None
