"""``tunelab design KIND``: generate a design from a spec file or a candidate table.

Kinds: ``factorial``, ``random``, ``lhs``, ``pb``, ``fracfact``, ``dopt`` (plus ``types`` to list
them). The configurations come from ``--spec FILE`` (a study spec: its space) or ``--candidates
FILE.csv[.gz]`` (a table of valid configurations); :func:`load_source` is the one place that turns
options into a source, so another source (a stored study) is one more branch there.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.cli._common import MAX_RUNS, MAX_SEED, add_json, bounded, output_place, write_output
from app.cli._output import emit
from engine.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from engine.design import DesignResult
    from engine.space.factors import Space


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    design = sub.add_parser("design", help="generate an experimental design (factorial, lhs, pb, dopt, ...)")
    kinds = design.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True

    p = kinds.add_parser("types", help="list the design types")
    add_json(p)
    p.set_defaults(func=_types)

    p = _kind(kinds, "factorial", "every valid configuration")
    p.add_argument("--seed", type=int, action=bounded(0, MAX_SEED), help="randomise the run order with this seed")

    p = _kind(kinds, "random", "distinct valid configurations drawn uniformly")
    p.add_argument("--runs", type=int, action=bounded(1, MAX_RUNS), required=True)
    p.add_argument("--seed", type=int, action=bounded(0, MAX_SEED))

    p = _kind(kinds, "lhs", "maximin Latin hypercube over level indices")
    p.add_argument("--runs", type=int, action=bounded(1, MAX_RUNS), required=True)
    p.add_argument("--seed", type=int, action=bounded(0, MAX_SEED))
    p.add_argument("--tries", type=int, default=20, action=bounded(1, 1000), help="random hypercubes compared for maximin (default 20)")

    p = _kind(kinds, "pb", "Plackett-Burman screening design (low/high levels)")
    p.add_argument("--runs", type=int, action=bounded(1, MAX_RUNS), help="a multiple of 4 >= factors + 1 (default: smallest)")
    p.add_argument("--seed", type=int, action=bounded(0, MAX_SEED), help="randomise the run order with this seed")

    p = _kind(kinds, "fracfact", "two-level fractional factorial 2^(k-p)")
    p.add_argument("--runs", type=int, action=bounded(1, MAX_RUNS), help="a power of two (default: smallest >= factors + 1)")
    p.add_argument(
        "--generators", action="append", default=[],
        help="e.g. 'x5 = x1*x2*x3'; repeat or separate with ';' (default: best resolution)",
    )
    p.add_argument("--seed", type=int, action=bounded(0, MAX_SEED), help="randomise the run order with this seed")

    p = _kind(kinds, "dopt", "D-optimal (or A-, I-optimal) design by Fedorov exchange")
    p.add_argument("--formula", required=True, help="model, e.g. '~ x1 + x2 + I(x2^2) + x1:x2'")
    p.add_argument("--trials", type=int, required=True, action=bounded(1, MAX_RUNS), help="number of runs to choose (forced rows not counted)")
    p.add_argument("--repeats", type=int, default=5, action=bounded(1, 1000), help="random starts (default 5, as AlgDesign)")
    p.add_argument("--seed", type=int, action=bounded(0, MAX_SEED))
    p.add_argument("--criterion", default="D", help="D (default), A or I")
    p.add_argument("--forced", default="", help="0-based candidate rows kept in the design, e.g. '0,7,12'")
    p.add_argument("--exclude", default="", help="0-based candidate rows never chosen")
    p.add_argument("--polish", type=int, default=12, action=bounded(0, 1000), help="polishing rounds per start (default 12)")


def _kind(kinds: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str) -> argparse.ArgumentParser:
    p = kinds.add_parser(name, help=help_text)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--spec", help="study spec file (YAML or TOML): design over its space")
    source.add_argument("--candidates", help="CSV (optionally .gz) of valid configurations")
    source.add_argument("--study", help="a stored study: design over its valid configurations and save the "
                                        "design into it as pending measurements")
    p.add_argument("--factors", help="comma-separated candidate columns that are factors (default: all)")
    p.add_argument("--out", help="also write the design to this CSV file")
    add_json(p)
    p.set_defaults(func=_run)
    return p


def load_source(args: argparse.Namespace) -> Space | pd.DataFrame:
    """The configurations a design draws from: a spec's space, or a candidate table."""
    if args.spec:
        from engine.io.spec import load_spec

        return load_spec(args.spec).space
    if args.study:
        from app.cli._common import open_store
        from workflows import StudySession

        with open_store(args) as store:
            session = StudySession(store, args.study)
            enumerable = session.is_table or session.spec.space.enumerable
            return session.candidates() if enumerable else session.spec.space
    import pandas as pd

    from engine.io.table_import import unquote_frame

    try:
        frame = unquote_frame(pd.read_csv(args.candidates))  # a --out file of ours: its text cells are quoted
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise UserError(f"--candidates {args.candidates!r}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    if not len(frame):
        raise UserError(f"candidates {args.candidates!r}: no rows")
    return frame


def _rows(text: str, what: str) -> list[int]:
    try:
        return [int(part) for part in text.replace(";", ",").split(",") if part.strip()]
    except ValueError:
        raise UserError(f"--{what} {text!r}: expected comma-separated row numbers") from None


def _generate(args: argparse.Namespace) -> DesignResult:
    import pandas as pd

    from engine.design import CandidateTable, fractional_factorial, full_factorial, latin_hypercube, optimal_design, plackett_burman, random_design

    source = load_source(args)
    if args.kind == "dopt":
        chosen: DesignResult = optimal_design(
            source,
            args.formula,
            args.trials,
            repeats=args.repeats,
            seed=args.seed,
            criterion=args.criterion,
            forced=_rows(args.forced, "forced"),
            exclude=_rows(args.exclude, "exclude"),
            polish=args.polish,
        )
        return chosen
    if isinstance(source, pd.DataFrame):
        factors = [f.strip() for f in args.factors.split(",") if f.strip()] if args.factors else None
        source = CandidateTable(source, factors)
    if args.kind == "factorial":
        return full_factorial(source, seed=args.seed)
    if args.kind == "random":
        return random_design(source, args.runs, seed=args.seed)
    if args.kind == "lhs":
        return latin_hypercube(source, args.runs, seed=args.seed, tries=args.tries)
    if args.kind == "pb":
        return plackett_burman(source, runs=args.runs, seed=args.seed)
    generators = [g for text in args.generators for g in text.split(";") if g.strip()]
    return fractional_factorial(source, runs=args.runs, generators=generators, seed=args.seed)


def _summary(result: DesignResult) -> list[str]:
    lines = [f"{result.kind}: {result.runs} runs in {result.seconds:.3f} s"]
    info = result.info
    if result.criteria:
        c = result.criteria
        lines[0] += f"; k = {info['k']} coefficients, {info['candidates']:,} candidates, criterion {info['criterion']}"
        lines.append(f"D {c['D']:.6g}  A {c['A']:.6g}  I {c['I']:.6g}  Ge {c['Ge']:.3f}  Dea {c['Dea']:.3f}")
        lines.append(f"repeats {result.repeats}  exchanges {info['exchanges']}  failed starts {info['failed_starts']}")
    if "resolution" in info:
        lines.append(f"resolution {info['resolution'] or 'full factorial'}; generators: {'; '.join(info['generators']) or 'none'}")
    if info.get("dummies"):
        lines.append(f"dummy columns: {', '.join(info['dummies'])}")
    if info.get("dropped_invalid"):
        lines.append(f"dropped {info['dropped_invalid']} invalid runs")
    if info.get("dropped_duplicate"):
        lines.append(f"dropped {info['dropped_duplicate']} repeated runs")
    if result.forced:
        lines.append(f"forced rows: {' '.join(map(str, result.forced))}")
    if result.rows is not None:
        lines.append(f"rows: {' '.join(map(str, result.rows))}")
    return lines


def _run(args: argparse.Namespace) -> int:
    result = _generate(args)
    if args.out:
        from engine.io.export import csv_text

        write_output(args, csv_text(result.design), *output_place(args.out))
    lines = _summary(result) + ([] if args.kind == "dopt" else ["", result.design.to_string(index=False)])
    data = result.to_dict()
    if args.study:
        data["design_id"] = _save(args, result)
        lines.append(f"saved as design {data['design_id']} of study '{args.study}' (pending measurements)")
    emit(data, args.json, "\n".join(lines))
    return 0


def _save(args: argparse.Namespace, result: DesignResult) -> int:
    from app.cli._common import open_store

    params = {k: v for k, v in vars(args).items() if k in ("trials", "runs", "repeats", "seed", "criterion")}
    forced = set(result.forced)
    with open_store(args) as store:
        study = store.get_study(args.study)
        return store.save_design(study, result.design, name=f"{args.kind} ({result.runs} runs)", kind=args.kind,
                                 formula=getattr(args, "formula", None), params=params, criteria=result.criteria,
                                 forced=[r in forced for r in result.rows] if result.rows is not None else None)


def _types(args: argparse.Namespace) -> int:
    from engine.design import design_types

    types = design_types()
    text = "\n".join(f"{t.name:10s} {t.label:22s} {t.summary}" for t in types)
    emit([t.__dict__ for t in types], args.json, text)
    return 0
