"""``tunelab analyze``: fit a formula on measurements, print ANOVA, coefficients, λ, ncvTest and the predicted minimum.

Measurements come from ``--csv`` or a stored ``--study`` (its successful measurements, the objective
as the response column); a study is also predicted over its own candidate set unless
``--predict-over`` names a file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli._common import add_json
from app.cli._output import emit
from engine.analysis.options import ANOVA_TYPES, REPEATS, TRANSFORMS
from engine.errors import UserError

if TYPE_CHECKING:
    import pandas as pd


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("analyze", help="fit a linear model: ANOVA, coefficients, Box-Cox, ncvTest, predicted minimum")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--csv", help="measurements (one row per configuration or per repeat)")
    source.add_argument("--study", help="a stored study's measurements")
    p.add_argument("--formula", required=True, help='model formula, e.g. "Y ~ x1 + x3 + I(x8^2) + x1:x3"')
    p.add_argument("--transform", default="none", help=f"{' | '.join(TRANSFORMS)} | a number (lambda); default none")
    p.add_argument("--anova-type", type=int, choices=ANOVA_TYPES, default=1, help="1 (sequential, R's aov), 2 or 3 (car)")
    p.add_argument("--repeats", choices=REPEATS, default="all", help="fit every repeat, or their mean per configuration")
    p.add_argument("--by", help="comma-separated configuration columns for --repeats mean (default: all but the response)")
    p.add_argument("--predict-over", metavar="FILE", help="CSV of candidate configurations: report the predicted minimum")
    add_json(p)
    p.set_defaults(func=run)


def load_measurements(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(measurements, default candidates) from ``--csv`` or ``--study``."""
    if args.csv:
        return _read_csv(args.csv, "--csv"), None
    from app.cli._common import open_store
    from workflows import StudySession

    with open_store(args) as store:
        session = StudySession(store, args.study)
        return session.analysis_data(), session.candidates()


def run(args: argparse.Namespace) -> int:
    from engine.analysis import analyze  # statsmodels: import only when the command runs
    from engine.analysis.data import check_columns

    data, candidates = load_measurements(args)
    if args.predict_over:
        candidates = _read_csv(args.predict_over, "--predict-over")
    result = analyze(
        data,
        args.formula,
        transform=_transform(args.transform),
        anova_type=args.anova_type,
        candidates=candidates,
        repeats=args.repeats,
        by=check_columns(data, [c.strip() for c in args.by.split(",")], "--by") if args.by else None,
    )
    emit(result.to_dict(), args.json, result.to_text())
    return 0


def _transform(text: str) -> str | float:
    if text in TRANSFORMS:
        return text
    try:
        return float(text)
    except ValueError:
        raise UserError(f"--transform {text!r}: expected one of {', '.join(TRANSFORMS)} or a number") from None


def _read_csv(path: str, option: str) -> pd.DataFrame:
    import pandas as pd

    from engine.io.table_import import unquote_frame

    if not Path(path).is_file():
        raise UserError(f"{option} {path!r}: no such file")
    try:
        return unquote_frame(pd.read_csv(path))  # an export's text cells are quoted for spreadsheets
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{option} {path!r}: not a readable CSV ({str(exc).splitlines()[0]})") from None
