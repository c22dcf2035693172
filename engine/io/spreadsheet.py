"""CSV cells a spreadsheet shows as text, never runs as a formula (CSV injection), and the rule read back.

Every CSV a person downloads quotes such text with a ``'`` in front (:func:`spreadsheet_value`); the importer
(:mod:`engine.io.table_import`) takes it off again where, and only where, an export put it (:func:`unquote_cell`),
so text round-trips exactly. Plain Python: a one-row export (the best configuration) needs no pandas.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any, Literal

#: What a spreadsheet reads as the start of a formula (OWASP; a leading tab or CR is a blank, quoted as such).
_FORMULA_START = frozenset("=+-@")
#: A number a spreadsheet reads as one, sign included: ``-3``, ``+.5``, ``-1e-05``.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_quoted(text: str) -> bool:
    """Whether a CSV export writes ``text`` with a ``'`` in front, so that a spreadsheet shows it as text instead
    of running it (OWASP's rule for CSV injection): text that starts with ``=``, ``+``, ``-`` or ``@`` and is not a
    plain number (``-3`` and ``-1e-05`` stay numbers), text with a blank (a space, tab, CR, any Unicode blank)
    first or last, since spreadsheets skip leading blanks and this importer strips them, and text whose leading
    ``'`` marks are followed by such text. The last rule makes the quote exact both ways: the importer takes a ``'``
    off only where the export would have put one (``'=1`` reads as ``=1``, ``'plain`` stays ``'plain``)."""
    rest = text.lstrip("'")
    return rest != rest.strip() or (rest[:1] in _FORMULA_START and not _PLAIN_NUMBER.fullmatch(rest))


def unquote_cell(cell: str) -> str:
    """``cell`` as read from a CSV export: the ``'`` that :func:`spreadsheet_quoted` text was written with taken off."""
    return cell[1:] if cell[:1] == "'" and spreadsheet_quoted(cell[1:]) else cell


def spreadsheet_value(value: Any) -> Any:
    """``value`` for a CSV cell: with a ``'`` in front where its text is one a spreadsheet would run as a formula
    (``=cmd|...``, ``-2+3``, ``-inf``, a blank then ``@x``), else unchanged, so numbers stay numbers."""
    text = value if isinstance(value, str) else str(value)
    return "'" + text if spreadsheet_quoted(text) else value


def csv_quoting(cells: Iterable[Any]) -> Literal[0, 1]:
    """How to quote a CSV file holding ``cells``. QUOTE_MINIMAL leaves a lone ``\\r`` unquoted when lines
    end in ``\\n``, and readers (pandas, spreadsheets) then end the row there; so a file holding one is
    written with every field quoted, and every other file stays as minimal as before."""
    return csv.QUOTE_ALL if any("\r" in str(cell) for cell in cells) else csv.QUOTE_MINIMAL
