"""Callables the PythonRunner tests import by path (``tests.helpers.measure_funcs:NAME``)."""

import os
import time


def quadratic(config):
    return (config["x"] - 3) ** 2 + config.get("y", 0)


def with_metadata(config):
    return {"value": config["x"] * 2.0, "pid": os.getpid(), "cores": len(os.sched_getaffinity(0))}


def reports_failure(config):
    return {"status": "failed", "error": f"x={config['x']} is not supported"}


def sleeper(config):
    time.sleep(float(config.get("sleep", 5)))
    return 1.0


def stamped(config):
    """Sleep a little and say when and where: for checking what ran at the same time."""
    began = time.time()
    time.sleep(float(config.get("sleep", 0.2)))
    return {"value": 1.0, "pid": os.getpid(), "began": began, "ended": time.time()}


def crash(config):
    if config["x"] == 0:
        os._exit(3)  # a segfault-like death of the worker process
    return float(config["x"])


def returns_text(config):
    return "fast"


def positive(config, output):
    return output > 0


def rendezvous(config):
    """Leave a file in the folder the ``folder`` factor names and wait (up to 60 s) until it holds ``meet`` (2 unless
    the configuration says): the first measurement of a run succeeds only when that many ran at once (no timing)."""
    from pathlib import Path

    folder, meet = Path(config["folder"]), int(config.get("meet", 2))
    (folder / f"{os.getpid()}-{time.monotonic_ns()}").touch()
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < meet and time.monotonic() < deadline:
        time.sleep(0.01)
    if len(list(folder.iterdir())) < meet:
        return {"status": "failed", "error": f"fewer than {meet} measurements ran at once"}
    return float((config.get("x", 0) - 7) ** 2 + config.get("y", 0))


def dies_once(config):
    """Kill the Dask worker measuring it the first time (a file in ``folder`` remembers), succeed the next: a worker
    lost mid-measurement. ``always`` kills it every time. The PythonRunner calls this in a child of the worker:
    the worker is its parent (only for a Dask test: elsewhere the parent could be the test itself)."""
    import signal
    from pathlib import Path

    mark = Path(config["folder"]) / f"died-{config['x']}"
    if config.get("always") or not mark.exists():
        mark.touch()
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # the worker's death ends this child
    return float(config["x"])
