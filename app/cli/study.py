"""``tunelab study list|show|create|delete``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from app.cli._common import add_json, open_store
from app.cli._output import emit, table_text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    study = sub.add_parser("study", help="list, show, create or delete studies")
    actions = study.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    p = actions.add_parser("list", help="list studies")
    add_json(p)
    p.set_defaults(func=_list)

    p = actions.add_parser("show", help="show one study")
    p.add_argument("name")
    add_json(p)
    p.set_defaults(func=_show)

    p = actions.add_parser("create", help="create a study from a spec file (YAML or TOML)")
    p.add_argument("--spec", required=True, help="study spec file")
    p.add_argument("--name", help="override the spec's name")
    add_json(p)
    p.set_defaults(func=_create)

    p = actions.add_parser("delete", help="delete a study and everything stored for it")
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_json(p)
    p.set_defaults(func=_delete)


def _list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        rows = store.study_rows()
    columns = ["name", "objective", "direction", "runner", "factors", "size", "table_valid", "measured", "measurements"]
    text = table_text(rows, columns) if rows else "no studies"
    emit([{**{c: row[c] for c in columns}, "created_at": str(row["created_at"])} for row in rows], args.json, text)
    return 0


def _show(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        study = store.get_study(args.name)
        summary = store.list_studies().set_index("name").loc[args.name]
        designs = store.designs(args.name)
    space = study.spec.space
    data = {
        **study.spec.to_dict(),
        "id": study.id,
        "created_at": str(study.created_at),
        "size": space.size,
        "table_rows": int(summary["table_rows"]),
        "table_valid": int(summary["table_valid"]),
        "measured_configurations": int(summary["measured"]),
        "measurements": int(summary["measurements"]),
        "designs": designs[["id", "name", "kind", "rows", "pending"]].to_dict(orient="records"),
    }
    lines = [f"study {study.name} ({study.spec.direction} {study.spec.objective}, runner {study.spec.runner['kind']})"]
    lines += [f"  {f.name:24s} {f.kind:11s} {len(f.levels):3d} levels: {_short(f.levels)}" for f in space.factors]
    lines += [f"  constraint: {c}" for c in space.constraints]
    lines.append(f"size {space.size:,}; table rows {data['table_rows']:,} ({data['table_valid']:,} valid); "
                 f"measured {data['measured_configurations']:,} configurations, {data['measurements']:,} measurements")
    lines += [f"  design {d['id']} {d['name']} ({d['kind']}): {d['rows']} rows, {d['pending']} pending" for d in data["designs"]]
    emit(data, args.json, "\n".join(lines))
    return 0


def _short(levels: Sequence[object]) -> str:
    shown = ", ".join(str(v) for v in levels[:8])
    return shown + (f", … ({len(levels)})" if len(levels) > 8 else "")


def _create(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from engine.io.spec import load_spec

    spec = load_spec(args.spec)
    if args.name:
        spec = replace(spec, name=args.name)
    with open_store(args) as store:
        study = store.create_study(spec)
    emit({"created": study.name, "id": study.id, "size": spec.space.size}, args.json,
         f"created study '{study.name}' ({spec.space.size:,} configurations before constraints)")
    return 0


def _delete(args: argparse.Namespace) -> int:
    import sys

    if not args.yes:
        if not sys.stdin.isatty():
            raise ValueError(f"study delete '{args.name}': pass --yes to confirm (no terminal to ask)")
        answer = input(f"Delete study '{args.name}' and all its measurements? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not deleted")
            return 1
    with open_store(args) as store:
        store.delete_study(args.name)
    emit({"deleted": args.name}, args.json, f"deleted study '{args.name}'")
    return 0
