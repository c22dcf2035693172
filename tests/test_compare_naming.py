"""Compare stores what it ran, under the right name (issue 30 §5): a comparison is named after its table study and
the strategies that ran unless the person names it, the Compare form follows a change of table study, and a peer
run is added to a comparison at that comparison's budget, refused when its runs are of another table."""

from __future__ import annotations

import gzip
import itertools
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.compare.peers import at_budget
from engine.errors import UserError
from engine.io.ktcache import import_kt_cache
from engine.io.table_import import import_table
from storage import Store
from storage.comparisons import load_comparison, save_comparison
from tests.conftest import rerun_until
from tests.test_pages import page
from workflows.compare import add_peer_run, compare, open_comparison, peer_space, saved_comparisons, table_study

#: Two table studies over one small grid, with different times: a peer run of one is no run of the other.
TIMES = {"alpha": lambda a, b: (a - 3) ** 2 + b + 0.5, "beta": lambda a, b: 2.0 * (a - 2) ** 2 + 3 * b + 1.25}


def make_tables(db: Path) -> None:
    """Tables ``alpha`` and ``beta`` (a in 1..6, b in 1..4, every configuration measured), nothing else."""
    for name, time in TIMES.items():
        csv = db.parent / f"{name}.csv"
        rows = [{"a": a, "b": b, "time": time(a, b)} for a, b in itertools.product(range(1, 7), range(1, 5))]
        csv.write_text("a,b,time\n" + "".join(f"{r['a']},{r['b']},{r['time']}\n" for r in rows))
        imported = import_table(csv, objective="time", name=name)
        with Store(db) as store:
            store.create_study(imported.spec, imported.table)


def peer_rows(study: str, space: str | None = None, length: int = 8, methods: tuple[str, ...] = ("KT pso",),
              reps: int = 3) -> list[dict]:
    """A bench/peers.py --out file's runs on ``study``'s table (named ``space``, by default the study's name): each
    trace is the best-so-far slowdown of the table's configurations in some order, ``length`` long."""
    time = TIMES[study]
    values = [time(a, b) for a, b in itertools.product(range(1, 7), range(1, 5))]
    best = min(values)
    rows = []
    for method, rep in itertools.product(methods, range(reps)):
        order = values[5 * rep:] + values[:5 * rep]
        trace = [min(order[: i + 1]) / best for i in range(length)]
        rows.append({"space": space or study, "method": method, "rep": rep, "trace": trace})
    return rows


def widget(elements, label: str):
    """The one widget of an AppTest list whose label starts with ``label`` (keys may name the table)."""
    found = [w for w in elements if w.label.startswith(label)]
    assert len(found) == 1, [w.label for w in elements]
    return found[0]


