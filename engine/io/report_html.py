"""A self-contained HTML study report: space, measurements, best configuration, designs, ANOVA
tables, the decisions log and figures, in one file that opens anywhere without a network.

Pure functions over DataFrames and dicts: the caller (CLI, page) gathers them from the store.
Figures are plotly figures (embedded with plotly.js inline, once) or SVG text; the built-in
progress chart is SVG, so a report without plotly figures stays small.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.display import readable_table
from engine.study import StudySpec

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left}
td,.notes{white-space:pre-line}
th{background:#f4f4f4}.muted{color:#666}
.warning{background:#fff8e1;color:#6b4a00;padding:.25rem .5rem}.figure{margin:1rem 0}code{background:#f4f4f4;padding:0 .2rem}
"""
_COLORS = {"points": "#4c78a8", "best": "#e45756", "axis": "#888"}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell(value: Any) -> Any:
    """Missing values as blanks (None, NaN, pd.NA alike), anything else not a string as its text."""
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value if isinstance(value, str) else str(value)


def _table(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    if frame is None or frame.empty:
        return '<p class="muted">none</p>'
    shown = frame[[c for c in (columns or frame.columns) if c in frame.columns]].copy()
    for column in shown.columns:
        if shown[column].dtype == object or pd.api.types.is_extension_array_dtype(shown[column].dtype):
            shown[column] = shown[column].astype(object).map(_cell)
    return str(shown.to_html(index=False, escape=True, na_rep="", border=0,
                         float_format=lambda x: f"{x:.6g}"))


def progress_data(spec: StudySpec, measurements: pd.DataFrame) -> pd.DataFrame:
    """Ok measurements in the order they were stored, with the best value found so far."""
    if measurements is None or measurements.empty or "value" not in measurements:
        return pd.DataFrame({"order": [], "value": [], "best_so_far": []})
    frame = measurements
    if "status" in frame:
        frame = frame[frame["status"] == "ok"]
    values = pd.to_numeric(frame["value"], errors="coerce").dropna().to_numpy(dtype=float)
    best = np.minimum.accumulate(values) if spec.direction == "minimize" else np.maximum.accumulate(values)
    return pd.DataFrame({"order": np.arange(1, len(values) + 1), "value": values, "best_so_far": best})


def progress_svg(data: pd.DataFrame, objective: str, width: int = 720, height: int = 300) -> str:
    """Every ok measurement (dots) and the best so far (a step line) as an SVG chart."""
    if data.empty:
        return ""
    left, right, top, bottom = 70, 15, 15, 40
    x, y, best = data["order"].to_numpy(float), data["value"].to_numpy(float), data["best_so_far"].to_numpy(float)
    x_lo, x_hi = 1.0, max(float(x.max()), 2.0)
    y_lo, y_hi = float(y.min()), float(y.max())
    if y_hi == y_lo:
        y_lo, y_hi = y_lo - 1.0, y_hi + 1.0

    def px(v: float) -> float:
        return left + (v - x_lo) / (x_hi - x_lo) * (width - left - right)

    def py(v: float) -> float:
        return top + (y_hi - v) / (y_hi - y_lo) * (height - top - bottom)

    dots = "".join(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="2.5"/>' for a, b in zip(x, y))
    steps = [f"{px(x[0]):.1f},{py(best[0]):.1f}"]
    for i in range(1, len(x)):
        steps += [f"{px(x[i]):.1f},{py(best[i - 1]):.1f}", f"{px(x[i]):.1f},{py(best[i]):.1f}"]
    ticks = "".join(
        f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{_e(f"{v:.4g}")}</text>' for v in (y_lo, y_hi)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11" '
        f'font-family="sans-serif" role="img" aria-label="{_e(objective)} by measurement">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="{_COLORS["axis"]}"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="{_COLORS["axis"]}"/>{ticks}'
        f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle">measurement (1..{len(x)})</text>'
        f'<text x="14" y="{(top + height - bottom) / 2}" transform="rotate(-90 14 {(top + height - bottom) / 2})" '
        f'text-anchor="middle">{_e(objective)}</text>'
        f'<g fill="{_COLORS["points"]}" fill-opacity="0.6">{dots}</g>'
        f'<polyline fill="none" stroke="{_COLORS["best"]}" stroke-width="2" points="{" ".join(steps)}"/></svg>'
    )


def _space_section(spec: StudySpec) -> str:
    rows = pd.DataFrame([{"factor": f.name, "kind": f.kind, "levels": len(f.levels),
                          "values": ", ".join(map(str, f.levels[:12])) + (" …" if len(f.levels) > 12 else "")}
                         for f in spec.space.factors])
    constraints = "".join(f"<li><code>{_e(c)}</code></li>" for c in spec.space.constraints)
    return (f"<h2>Search space</h2><p>{len(spec.space.factors)} factors, {spec.space.size:,} configurations before "
            f"constraints.</p>{_table(rows)}" + (f"<p>Constraints:</p><ul>{constraints}</ul>" if constraints else ""))


def _measurement_section(spec: StudySpec, measurements: pd.DataFrame) -> str:
    if measurements is None or measurements.empty:
        return '<h2>Measurements</h2><p class="muted">none yet</p>'
    counts = measurements["status"].value_counts() if "status" in measurements else pd.Series({"ok": len(measurements)})
    configs = len(measurements.drop_duplicates(subset=spec.space.names))
    text = ", ".join(f"{int(n):,} {_e(s)}" for s, n in counts.items())
    top = ""
    ok = measurements[measurements["status"] == "ok"] if "status" in measurements else measurements
    if not ok.empty:
        means = ok.groupby(spec.space.names, sort=False)["value"].agg(["mean", "std", "count"]).reset_index()
        means = means.sort_values("mean", ascending=spec.direction == "minimize").head(10)
        top = f"<p>Best 10 configurations by mean {_e(spec.objective)}:</p>" + _table(means)
    return f"<h2>Measurements</h2><p>{len(measurements):,} measurements of {configs:,} configurations: {text}.</p>{top}"


def _best_section(best: Any) -> str:
    if best is None:
        return ""
    interval = ""
    if getattr(best, "lower", None) is not None and getattr(best, "upper", None) is not None:
        interval = f" ({best.level:.0%} interval {best.lower:.6g} .. {best.upper:.6g})"
    config = pd.DataFrame([{"factor": k, "value": v} for k, v in best.config.items()])
    notes = list(getattr(best, "warnings", []))
    if getattr(best, "undetermined", ()):
        notes.insert(0, f"not determined by the model: {', '.join(best.undetermined)}")
    how = f" {_e(best.search)}." if getattr(best, "search", "") else ""
    heading = "Best configuration (measured)" if best.source == "measured" else \
        "Best configuration predicted by the latest model (never measured)"
    return (f"<h2>{heading}</h2><p>{_e(best.objective)} = {best.value:.6g}{_e(interval)}"
            f"{f', {best.repeats} repeats' if best.repeats else ''}.{how}</p>"
            + "".join(f'<p class="warning">{_e(line)}</p>' for line in notes) + _table(config))


def _figure_html(figure: Any, first_plotly: bool) -> tuple[str, bool]:
    if isinstance(figure, str):
        if not figure.lstrip().startswith("<svg"):
            raise ValueError("report figure: text figures must be SVG (start with '<svg')")
        return figure, first_plotly
    return figure.to_html(full_html=False, include_plotlyjs=first_plotly, default_width="100%"), False


def study_report(
    spec: StudySpec,
    measurements: pd.DataFrame | None = None,
    *,
    designs: pd.DataFrame | None = None,
    anova: Mapping[str, pd.DataFrame] | pd.DataFrame | None = None,
    fit_warnings: Mapping[str, Sequence[str]] | None = None,  # per ANOVA table, what its fit warned of
    decisions: pd.DataFrame | None = None,  # as a person reads it: engine.analysis.study_data.readable_log
    figures: Sequence[tuple[str, Any]] = (),
    best: Any = None,
    predicted: Any = None,  # the latest model's predicted best (engine.io.best.BestConfig), beside the measured one
    title: str | None = None,
    generated_at: datetime | None = None,
    notes: str = "",
) -> str:
    """The report as one HTML document (UTF-8 text; nothing fetched when opened)."""
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    heading = title or f"Tunelab study report: {spec.name}"
    runner = ", ".join(f"{k}={v}" for k, v in dict(spec.runner).items() if not isinstance(v, (list, dict)))
    parts = [
        f"<h1>{_e(heading)}</h1>",
        f'<p class="muted">Generated {when}.</p>',
        f"<p>{_e(spec.description)}</p>" if spec.description else "",
        f"<p>Objective: <b>{_e(spec.direction)} {_e(spec.objective)}</b>. Runner: <code>{_e(runner)}</code>.</p>",
        f'<h2>Notes</h2><p class="notes">{_e(notes)}</p>' if notes.strip() else "",
        _space_section(spec),
        _measurement_section(spec, measurements),
        _best_section(best),
        _best_section(predicted),
    ]
    if designs is not None:
        parts.append("<h2>Designs</h2>" + _table(designs, ["id", "name", "kind", "formula", "step", "rows", "pending",
                                                           "created_at"]))
    if anova is not None:
        tables = {"ANOVA": anova} if isinstance(anova, pd.DataFrame) else dict(anova)
        warned = fit_warnings or {}
        parts.append("<h2>ANOVA</h2>" + "".join(
            f"<h3>{_e(name)}</h3>" + "".join(f'<p class="warning">Warning: {_e(line)}</p>' for line in warned.get(name, ()))
            + _table(readable_table(t)) for name, t in tables.items()))
    if decisions is not None:
        parts.append("<h2>Decisions log</h2>" + _table(decisions))
    data = progress_data(spec, measurements)
    shown = ([("Progress: every measurement and the best so far", progress_svg(data, spec.objective))]
             if not data.empty else []) + list(figures)
    if shown:
        parts.append("<h2>Figures</h2>")
        first_plotly = True
        for caption, figure in shown:
            body, first_plotly = _figure_html(figure, first_plotly)
            parts.append(f'<div class="figure"><h3>{_e(caption)}</h3>{body}</div>')
    body = "\n".join(p for p in parts if p)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(heading)}</title>'
            f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")
