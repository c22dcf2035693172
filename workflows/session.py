"""StudySession: one study in one store, and every use case a page or a command runs on it.

The session owns the wiring that used to be repeated by each interface: a table study's table
feeding its runner, runner → executor → campaign → store recorder, the tuning loop with its
decisions log, the predicted best from the latest model, and exports logged in the store. Pages
and CLI commands call one method per action, so both do the same thing for the same action.

Importing the session imports the store and nothing numeric: each method imports what it runs, so a light
command (``tunelab export best`` of a measured best) starts without pandas (0.5-0.7 s of CPU).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError, brief
from engine.io.best import BestConfig, best_filename, best_of, best_predicted, export_best
from engine.io.files import export_target, safe_filename, write_export
from engine.space.configs import config_from_key
from engine.study import StudySpec
from storage import Store, StoredStudy, database_files

if TYPE_CHECKING:
    import pandas as pd

    from engine.analysis.decision import Decision
    from engine.analysis.fit import LinearModel
    from engine.analysis.optimum import Optimum
    from engine.analysis.study_data import NextStep
    from engine.analysis.summary import Analysis
    from engine.execution import Campaign, Progress
    from engine.execution.tuning import TuningResult
    from engine.io.table_import import ImportedTable, Source
    from engine.runners.base import Runner
    from engine.space.factors import Space
    from workflows.recording import Echo

BEST_SOURCES = ("measured", "predicted")
STUDY_FORMATS = ("json", "csv")


@dataclass(frozen=True)
class Measured:
    """What :meth:`StudySession.measure` did: which design, with which runner, and its progress."""

    design_id: int
    runner: dict[str, Any]  # Runner.describe(): its kind and settings
    progress: Progress


@dataclass(frozen=True)
class Tuned:
    """What :meth:`StudySession.tune` did, and the decision the run waits for, if any."""

    strategy: str
    step: int
    result: TuningResult
    waiting: Decision | None  # the proposal the run waits for a person to answer


@dataclass(frozen=True)
class Proposal:
    """What the Analyze page shows for a step: the analysis of the measurements that agree with the factors
    fixed so far, and the proposed decision on it."""

    step: int
    fixed: dict[str, Any]
    analysis: Analysis
    decision: Decision


@dataclass(frozen=True)
class Written:
    """A file an export wrote, and whether it replaced an existing one."""

    path: Path
    replaced: bool


class StudySession:
    """One study in one store. Cheap to create: make one per action."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.study: StoredStudy = store.get_study(name)
        self._table: pd.DataFrame | None = None

    # -- what the study is made of -----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.study.name

    @property
    def spec(self) -> StudySpec:
        return self.study.spec

    @property
    def is_table(self) -> bool:
        return self.spec.runner.get("kind") == "table"

    def table(self) -> pd.DataFrame | None:
        """The imported table of a table study (what its runner replays), else None."""
        if self.is_table and self._table is None:
            self._table = self.store.study_table(self.name)
        return self._table

    def runner(self) -> Runner:
        from engine.runners import runner_from_spec

        return runner_from_spec(self.spec.runner, space=self.spec.space, table=self.table())

    def candidates(self, fixed: Mapping[str, Any] | None = None, seed: int = 0) -> pd.DataFrame:
        """Where a model looks for the best configuration, with ``fixed`` factors held."""
        from engine.analysis.study_data import candidate_set

        return candidate_set(self.spec, self.table(), seed=seed, fixed=dict(fixed or {}))

    def candidates_sampled(self, fixed: Mapping[str, Any] | None = None) -> bool:
        """Whether :meth:`candidates` is a uniform sample of a space too large to list, not all of it."""
        from engine.analysis.study_data import candidates_sampled

        return candidates_sampled(self.spec, self.table(), dict(fixed or {}))

    def valid_space(self) -> Space | pd.DataFrame:
        """Every valid configuration: a table study's rows (its table lists them), else the study's space."""
        table = self.table()
        if table is not None and len(table):
            return table.loc[table["status"] == "ok", self.spec.space.names].reset_index(drop=True)
        return self.spec.space

    def _reference(self) -> dict[str, Any] | None:
        """The best measured configuration: the levels of factors a model leaves open."""
        best = self.measured_best_or_none()
        return dict(best.config) if best is not None else None

    def optimum(self, model: LinearModel, fixed: Mapping[str, Any] | None = None, seed: int = 0,
                start: Mapping[str, Any] | None = None) -> Optimum:
        """The model's optimum over the study's valid space with ``fixed`` factors held (exact, or the best of a
        coordinate descent over the levels, also from ``start``, as it says): the one predicted best of this model."""
        from engine.analysis.optimum import model_optimum

        return model_optimum(model, self.valid_space(), fixed=fixed, reference=self._reference(), seed=seed, start=start)

    def propose(self, model: LinearModel, threshold: float = 0.05, *, fixed: Mapping[str, Any] | None = None,
                anova_type: int = 1, rule: str = "factor", adjust: str = "holm", seed: int = 0) -> Decision:
        """The proposed decision on a model fitted to this study: the factors to fix (``rule``, ``adjust``) at
        :meth:`optimum`'s levels, with the reasons and the evidence."""
        from engine.analysis import propose_decision

        return propose_decision(model, threshold, candidates=self.valid_space(), fixed=fixed, reference=self._reference(),
                                anova_type=anova_type, rule=rule, adjust=adjust, seed=seed)

    def step_formula(self, data: pd.DataFrame, design: int | None = None) -> str:
        """The model a step starts from, as the Analyze page picks it: the design's, else the one the decisions log
        hands on, else the latest design's, else the linear terms of the factors that vary in ``data``."""
        from engine.analysis.study_data import initial_formula

        designs = self.store.designs(self.name)
        built = {int(d.id): d.formula for d in designs.itertuples() if isinstance(d.formula, str) and d.formula}
        chosen = built.get(design) if design is not None else self.next_step().formula or (
            list(built.values())[-1] if built else None)
        return (f"{self.spec.objective} ~ {chosen.split('~', 1)[-1].strip()}" if chosen
                else initial_formula(self.spec, data))

    def proposal(self, formula: str | None = None, *, transform: str | float | None = None, anova_type: int = 1,
                 threshold: float = 0.05, rule: str = "factor", adjust: str = "holm") -> Proposal:
        """The next step as the Analyze page's defaults show it (``tunelab analyze --propose``): the measurements
        that agree with the factors fixed so far, ``formula`` (default :meth:`step_formula`) fitted with
        ``transform`` (default: Box-Cox rounded for a positive objective), and :meth:`propose` on it."""
        from engine.analysis import analyze
        from engine.analysis.options import default_transform
        from engine.analysis.study_data import restrict

        state = self.next_step()
        data = restrict(self.analysis_data(), state.fixed)
        if data.empty:
            raise UserError(f"study '{self.name}' step {state.step}: no successful measurement agrees with the fixed "
                            f"factors ({', '.join(f'{k} = {v}' for k, v in state.fixed.items())}); measure a design first")
        formula = formula or self.step_formula(data)
        chosen = default_transform(data[self.spec.objective]) if transform is None else transform
        analysis = analyze(data, formula, transform=chosen, anova_type=anova_type)
        decision = self.propose(analysis.model, threshold, fixed=state.fixed, anova_type=anova_type, rule=rule,
                                adjust=adjust)
        return Proposal(state.step, dict(state.fixed), analysis, decision)

    def results(self) -> pd.DataFrame:
        """Stored measurements, or the imported table of a table study that was never replayed."""
        from workflows.reporting import results_frame

        return results_frame(self.store, self.study)

    def _result_values(self) -> list[tuple[str, Any, str]]:
        """(configuration key, value, status) of each row of :meth:`results`, read as plain rows: no frame, no pandas."""
        rows = self.store.measured_values(self.name)
        return self.store.table_values(self.name) if self.is_table and not rows else rows

    def analysis_data(self, design_id: int | None = None) -> pd.DataFrame:
        """Successful measurements (of one design, or all) as a fitting frame."""
        from engine.analysis.study_data import analysis_frame

        measurements = self.store.measurements(self.name)
        if design_id is not None:
            measurements = measurements[measurements["design_id"] == design_id]
        return analysis_frame(self.spec, measurements)

    def next_step(self) -> NextStep:
        """Where the decisions log leaves the study: factors fixed so far, the model handed on, the step."""
        from engine.analysis.study_data import next_step

        return next_step(self.store.decisions(self.name))

    # -- measuring a design ------------------------------------------------------------------------
    def pick_design(self, requested: int | None = None) -> int:
        """``requested`` if it is one of the study's designs, else the latest with pending rows."""
        designs = self.store.designs(self.name)
        if designs.empty:
            raise UserError(f"study '{self.name}': no design to run yet; create one first (tunelab design ...)")
        if requested is not None:
            if requested not in set(designs["id"].tolist()):
                raise UserError(f"design {brief(requested)}: not a design of study '{self.name}' "
                                f"(designs: {', '.join(map(str, designs['id'].tolist()))})")
            return int(requested)
        pending = designs[designs["pending"] > 0]
        return int((pending if len(pending) else designs)["id"].max())

    def measure(self, design_id: int | None = None, *, executor: str = "auto", workers: int | None = None,
                scheduler: str | None = None, port: int | None = None, repeats: int | None = None,
                echo: Echo | None = None,
                on_progress: Callable[[Progress], None] | None = None,
                on_start: Callable[[Campaign], None] | None = None) -> Measured:
        """Measure a design's configurations, committing each result as it arrives; what is already
        stored is not measured again (repeats continue their numbering). ``on_start(campaign)`` gets
        the campaign before it runs (to cancel it from another thread). ``executor``, ``workers``, ``scheduler`` and
        ``port`` as :func:`engine.execution.executor_from_name` takes them."""
        from engine.execution import Campaign, executor_from_name, stored_repeats
        from workflows.recording import store_recorder

        design_id = self.pick_design(design_id)
        space = self.spec.space
        rows = self.store.design_rows(self.name, design_id)[space.names]
        runner = self.runner()
        done = stored_repeats(space, self.store.measurements(self.name))
        record = store_recorder(self.store, self.study, design_id=design_id, strategy="design", echo=echo)
        with executor_from_name(executor, workers=workers, scheduler=scheduler or None, runner=runner, port=port) as pool:
            campaign = Campaign(runner, pool, repeats=repeats, space=space)
            if on_start is not None:
                on_start(campaign)
            progress = campaign.run(rows, record, on_progress=on_progress, done=done)
        return Measured(design_id, runner.describe(), progress)

    # -- tuning with a strategy, and the decisions it waits for ------------------------------------
    def tune(self, strategy: str, budget: int, *, seed: int = 0, options: Mapping[str, Any] | None = None,
             auto: bool = False, echo: Echo | None = None, executor: str = "auto", workers: int | None = None,
             scheduler: str | None = None, port: int | None = None,
             on_progress: Callable[[Progress], None] | None = None,
             on_start: Callable[[Campaign], None] | None = None) -> Tuned:
        """Run a strategy with the study's runner until its budget is spent or it waits for a person;
        every measurement and decision is stored as it comes. Run again to resume: what is stored
        answers the replay without measuring twice, a configuration stored with only some of its
        repeats gets the rest, and the decisions taken since apply in order. ``executor``, ``workers``, ``scheduler``,
        ``port``, ``on_progress`` and ``on_start`` as for :meth:`measure` (``Progress.total`` is the budget, in
        configurations): the strategy proposes as many configurations as the workers take."""
        from engine.execution import Campaign, executor_from_name, review
        from engine.execution.tuning import candidates_for, tune
        from engine.strategies import Domain, make_strategy, options_of
        from workflows.recording import store_recorder

        options = dict(options or {})
        known = options_of(strategy)
        if "auto" in known:
            options["auto"] = bool(auto)
        run_id = review.run_key(strategy, seed, budget, options)
        if "response" in known:
            options.setdefault("response", self.spec.objective)
        domain = Domain(self.spec.space, candidates_for(self.spec, self.table()))
        searcher = make_strategy(strategy, domain, budget, seed, self.spec.direction, options)
        store, study = self.store, self.study

        record = store_recorder(store, study, echo=echo)  # told each result's strategy and step by tune()

        def log(decision: Decision, step: int) -> None:
            if decision.by == "auto" and review.taken(store.decisions(study.name), run_id, step)[0] is None:
                store.log_decision(study, **review.log_entry(run_id, decision, step))

        def ask_person(proposal: Decision, step: int) -> Decision | None:
            answer: Decision | None
            answer, logged = review.taken(store.decisions(study.name), run_id, step)
            if answer is None and not logged:
                store.log_decision(study, **review.log_entry(run_id, proposal, step))
            return answer

        runner = self.runner()
        with executor_from_name(executor, workers=workers, scheduler=scheduler or None, runner=runner, port=port) as pool:
            campaign = Campaign(runner, pool, space=self.spec.space)
            if on_start is not None:
                on_start(campaign)
            result = tune(searcher, campaign, record, log, stored=store.measurements(self.name), review=ask_person,
                          on_progress=on_progress)
        return Tuned(searcher.name, searcher.step, result, searcher.pending_decision)

    def notes(self) -> str:
        """The study's notes (Markdown): what the people tuning it want remembered, and the report shows."""
        return self.store.study_notes(self.name)

    def save_notes(self, text: str) -> None:
        self.store.save_study_notes(self.study, text.strip())

    def withdraw_last_decision(self) -> int:
        """Withdraw the latest decision taken on the Analyze page (or ``tunelab decide``'s analysis
        decisions): it stays in the log, marked, and the study goes back to the step before it."""
        from engine.analysis.study_data import last_applied

        decision = last_applied(self.store.decisions(self.name), kind="fix-factors")
        if decision is None:
            raise UserError(f"study '{self.name}': no applied decision to withdraw")
        self.store.withdraw_decision(self.study, decision)
        return decision

    def decisions_log(self) -> pd.DataFrame:
        """Every decision of the study as a person reads it (fix, next model, note, reasons)."""
        from engine.analysis.study_data import readable_log

        return readable_log(self.store.decisions(self.name))

    def pending_decision(self) -> dict[str, Any] | None:
        """The proposal a paused tuning run waits for: ``{"run", "step", "decision", "id"}``, or None."""
        from engine.execution import review

        return review.pending(self.store.decisions(self.name))

    def answer(self, action: str, actor: str, *, fix: Mapping[str, Any] | None = None, formula: str | None = None,
               note: str | None = None) -> tuple[int, Decision]:
        """Accept, edit or reject what a paused tuning run waits for; returns (step, the decision taken)."""
        from engine.execution import review

        waiting = self.pending_decision()
        if waiting is None:
            raise UserError(f"study '{self.name}': no tuning run waits for a decision")
        decision = review.resolve(waiting["decision"], action, actor, fix=fix, formula=formula, note=note)
        self.store.log_decision(self.study, **review.log_entry(waiting["run"], decision, waiting["step"]))
        return waiting["step"], decision

    def record_decision(self, decision: Decision, step: int | None, analysis: Analysis | None = None, *,
                        design: int | None = None, fixed: Mapping[str, Any] | None = None) -> None:
        """Log a decision taken on an analysis (accepted, edited or rejected); an applied one also
        stores the model it was based on and what it was fitted on (the measurements of ``design``, or all,
        that agree with ``fixed``), which the predicted best refits. ``step`` None (an analysis that did not
        continue from the decisions log) is the step the log is at: every decision has its number."""
        from engine.analysis import coefficient_table

        assert decision.by is not None, "a proposed decision has no author yet; settle or reject it first"
        step = self.next_step().step if step is None else step
        record = decision.to_record()
        applied = decision.status in ("accepted", "edited")
        if applied and analysis is not None:
            summary = analysis.summary
            self.store.save_model(self.study, step=step, formula=analysis.model.formula, transform=summary.transform,
                                  coefficients=coefficient_table(analysis.model), anova=analysis.anova,
                                  lam=analysis.power.lambda_ if analysis.power else None,
                                  summary={**summary.to_dict(), "fitted_on": {"design": design, "fixed": dict(fixed or {}),
                                                                              "lambda": analysis.model.transform_.lam}})
        self.store.log_decision(self.study, kind="fix-factors", proposed=record["proposed"],
                                chosen=record["chosen"] if applied else None, outcome=decision.status,
                                actor=decision.by, explanation="\n".join(decision.explanation),
                                evidence=record["evidence"], step=step, note=decision.note)

    # -- the best configuration and exports --------------------------------------------------------
    def best(self, source: str = "measured") -> BestConfig:
        """The best measured configuration, or the one the latest stored model predicts (:meth:`predicted_best`)."""
        if source == "measured":
            return best_of(self.spec, self._result_values(), lambda key: config_from_key(self.spec.space, key))
        if source != "predicted":
            raise UserError(f"best source {brief(source)}: expected one of {', '.join(BEST_SOURCES)}")
        return self.predicted_best()

    def predicted_best(self) -> BestConfig:
        """The latest stored model's predicted best, the one number Export, the report and the CLI show: the
        model refitted on the measurements it was fitted on, its optimum over the valid space with every factor
        fixed so far held (:meth:`optimum`, also started from the point its decision was proposed at, so an
        accepted proposal exports the point and value Analyze showed), its 95% prediction interval, and what to
        compare it with: the best measured value, and in a table study the table's value there and its optimum."""
        import pandas as pd

        from engine.analysis import LinearModel, predict
        from engine.analysis.study_data import restrict

        models = self.store.models(self.name)
        if models.empty:
            raise UserError(f"study '{self.name}': no model stored yet; accept a decision on an analysis first")
        latest = models.iloc[-1]
        design, fitted_fixed, transform = self._fitted_on(latest)
        model = LinearModel(latest["formula"], transform).fit(restrict(self.analysis_data(design), fitted_fixed))
        optimum = self.optimum(model, self.next_step().fixed, start=self._proposed_point())
        point = optimum.point
        interval = predict(model, pd.DataFrame([point]))
        measured = self.measured_best_or_none()
        table_value = table_optimum = None
        table = self.table()
        if table is not None and len(table):
            ok = table[table["status"] == "ok"]
            table_optimum = float(ok["value"].min() if self.spec.direction == "minimize" else ok["value"].max())
            here = restrict(ok, point)
            table_value = float(here["value"].iloc[0]) if len(here) else None
        return best_predicted(self.spec, point, float(interval["predicted"].iloc[0]), float(interval["lower"].iloc[0]),
                              float(interval["upper"].iloc[0]), undetermined=optimum.undetermined,
                              search=optimum.describe(), measured_best=measured.value if measured else None,
                              table_value=table_value, table_optimum=table_optimum)

    def _fitted_on(self, model_row: pd.Series) -> tuple[int | None, dict[str, Any], str | float]:
        """The design and fixed factors whose measurements a stored model was fitted on, and the transform it
        applied (a model stored before they were recorded: all measurements, the factors fixed before its step,
        the transform its label names; its ``box_cox_lambda`` is the estimate, not always the λ applied)."""
        import pandas as pd

        from engine.analysis.study_data import next_step

        summary = json.loads(model_row["summary"]) if isinstance(model_row.get("summary"), str) else {}
        fitted_on = summary.get("fitted_on") if isinstance(summary, dict) else None
        if isinstance(fitted_on, dict):
            lam = fitted_on.get("lambda")
            return fitted_on.get("design"), dict(fitted_on.get("fixed") or {}), "none" if lam is None else float(lam)
        decisions = self.store.decisions(self.name)
        if pd.notna(model_row["step"]) and len(decisions):
            decisions = decisions[decisions["step"] < int(model_row["step"])]
        label = str(model_row["transform"])
        lam = model_row["box_cox_lambda"]
        transform: str | float = label if label in ("none", "log") else float(lam) if pd.notna(lam) else "none"
        return None, next_step(decisions).fixed, transform

    def _proposed_point(self) -> dict[str, Any] | None:
        """The predicted best the latest applied decision was proposed at (its evidence), if it recorded one."""
        from engine.analysis.study_data import applied_rows

        decisions = self.store.decisions(self.name)
        applied = decisions[applied_rows(decisions)] if len(decisions) else decisions
        if not len(applied):
            return None
        evidence = applied["evidence"].iloc[-1]
        found = (json.loads(evidence) if isinstance(evidence, str) else {}).get("predicted_best") or {}
        point = found.get("point", found) if isinstance(found, dict) else None
        return dict(point) if isinstance(point, dict) and set(self.spec.space.names) <= set(point) else None

    def implausible_best(self, best: BestConfig) -> str | None:
        """A warning when a predicted best is ≤ 0 although every measurement is positive."""
        from engine.analysis.options import nonpositive_warning

        ok = self.results()
        ok = ok[ok["status"] == "ok"] if "status" in ok else ok
        return nonpositive_warning(best.value, ok["value"].astype(float), self.spec.objective)

    def measured_best_or_none(self) -> BestConfig | None:
        """The best measured configuration, or None while nothing was measured successfully."""
        from workflows.reporting import best_or_none

        return best_or_none(self.study, self.results())

    def latest_model(self) -> dict[str, Any] | None:
        """The latest stored model (formula, transform), or None."""
        models = self.store.models(self.name)
        return None if models.empty else {"formula": models.iloc[-1]["formula"], "transform": models.iloc[-1]["transform"]}

    def report_html(self) -> str:
        """The self-contained HTML report: space, the best measured and predicted configurations, designs, ANOVA
        tables, decisions, figures."""
        from workflows.reporting import report_html

        predicted = None
        if not self.store.models(self.name).empty:
            try:
                predicted = self.predicted_best()
            except UserError:
                predicted = None  # a model that no longer fits its measurements: the report has the rest
        return report_html(self.store, self.name, predicted)

    def model_tables(self) -> dict[str, pd.DataFrame]:
        from workflows.reporting import model_tables

        return model_tables(self.store, self.name)

    def study_text(self, fmt: str) -> str:
        """The study's spec and measurements as JSON or CSV."""
        from engine.io.export import study_to_csv, study_to_json

        if fmt not in STUDY_FORMATS:
            raise UserError(f"study format {brief(fmt)}: expected one of {', '.join(STUDY_FORMATS)}")
        results = self.results()
        return study_to_json(self.spec, results) if fmt == "json" else study_to_csv(self.spec, results)

    def write(self, text: str | bytes, folder: str | Path, filename: str, fmt: str) -> Written:
        """Write an export atomically (never onto this database or its log, a device, a FIFO or
        through a symbolic link) and log it in the store."""
        keep = database_files(self.store.path)
        _, replaced = export_target(folder, filename, keep=keep)
        path = write_export(text, folder, filename, keep=keep)
        self.store.log_export(self.study, fmt, str(path), path.stat().st_size)
        return Written(path, replaced)

    def write_best(self, best: BestConfig, fmt: str, folder: str | Path, filename: str | None = None) -> Written:
        return self.write(export_best(best, fmt), folder, filename or best_filename(best, fmt), f"best-{fmt}")

    def write_study(self, fmt: str, folder: str | Path, filename: str | None = None) -> Written:
        return self.write(self.study_text(fmt), folder, filename or safe_filename(f"{self.name}.{fmt}"), fmt)

    def write_report(self, folder: str | Path, filename: str | None = None) -> Written:
        return self.write(self.report_html(), folder, filename or safe_filename(f"{self.name}-report.html"),
                          "report-html")

    def log_download(self, fmt: str, size: int) -> None:
        """A file handed to the browser (no path on this machine)."""
        self.store.log_export(self.study, fmt, None, size)