def compare_page(db: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("TUNELAB_DB", str(db))
    at = page("compare.py").run()
    assert not at.exception and not at.error
    return at


def run_form(at: AppTest, strategies: list[str], budget: int = 5) -> None:
    """Run a small comparison from the page's form (the Name left as the form shows it) and wait for it."""
    at.multiselect(key="cmp_strategies").set_value(strategies)
    at.number_input(key="cmp_reps").set_value(2)
    at.number_input(key="cmp_budget").set_value(budget)
    at.number_input(key="cmp_jobs").set_value(1)
    widget(at.button, "Run comparison").click().run()
    rerun_until(at, lambda at: at.success or at.error)
    assert not at.error and "Comparison saved" in at.success[0].value


# -- names ------------------------------------------------------------------------------------------------------
def test_a_comparison_is_named_after_its_table_and_the_strategies_that_ran(db_path):
    make_tables(db_path)
    with Store(db_path) as store:
        table = table_study(store, "alpha")
        done = compare(table, ["RS", "rs", "GA"], reps=2, budget=4, jobs=1, seed=0, store=store, study="alpha")
        record, comparison = open_comparison(store, done.stored_id)
    assert record["name"] == "alpha: RS, GA"  # RS named twice ran once
    assert record["params"]["strategies"] == ["RS", "GA"] and list(record["summary"]) == ["RS", "GA"]
    assert comparison.runs["strategy"].tolist() == ["RS", "RS", "GA", "GA"]


def test_a_name_the_person_gave_is_kept_and_a_blank_one_is_not_a_name(db_path):
    make_tables(db_path)
    with Store(db_path) as store:
        table = table_study(store, "alpha")
        given = compare(table, ["RS"], reps=1, budget=3, jobs=1, seed=0, store=store, name="my run", study="alpha")
        blank = compare(table, ["RS"], reps=1, budget=3, jobs=1, seed=0, store=store, name="  ", study="alpha")
        names = [open_comparison(store, done.stored_id)[0]["name"] for done in (given, blank)]
    assert names == ["my run", "alpha: RS"]


def test_switching_the_table_study_the_form_names_the_new_table_and_the_strategies_run(db_path, monkeypatch):
    make_tables(db_path)
    at = compare_page(db_path, monkeypatch)
    at.selectbox(key="cmp_study").set_value("alpha").run()
    at.selectbox(key="cmp_study").set_value("beta").run()
    assert "alpha" not in widget(at.text_input, "Name").value  # nothing left of the previous table
    run_form(at, ["RS"])
    with Store(db_path) as store:
        saved = saved_comparisons(store, "beta")
    assert saved["name"].tolist() == ["beta: RS"] and saved["params"].iloc[0]["strategies"] == ["RS"]
    assert any("beta: RS" in shown for shown in widget(at.selectbox, "Open").options)


def test_a_name_typed_on_the_page_is_the_comparison_s(db_path, monkeypatch):
    make_tables(db_path)
    at = compare_page(db_path, monkeypatch)
    at.selectbox(key="cmp_study").set_value("alpha").run()
    widget(at.text_input, "Name").input("alpha, RS alone")
    run_form(at, ["RS"])
    with Store(db_path) as store:
        assert saved_comparisons(store, "alpha")["name"].tolist() == ["alpha, RS alone"]


# -- peer runs ----------------------------------------------------------------------------------------------------
def alpha_comparison(db_path: Path, budget: int = 5) -> int:
    with Store(db_path) as store:
        stored = compare(table_study(store, "alpha"), ["RS"], reps=2, budget=budget, jobs=1, seed=0, store=store,
                         study="alpha").stored_id
    assert stored is not None
    return stored


def test_a_peer_run_joins_the_comparison_cut_at_its_budget(db_path, tmp_path):
    make_tables(db_path)
    ours = alpha_comparison(db_path, budget=5)
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps(peer_rows("alpha", length=8, methods=("KT pso", "Optuna TPE"))))
    with Store(db_path) as store:
        joined = add_peer_run(store, ours, peers, space="alpha")
        record, comparison = open_comparison(store, joined)
        assert saved_comparisons(store, "alpha")["id"].tolist() == [joined, ours]  # the comparison run stays as it ran
    assert record["name"] == "alpha: RS + KT pso, Optuna TPE (peers.json)"
    assert comparison.strategies == ["RS", "KT pso", "Optuna TPE"] and record["params"]["budget"] == 5
    assert list(record["summary"]) == ["RS", "KT pso", "Optuna TPE"]
    assert record["params"]["peers"] == {"source": "bench/peers.py", "file": "peers.json", "space": "alpha",
                                         "strategies": ["KT pso", "Optuna TPE"]}
    kt = comparison.runs[comparison.runs["strategy"] == "KT pso"]
    rows = peer_rows("alpha", length=8)
    assert kt["trace"].map(len).tolist() == [5, 5, 5] and kt["budget_used"].tolist() == [5, 5, 5]
    assert kt["slowdown"].tolist() == pytest.approx([at_budget(row, 5)[1] for row in rows], rel=1e-5)


def test_a_peer_run_of_another_table_is_refused_in_one_line(db_path, tmp_path):
    make_tables(db_path)
    ours = alpha_comparison(db_path)
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps(peer_rows("beta") + peer_rows("alpha", space="alpha_cache", methods=("KT mls",))))
    with Store(db_path) as store:
        with pytest.raises(UserError, match=r"no runs on space 'alpha' \(it has alpha_cache, beta\)"):
            add_peer_run(store, ours, peers, space="alpha")
        with pytest.raises(UserError) as caught:
            add_peer_run(store, ours, peers, space="beta")  # named on purpose, but its times are beta's
        message = str(caught.value)
        assert "\n" not in message and "not of table study alpha" in message, message
        mapped = add_peer_run(store, ours, peers, space="alpha_cache")  # the same table under another name
        assert open_comparison(store, mapped)[1].strategies == ["RS", "KT mls"]
        assert len(saved_comparisons(store, "alpha")) == 2


def test_a_peer_run_that_stops_before_the_budget_or_is_already_there_is_refused(db_path, tmp_path):
    make_tables(db_path)
    ours = alpha_comparison(db_path, budget=10)
    short, peers = tmp_path / "short.json", tmp_path / "peers.json"
    short.write_text(json.dumps(peer_rows("alpha", length=6)))
    peers.write_text(json.dumps(peer_rows("alpha", length=12)))
    with Store(db_path) as store:
        with pytest.raises(UserError, match="stop at 6 measurements, before this comparison's budget 10"):
            add_peer_run(store, ours, short, space="alpha")
        joined = add_peer_run(store, ours, peers, space="alpha")
        with pytest.raises(UserError, match="KT pso is already in this comparison"):
            add_peer_run(store, joined, peers, space="alpha")


