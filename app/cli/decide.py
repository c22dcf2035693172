"""``tunelab decide``: accept, edit or reject the step decision a paused tuning run waits for.

    tunelab decide --study NAME accept [--by NAME] [--note TEXT]
    tunelab decide --study NAME edit --fix FACTOR=LEVEL [--fix ...] [--formula "y ~ ..."]
    tunelab decide --study NAME reject

The answer is appended to the decisions log; run the same ``tunelab tune`` command again to go on.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from app.cli._common import add_json, open_store
from app.cli._output import emit

if TYPE_CHECKING:
    from engine.space.factors import Space


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("decide", help="answer the decision a paused tuning run (tune without --auto) waits for")
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("action", choices=["accept", "edit", "reject"], help="what to do with the proposal")
    p.add_argument("--fix", action="append", default=None, metavar="FACTOR=LEVEL",
                   help="edit: fix FACTOR at LEVEL (repeat; replaces the proposed factors)")
    p.add_argument("--formula", help="edit: the model for the next step")
    p.add_argument("--by", default="analyst", help="your name for the decisions log (default %(default)s)")
    p.add_argument("--note", help="a note kept with the decision")
    add_json(p)
    p.set_defaults(func=run)


def parse_fix(items: list[str], space: Space) -> dict[str, Any]:
    """``FACTOR=LEVEL`` texts to a fix mapping; a level is matched against the factor's levels as text."""
    from engine.errors import UserError

    fix: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or name not in space.names:
            raise UserError(f"--fix {item!r}: expected FACTOR=LEVEL with a factor of the study")
        levels = {str(level).lower(): level for level in space.factor(name).levels}
        if text.lower() not in levels:
            raise UserError(f"--fix {item!r}: {text!r} is not a level of '{name}'")
        fix[name] = levels[text.lower()]
    return fix


def run(args: argparse.Namespace) -> int:
    from engine.errors import UserError
    from workflows import StudySession

    if args.action != "edit" and (args.fix is not None or args.formula):
        raise UserError(f"decide {args.action}: --fix and --formula go with 'edit'")
    with open_store(args) as store:
        session = StudySession(store, args.study)
        fix = parse_fix(args.fix, session.spec.space) if args.fix is not None else None
        step, decision = session.answer(args.action, args.by, fix=fix, formula=args.formula, note=args.note)
    data = {"study": args.study, "step": step, "outcome": decision.status, "chosen": decision.chosen}
    chosen = ", ".join(f"{k}={v}" for k, v in (decision.chosen or {}).get("fix", {}).items()) or "nothing"
    text = f"step {step}: {decision.status} (fix {chosen}); run the same `tunelab tune` command again to go on"
    emit(data, args.json, text)
    return 0
