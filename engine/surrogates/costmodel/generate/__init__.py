"""Real graph + configuration + runtime samples made on this CPU with JAX (costmodel.md §4), written in Tunelab's
own ``.npz`` schema so that :func:`engine.surrogates.costmodel.readers.read_graph` reads them unchanged.

* :mod:`.programs`: the program families and their configurations, as plain specs (no JAX);
* :mod:`.protocol`: the measurement protocol of §4.4 (batches ≥ 5 ms, ≥ 9 repeats, minimum kept, interleaved
  configurations, a second pass, re-measurement of disagreeing passes) on any clock and callables;
* :mod:`.store`: one atomic ``.npz`` per graph;
* :mod:`.jaxbackend`: compiles a spec with JAX on one pinned core (JAX is imported only there, lazily);
* :mod:`.run`: :func:`~.run.generate`, the resumable loop over programs.
"""