def test_a_study_imported_from_a_kernel_tuner_cache_answers_to_the_cache_s_name(db_path, tmp_path):
    """bench/peers.py names a space after its cache file; the study made from that cache may have another name."""
    from bench.peers import Cache

    cache = tmp_path / "tiny_RTX.json.gz"
    keys = [(a, b) for a, b in itertools.product((1, 2, 4), (1, 2, 3))]
    records = {f"{a},{b}": {"a": a, "b": b, "time": "RuntimeFailedConfig" if (a, b) == (4, 1) else 0.1 * (1 + a + b)}
               for a, b in keys}
    doc = {"kernel_name": "tiny", "tune_params_keys": ["a", "b"], "tune_params": {"a": [1, 2, 4], "b": [1, 2, 3]},
           "objective": "time", "cache": records}
    with gzip.open(cache, "wt") as handle:
        json.dump(doc, handle)
    order = [f"{a},{b}" for a, b in reversed(keys)]  # the failed configuration first: nothing works yet
    rows = [{"space": "tiny_RTX", "method": "KT pso", "rep": 0, "trace": Cache(cache).trace(order, 6)}]
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps(rows))
    make_tables(db_path)
    with Store(db_path) as store:
        imported = import_kt_cache(cache, name="tiny")
        store.create_study(imported.spec, imported.table)
        assert peer_space(store, "tiny") == "tiny_RTX" and peer_space(store, "alpha") == "alpha"
        ours = compare(table_study(store, "tiny"), ["RS"], reps=1, budget=4, jobs=1, seed=0, store=store, study="tiny")
        assert ours.stored_id is not None
        joined = add_peer_run(store, ours.stored_id, peers, space=peer_space(store, "tiny"))
        runs = open_comparison(store, joined)[1].runs
    assert runs["strategy"].tolist() == ["RS", "KT pso"] and len(runs["trace"].iloc[1]) == 4


def test_switching_the_table_study_the_peer_form_names_the_new_table_s_space(db_path, monkeypatch):
    make_tables(db_path)
    alpha_comparison(db_path)
    with Store(db_path) as store:
        compare(table_study(store, "beta"), ["RS"], reps=1, budget=3, jobs=1, seed=0, store=store, study="beta")
    at = compare_page(db_path, monkeypatch)
    at.selectbox(key="cmp_study").set_value("alpha").run()
    assert widget(at.text_input, "Space").value == "alpha"
    at.selectbox(key="cmp_study").set_value("beta").run()
    assert widget(at.text_input, "Space").value == "beta"


def test_the_page_shows_a_peer_run_in_the_comparison_it_joins(db_path, tmp_path, monkeypatch):
    make_tables(db_path)
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps(peer_rows("alpha", length=8)))
    at = compare_page(db_path, monkeypatch)
    at.selectbox(key="cmp_study").set_value("alpha").run()
    run_form(at, ["RS"], budget=5)
    widget(at.text_input, "File").input(str(tmp_path / "nope.json"))
    widget(at.button, "Import").click().run()
    assert [e.value for e in at.error if "no such file" in e.value] and not at.exception
    widget(at.text_input, "File").input(str(peers))
    widget(at.button, "Import").click().run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert table["strategy"].tolist() == ["RS", "KT pso"]  # one table: Tunelab's strategy and the peer's
    assert table["budget_max"].tolist() == [5, 5]  # the peer cut at the comparison's budget
    assert any("budget 5" in caption.value for caption in at.caption)


def test_a_comparison_where_some_runs_found_nothing_loads_back(db_path):
    """A run that found nothing has no configuration: beside runs that did, it was stored but failed to load."""
    runs = pd.DataFrame({"strategy": ["RS", "RS"], "rep": [0, 1], "seed": [1, 2], "value": [2.0, math.nan],
                         "slowdown": [1.0, math.inf], "best_slowdown": [1.0, math.inf], "budget_used": [3, 3],
                         "config": [{"a": 1}, None], "trace": [[2.0, 1.0], [math.inf]]})
    with Store(db_path) as store:
        stored = save_comparison(store, name="t: RS", study="t", params={"strategies": ["RS"]}, summary={}, runs=runs)
        assert load_comparison(store, stored)["runs"]["config"].tolist() == [{"a": 1}, None]


def test_a_comparison_that_ends_before_the_page_reruns_is_announced_and_opened(db_path, monkeypatch):
    """A small comparison can end before the page's rerun: it was saved, but neither announced nor opened."""
    import app.jobs

    started = app.jobs.start_job

    def ended_at_once(key, label, work):
        job = started(key, label, work)
        job.thread.join()
        return job

    monkeypatch.setattr(app.jobs, "start_job", ended_at_once)
    make_tables(db_path)
    at = compare_page(db_path, monkeypatch)
    at.selectbox(key="cmp_study").set_value("alpha").run()
    run_form(at, ["RS"])
    assert at.dataframe[0].value["strategy"].tolist() == ["RS"]
