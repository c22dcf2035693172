"""The Dask executor on a real LocalCluster (worker processes): same results as inline, the
scheduler address path, real C kernels on workers, one GPU measurement at a time per worker."""

import shutil
from itertools import pairwise

import pytest

from engine.execution import Campaign, InlineExecutor
from engine.runners import runner_from_spec
from engine.space.factors import Factor, Space

distributed = pytest.importorskip("distributed")

from engine.execution.dask_executor import DaskExecutor

# Starts Dask clusters: after make test's parallel phase, alone (spawned workers hung inside a test worker).
pytestmark = pytest.mark.serial

FUNCS = "tests.helpers.measure_funcs"
SPACE = Space([Factor(f"x{i}", "ordinal", (-1, 0, 1)) for i in range(1, 9)])


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes with two threads each; each worker declares one GPU."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address="127.0.0.1:0",
                                  resources={"GPU": 1}) as local:
        yield local


def run(runner, executor, configs):
    got = []
    progress = Campaign(runner, executor).run(configs, lambda c, r: got.append((dict(c), r)))
    return got, progress


def test_the_local_cluster_listens_on_free_ports_of_127_0_0_1_only():
    """What the executor's own cluster opens (the listeners this test process and its children hold beyond those
    before it started): never the fixed port 8787, never an address other than 127.0.0.1. First in the file: the
    module's cluster (``cluster``) is not started yet, so 8787 would be free for the old default to take."""
    psutil = pytest.importorskip("psutil")

    def listening():
        me = psutil.Process()
        return {c.laddr for p in [me, *me.children(recursive=True)] for c in p.net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN}

    before = listening()
    with DaskExecutor(workers=1) as executor:
        assert executor.slots() == 1
        opened = listening() - before
    assert opened and {a.ip for a in opened} == {"127.0.0.1"}
    assert 8787 not in {a.port for a in opened}


def test_the_local_clusters_scheduler_port_can_be_pinned_and_a_taken_one_is_one_line():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with DaskExecutor(workers=1, port=port) as executor:
        assert executor.client.scheduler.address == f"tcp://127.0.0.1:{port}"
        with pytest.raises(ValueError, match=f"--cluster-port {port}: cannot listen there"):
            DaskExecutor(workers=1, port=port)


def test_dask_results_equal_inline_ones_through_the_scheduler_address(cluster):
    runner = runner_from_spec({"kind": "synthetic", "name": "toy", "repeats": 2}, space=SPACE)
    configs = SPACE.sample(16, seed=2)
    reference, _ = run(runner, InlineExecutor(), configs)
    with DaskExecutor(scheduler=cluster.scheduler_address) as executor:
        assert executor.slots() == 4
        got, progress = run(runner, executor, configs)
    table = lambda rows: {(tuple(c.values()), r.repeat): r.value for c, r in rows}
    assert progress.completed == 16 and progress.ok == 32
    assert table(got) == table(reference)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_c_kernels_compile_and_run_on_dask_workers(cluster, tmp_path):
    runner = runner_from_spec({"kind": "ckernel", "kernel": "bicg", "n": 32, "repeats": 2, "cache": str(tmp_path)})
    configs = [{"T_I": t, "SCR": s} for t in (1, 8) for s in (False, True)]
    with DaskExecutor(client=distributed.Client(cluster)) as executor:
        got, progress = run(runner, executor, configs)
        executor.client.close()
    assert progress.ok == 8, [r.error for _, r in got if not r.ok]
    assert {r.metadata["checksum"] for _, r in got} == {got[0][1].metadata["checksum"]}
    assert all(r.metadata["speedup"] > 0 for _, r in got)
    assert len(list((tmp_path / "ckernel").glob("baseline-*.json"))) == 1  # measured once, by one worker


def test_gpu_measurements_run_one_at_a_time_per_worker(cluster):
    runner = runner_from_spec({"kind": "python", "callable": f"{FUNCS}:stamped"})
    runner.uses_gpu = True  # as a CUDA TorchRunner is: each task asks for one unit of the GPU resource
    with DaskExecutor(client=distributed.Client(cluster)) as executor:
        got, _ = run(runner, executor, [{"sleep": 0.15}] * 8)
        assert executor.slots() == 2  # two GPUs, although the workers have four threads
        executor.client.close()
    by_worker: dict[int, list] = {}
    for _, result in got:
        by_worker.setdefault(result.metadata["pid"], []).append((result.metadata["began"], result.metadata["ended"]))
    for spans in by_worker.values():
        spans.sort()
        assert all(later[0] >= earlier[1] for earlier, later in pairwise(spans)), "two GPU tasks overlapped"


def test_gpu_runner_needs_workers_that_declare_a_gpu():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as bare:
        runner = runner_from_spec({"kind": "torch", "device": "cuda"})
        with DaskExecutor(client=distributed.Client(bare)) as executor:
            with pytest.raises(ValueError, match="--resources GPU=1"):
                executor.bind(runner)
            executor.client.close()


def test_unreachable_scheduler_is_one_clear_error():
    with pytest.raises(ValueError, match="cannot connect"):
        DaskExecutor(scheduler="tcp://127.0.0.1:1", connect_timeout=1)
    with pytest.raises(ValueError, match="address"):
        DaskExecutor(scheduler="not an address!")


def test_workers_that_join_during_a_run_are_used(tmp_path):
    """One worker when the run starts, three a moment later: the first measurement succeeds only when three run at
    once, which the window fixed at the start (one running, one queued) never allowed."""
    import threading

    runner = runner_from_spec({"kind": "python", "callable": f"{FUNCS}:rendezvous"})
    configs = [{"folder": str(tmp_path), "meet": 3, "x": i} for i in range(6)]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as local, \
            DaskExecutor(client=distributed.Client(local)) as executor:
        assert executor.slots() == 1
        grow = threading.Timer(0.5, local.scale, args=(3,))
        grow.start()
        got, progress = run(runner, executor, configs)
        grow.join()
        executor.client.close()
    assert progress.ok == 6, [r.error for _, r in got if not r.ok]


def test_a_measurement_whose_worker_dies_is_requeued_and_says_so(tmp_path):
    """A worker killed mid-measurement (``kill -9`` of its process): the scheduler re-queues what it held, which runs
    on a worker the nanny restarts, and the result says it was re-queued; one result per measurement, none lost. One
    that kills every worker it runs on fails after Dask's allowed failures, with the cause."""
    runner = runner_from_spec({"kind": "python", "callable": f"{FUNCS}:dies_once"})
    for x in (3, 4, 5):  # these have "died" before: they run once (one death in all, so none can be killed 4 times)
        (tmp_path / f"died-{x}").touch()
    with DaskExecutor(workers=2) as executor:
        got, progress = run(runner, executor, [{"folder": str(tmp_path), "x": x, "always": False} for x in (2, 3, 4, 5)])
        by_x = {c["x"]: r for c, r in got}
        assert progress.completed == 4 and sorted(by_x) == [2, 3, 4, 5] and len(got) == 4
        assert all(r.ok and r.value == x for x, r in by_x.items()), [r.error for _, r in got]
        assert by_x[2].metadata.get("requeued") == 1  # it killed the worker it ran on, then ran on the restarted one
        (_, poison), = run(runner, executor, [{"folder": str(tmp_path), "x": 9, "always": True}])[0]
    assert poison.status == "failed" and "4 workers died while holding it (KilledWorker" in poison.error
