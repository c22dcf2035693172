"""SimulatorRunner: cycles per iteration of a basic block under Tunelab's llvm-mca-like simulator and a
parameter table (llvm-mca-19's defaults, or one DiffTune learnt), for any study an ``mca`` study could be.

The block is machine code in hex (decoded by iced-x86); the table a file ``tunelab difftune table export``
or ``tunelab difftune export`` wrote (.json, .parquet, or DiffTune's key-value .txt). Factors override the
table's globals: ``dispatch`` (llvm-mca's ``-dispatch``; ``dispatch_width`` too) and ``rob_size``. Like
llvm-mca the simulator is deterministic, so repeats agree exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError, brief
from engine.runners.base import MeasureError, Runner, Trial, check_int, check_options

if TYPE_CHECKING:
    from engine.surrogates.difftune.params import ParamTable

_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")
#: Factor -> the table global it sets (at least 1).
FACTORS = {"dispatch": "dispatch_width", "dispatch_width": "dispatch_width", "rob_size": "rob_size"}


class SimulatorRunner(Runner):
    kind = "simulator"
    OPTIONS = ("hex", "table", "iterations")

    def __init__(self, *, hex: str, table: str, iterations: int = 100, **common: Any) -> None:
        from engine.surrogates.difftune.decode import Block, decode_blocks
        from engine.surrogates.difftune.params import load
        from engine.surrogates.difftune.simulate import row_of

        super().__init__(**common)
        code = re.sub(r"\s+", "", str(hex))
        if not _HEX.match(code):
            raise UserError(f"runner 'simulator': hex {brief(code)} is not an even-length hex string")
        block = decode_blocks([code])[0]
        if not isinstance(block, Block):
            raise UserError(f"runner 'simulator': hex {brief(code)}: {block}")
        path = Path(str(table))
        if not path.is_file():
            raise UserError(f"runner 'simulator': table {brief(str(table))}: no such file")
        try:
            self.table = load(path)
        except UserError:
            raise
        except (OSError, ValueError) as exc:
            raise UserError(f"runner 'simulator': table {brief(str(table))}: {brief(str(exc))}") from None
        missing = sorted({i.key for i in block.instructions if row_of(i, self.table) is None})  # as the simulator reads
        if missing:
            raise UserError(f"runner 'simulator': table {brief(str(table))} has no row for {', '.join(missing[:5])}")
        self.block, self.table_path = block, str(table)
        self.iterations = check_int({"iterations": iterations}, "iterations", 100, 1, self.kind)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **_: object) -> SimulatorRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        for required in ("hex", "table"):
            if required not in spec:
                raise UserError(f"runner 'simulator': needs '{required}'")
        return cls(**{k: spec[k] for k in cls.OPTIONS if k in spec}, **cls.common(spec))

    def table_for(self, config: Mapping[str, Any]) -> ParamTable:
        """The runner's table with the configuration's globals."""
        from engine.surrogates.difftune.params import BOUNDS

        changes = {"dispatch_width": self.table.dispatch_width, "rob_size": self.table.rob_size}
        for name, value in config.items():
            if name not in FACTORS:
                raise MeasureError("invalid", f"factor '{name}' is not a simulator option (known: {', '.join(FACTORS)})")
            try:
                number = int(float(value))
            except (TypeError, ValueError):
                raise MeasureError("invalid", f"factor '{name}': {value!r} is not an integer") from None
            if number < 1 or number != float(value):
                raise MeasureError("invalid", f"factor '{name}': {value!r} must be a positive integer")
            low, high = BOUNDS[FACTORS[name]]
            if not low <= number <= high:
                raise MeasureError("invalid", f"factor '{name}': {value!r} is outside {low}..{high}, the table's bounds")
            changes[FACTORS[name]] = number
        return replace(self.table, dispatch_width=changes["dispatch_width"], rob_size=changes["rob_size"])

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        from engine.surrogates.difftune.simulate import simulate

        table = self.table_for(config)

        def once() -> float:
            return float(simulate([self.block], table, self.iterations)[0]) / self.iterations

        return self.repeat_calls(once, repeats, {"table": self.table_path, "iterations": self.iterations,
                                                 "dispatch_width": table.dispatch_width, "rob_size": table.rob_size})
