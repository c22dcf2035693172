"""Import speed: the Laplacian table (23,120 rows) and the Kernel Tuner cache, parse and store.

Prints the median of 5 runs for parsing and for storing into a fresh DuckDB file, and the rows per
second of the whole import.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from engine.io.ktcache import import_kt_cache
from engine.io.paths import data_dir
from engine.io.table_import import import_table
from storage import Store


def timed(fn, repeats: int = 5) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    data = data_dir()
    if data is None:
        raise SystemExit("data folder absent (set TUNELAB_DATA)")
    cases = [
        ("laplacian table", lambda: import_table(data / "laplacian" / "search_space.csv", objective="time_per_pixel")),
        ("kt-cache convolution", lambda: import_kt_cache(data / "kernel_tuner" / "convolution_milo_A4000.json.gz")),
    ]
    print(f"{'case':24s} {'rows':>7s} {'parse s':>8s} {'store s':>8s} {'rows/s':>9s}")
    for label, parse in cases:
        parse_s, imported = timed(parse)
        counter = iter(range(100))

        def store_once():
            with Store(Path(tempfile.mkdtemp()) / f"b{next(counter)}.duckdb") as store:
                store.create_study(imported.spec, imported.table)

        store_s, _ = timed(store_once)
        rows = imported.report["rows"]
        print(f"{label:24s} {rows:7,d} {parse_s:8.3f} {store_s:8.3f} {rows / (parse_s + store_s):9,.0f}")


if __name__ == "__main__":
    main()
