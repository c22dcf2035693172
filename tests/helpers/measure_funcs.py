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
