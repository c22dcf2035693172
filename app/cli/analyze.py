"""``tunelab analyze``: fit a formula on measurements, print ANOVA, coefficients, λ, ncvTest and the predicted minimum.

Measurements come from ``--csv`` or a stored ``--study`` (its successful measurements, the objective
as the response column); ``--predict-over`` names a file of candidates to report the predicted minimum
over. ``--propose`` (a study) prints the next step's proposed decision as the Analyze page shows it, by
the same function: the measurements that agree with the factors fixed so far, the model the step starts
from (or ``--formula``), each factor's test and reason, and the model's optimum over the valid space.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli._common import add_json
from app.cli._output import emit
from engine.analysis.options import ADJUSTMENTS, ANOVA_TYPES, FACTOR_RULES, REPEATS, TRANSFORMS
from engine.errors import UserError

if TYPE_CHECKING:
    import pandas as pd


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("analyze", help="fit a linear model: ANOVA, coefficients, Box-Cox, ncvTest, predicted minimum")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--csv", help="measurements (one row per configuration or per repeat)")
    source.add_argument("--study", help="a stored study's measurements")
    p.add_argument("--formula", help='model formula, e.g. "Y ~ x1 + x3 + I(x8^2) + x1:x3" (with --propose: default '
                   "the model the step starts from, as on the Analyze page)")
    p.add_argument("--transform", help=f"{' | '.join(TRANSFORMS)} | a number (lambda); default none (with --propose: "
                   "boxcox-round for a positive objective, as on the Analyze page)")
    p.add_argument("--anova-type", type=int, choices=ANOVA_TYPES, default=1, help="1 (sequential, R's aov), 2 or 3 (car)")
    p.add_argument("--repeats", choices=REPEATS, default="all", help="fit every repeat, or their mean per configuration")
    p.add_argument("--by", help="comma-separated configuration columns for --repeats mean (default: all but the response)")
    p.add_argument("--predict-over", metavar="FILE", help="CSV of candidate configurations: report the predicted minimum")
    p.add_argument("--propose", action="store_true", help="with --study: the proposed decision of the next step (the "
                   "factors to fix, their tests and levels, the predicted best), as the Analyze page shows it")
    p.add_argument("--threshold", type=float, default=0.05, help="--propose: significance threshold (default 0.05)")
    p.add_argument("--rule", choices=FACTOR_RULES, default="factor", help="--propose: fix a factor on its joint test "
                   "(factor, default) or on any one significant term (term: the DLMT paper's)")
    p.add_argument("--adjust", choices=ADJUSTMENTS, default="holm", help="--propose, factor rule: multiple testing "
                   "across the factors (default holm)")
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

    if args.propose:
        return _propose(args)
    if not args.formula:
        raise UserError("--formula: required (only --propose starts from the study's own model)")
    data, candidates = load_measurements(args)
    if args.predict_over:
        candidates = _read_csv(args.predict_over, "--predict-over")
    result = analyze(
        data,
        args.formula,
        transform=_transform(args.transform or "none"),
        anova_type=args.anova_type,
        candidates=candidates,
        repeats=args.repeats,
        by=check_columns(data, [c.strip() for c in args.by.split(",")], "--by") if args.by else None,
    )
    emit(result.to_dict(), args.json, result.to_text())
    return 0


def _propose(args: argparse.Namespace) -> int:
    """The next step's proposal of a study, as the Analyze page shows it."""
    from app.cli._common import open_store
    from engine.analysis.display import predicted_best_caption
    from workflows import StudySession

    if not args.study:
        raise UserError("--propose: needs --study (a proposal holds the study's fixed factors and its valid space)")
    if args.predict_over or args.repeats != "all" or args.by:
        raise UserError("--propose: --predict-over, --repeats and --by do not apply (the optimum is over the study's "
                        "valid space, on every measurement that agrees with the fixed factors)")
    if not 0 < args.threshold < 1:
        raise UserError(f"--threshold {args.threshold!r}: expected a p-value between 0 and 1")
    with open_store(args) as store:
        session = StudySession(store, args.study)
        proposal = session.proposal(args.formula, transform=None if args.transform is None else _transform(args.transform),
                                    anova_type=args.anova_type, threshold=args.threshold, rule=args.rule,
                                    adjust=args.adjust)
        objective = session.spec.objective
    decision = proposal.decision
    best = decision.evidence["predicted_best"]
    fixed = ", ".join(f"{k} = {v}" for k, v in proposal.fixed.items()) or "nothing"
    fix = ", ".join(f"{k} = {v}" for k, v in decision.proposed["fix"].items()) or "nothing"
    lines = [f"Step {proposal.step} (fixed so far: {fixed}); {proposal.analysis.summary.n} measurements agree.",
             proposal.analysis.to_text(), "", "Proposed decision:", *[f"- {line}" for line in decision.explanation],
             predicted_best_caption(best, objective), f"Fix: {fix}", f"Next model: {decision.proposed['formula']}"]
    record = decision.to_record()
    data = {"study": args.study, "step": proposal.step, "fixed": proposal.fixed, "analysis": proposal.analysis.to_dict(),
            "proposal": {"fix": decision.proposed["fix"], "formula": decision.proposed["formula"],
                         "transform": decision.proposed["transform"], "rule": decision.rule, "adjust": decision.adjust,
                         "reasons": list(decision.explanation), "predicted_best": best,
                         "factor_tests": record["evidence"].get("factor_tests")}}
    emit(data, args.json, "\n".join(lines))
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