def decision_fix_text(chosen: Mapping[str, Any] | None) -> str:
    """``a = 1, b = 2`` for the factors a decision fixes, or 'nothing'."""
    fix = (chosen or {}).get("fix") or {}
    return ", ".join(f"{k} = {v}" for k, v in fix.items()) or "nothing"


def import_measured(store: Store, source: Source, kind: str, *, name: str | None = None, objective: str = "",
                    direction: str = "minimize") -> ImportedTable:
    """Store a measured table (``kind="table"``, ``objective`` naming its column) or a Kernel Tuner cache
    (``"kt-cache"``) as a new table study, for the Studies page and ``tunelab import`` alike. ``source`` is a path
    or a named file object: an upload is read from memory, not copied to a temporary file whose path a refusal
    would name instead of the user's file (or that a name too long for this file system would fail to create)."""
    from engine.io.ktcache import import_kt_cache
    from engine.io.table_import import import_table

    if kind == "table":
        imported = import_table(source, objective=objective, direction=direction, name=name)
    elif kind == "kt-cache":
        imported = import_kt_cache(source, name=name, direction=direction)
    else:
        raise UserError(f"import kind {brief(kind)}: use 'table' or 'kt-cache'")
    store.create_study(imported.spec, imported.table)
    return imported


def create_from_spec(store: Store, text: str, fmt: str, *, name: str = "", filename: str = "") -> StoredStudy:
    """A new study from spec text in ``fmt`` (a template edited on the Studies page, an uploaded file), renamed
    ``name`` when one is given. A refusal names the uploaded file, as ``tunelab study create --spec`` names its."""
    from engine.io.spec import parse_spec
    from engine.io.table_import import source_name

    try:
        spec = parse_spec(text, fmt, satisfiable=True)
    except UserError as exc:
        if not filename:
            raise
        raise UserError(f"{source_name(filename)}: {exc}") from None
    return store.create_study(replace(spec, name=name.strip()) if name.strip() else spec)

