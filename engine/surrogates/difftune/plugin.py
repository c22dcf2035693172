"""DiffTune's plug-in (entry point ``difftune`` of group ``tunelab.plugins``, pyproject.toml): the runner kind
``simulator`` (:class:`engine.surrogates.difftune.runner.SimulatorRunner`), imported when a study first names it.

Importing this module imports only the core's runner registry: the core loads it whenever a runner kind is missing
or the kinds are listed.
"""

from __future__ import annotations

from engine.runners import register_runner

register_runner("simulator", "engine.surrogates.difftune.runner", "SimulatorRunner")
