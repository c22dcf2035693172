"""DiffTune's data in a real DuckDB file: decoded once, measured per CPU and pass (resumable, replaced
not duplicated), tables with provenance, evaluations all-or-nothing; kept across reopening."""

from __future__ import annotations

import pandas as pd
import pytest

from storage import Store
from storage.difftune import (
    block_measurements,
    cpus,
    decoded,
    evaluation_predictions,
    evaluations,
    param_table,
    param_tables,
    reserve_evaluation_id,
    save_block_measurements,
    save_cpu,
    save_decoded,
    save_evaluation,
    save_param_table,
)
from storage.store import StoreError

CPU = {"cpu_id": "GenuineIntel-6-167-1", "vendor": "GenuineIntel", "family": 6, "model": 167, "stepping": 1,
       "microcode": "0x1", "model_name": "Intel(R) Xeon(R) Processor", "mcpu": "rocketlake"}


def test_a_block_is_decoded_once_per_decoder(db_path):
    body = [{"opcode": "ADD64rr", "asm": "addq %rax, %rbx"}]
    with Store(db_path) as store:
        assert save_decoded(store, "llvm-mc-19+iced-1.21", {"4801c3": body}) == 1
        assert save_decoded(store, "llvm-mc-19+iced-1.21", {"4801c3": body, "90": []}) == 1  # only the new one
        assert save_decoded(store, "another", {"4801c3": body}) == 1  # another decoder decodes again
    with Store(db_path) as store:
        assert decoded(store, "llvm-mc-19+iced-1.21", ["4801c3", "ffff", "90"]) == {"4801c3": body, "90": []}
        assert decoded(store, "llvm-mc-19+iced-1.21", []) == {}


def test_measurements_are_per_cpu_and_pass_and_a_rerun_replaces_its_rows(db_path):
    first = pd.DataFrame({"hex": ["4801c3", "0f05"], "status": ["ok", "refused"], "cycles_min": [100.0, None],
                          "cycles_median": [101.5, None], "repeats": [[100.0, 101.5, 103.0], None],
                          "error": [None, "syscall: privileged"]})
    with Store(db_path) as store:
        assert save_cpu(store, CPU) == CPU["cpu_id"]
        save_cpu(store, {**CPU, "mcpu": "other"})  # the first sighting is kept
        assert save_block_measurements(store, CPU["cpu_id"], 1, first) == 2
        again = first.iloc[:1].assign(cycles_min=99.0)
        save_block_measurements(store, CPU["cpu_id"], 1, again)
        save_block_measurements(store, CPU["cpu_id"], 2, again)
    with Store(db_path) as store:
        assert cpus(store)["mcpu"].tolist() == ["rocketlake"]
        one = block_measurements(store, CPU["cpu_id"], 1).set_index("hex")
        assert one.loc["4801c3", "cycles_min"] == 99.0 and len(one) == 2
        assert one.loc["4801c3", "repeats"] == [100.0, 101.5, 103.0] and one.loc["0f05", "repeats"] is None
        assert len(block_measurements(store)) == 3 and block_measurements(store, "other-cpu").empty
        with pytest.raises(StoreError, match="missing field 'family'"):
            save_cpu(store, {"cpu_id": "x", "vendor": "v"})
        with pytest.raises(StoreError, match="missing column 'cycles_min'"):
            save_block_measurements(store, CPU["cpu_id"], 1, first.drop(columns="cycles_min"))


def test_tables_keep_their_provenance_and_names_are_unique(db_path):
    body = {"dispatch_width": 4, "rob_size": 192, "opcodes": {"ADD64rr": {"uops": 1, "latency": 1}}}
    with Store(db_path) as store:
        save_param_table(store, "haswell-default", "haswell", body, {"source": "llvm-mca-19 --instruction-tables"})
        with pytest.raises(StoreError, match="'haswell-default': exists already"):
            save_param_table(store, "haswell-default", "haswell", body)
    with Store(db_path) as store:
        stored = param_table(store, "haswell-default")
        assert stored["body"] == body and stored["provenance"]["source"].startswith("llvm-mca-19")
        assert param_tables(store)["name"].tolist() == ["haswell-default"]
        with pytest.raises(StoreError, match="'nosuch': not found"):
            param_table(store, "nosuch")


def test_an_evaluation_is_stored_whole_or_not_at_all(db_path):
    predictions = pd.DataFrame({"hex": ["4801c3", "4801c3"], "predictor": ["llvm-mca-19", "tunelab"],
                                "cycles": [103.0, 104.0], "truth": [100.0, 100.0]})
    with Store(db_path) as store:
        evaluation = save_evaluation(store, arch="haswell", truth="mca", cpu_id=None, summary={"mape": 0.035},
                                     predictions=predictions)
        with pytest.raises(StoreError, match="block 4801c3 predicted twice by 'llvm-mca-19'"):
            save_evaluation(store, arch="haswell", truth="mca", cpu_id=None, summary={},
                            predictions=pd.concat([predictions, predictions]))
        assert evaluations(store)["id"].tolist() == [evaluation]
        assert evaluations(store)["summary"].iloc[0] == {"mape": 0.035}
        assert evaluation_predictions(store, evaluation)["cycles"].tolist() == [103.0, 104.0]


def test_an_evaluation_id_reserved_first_is_taken_by_no_other_evaluation(db_path):
    """An experiment stores its tables under an evaluation id as each is learnt, before the evaluation itself."""
    predictions = pd.DataFrame({"hex": ["4801c3"], "predictor": ["tunelab"], "cycles": [103.0], "truth": [100.0]})
    with Store(db_path) as store:
        reserved = reserve_evaluation_id(store)
        other = save_evaluation(store, arch="haswell", truth="mca", cpu_id=None, summary={}, predictions=predictions)
        kept = save_evaluation(store, arch="haswell", truth="experiment recovery", cpu_id=None, summary={},
                               predictions=predictions, evaluation_id=reserved)
    assert kept == reserved != other
    with Store(db_path) as store:
        assert sorted(evaluations(store)["id"]) == sorted([reserved, other])
        assert evaluation_predictions(store, reserved)["cycles"].tolist() == [103.0]
