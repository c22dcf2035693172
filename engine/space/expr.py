"""A safe, vectorised evaluator for the small expression language of constraints and formulas.

User text (constraints such as ``lws_y <= threads_number``, formula terms such as ``I(1/x)``) is
parsed with Python's ``ast`` and checked against a whitelist *before* anything is evaluated: only
arithmetic, comparisons, boolean logic, numeric literals, known column names and a handful of pure
functions pass. Evaluation (:mod:`engine.space.evaluate`) walks the checked tree over numpy arrays, so one
constraint filters two million configurations in a single pass and no user text ever reaches ``eval``.
Checking imports no numpy (0.1-0.3 s of CPU): a command that reads a stored space and evaluates nothing
(``tunelab study list``) starts without it.

An expression means what Python would make of it, row by row, or it is refused in one line:

* Numbers are computed in float64. Python's integers are exact, so wherever Python would hold an
  integer (integer and boolean columns and literals, ``+ - * // % **`` of them) a result beyond
  2**53, where float64 starts rounding, is checked against Python's exact value and refused when
  it differs or overflows; an integer literal must be exact in float64. ``x * 2**62`` therefore
  compares as Python compares it, and int64 wrap-around cannot happen.
* Booleans are the integers 0 and 1 in arithmetic (``(x > 0) + (y > 1) == 1`` counts), ``and`` and
  ``or`` return one of their operands, ``min``/``max`` the first extreme argument, as in Python.
* Division by zero, which Python raises on, follows IEEE: ``1/0`` is inf and ``0/0`` is nan. A
  comparison with nan is false, and a constraint whose value on a row is nan does not hold there.
* Size is bounded before anything runs: text length, the number of operators and brackets (which
  bounds nesting, hence recursion) and constant exponents, so ``2**10**10`` is refused, never
  computed.
"""

from __future__ import annotations

import ast
import keyword
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, cast

from engine.errors import brief
from engine.space.language import BINARY_OPERATORS, COMPARISONS, OP_SYMBOLS, UNARY_OPERATORS, number_text
from engine.space.language import ExpressionError as ExpressionError

if TYPE_CHECKING:
    import numpy as np


#: Longest expression, in characters; longer text is refused before it is parsed.
MAX_LENGTH = 1000
#: Most operators and brackets in one expression. It bounds how deeply the text can nest, and so the
#: recursion of Python's parser and of the walks below, before anything is parsed.
MAX_OPERATORS = 100
#: Largest magnitude of a constant exponent of ``**``.
MAX_EXPONENT = 64

_OPERATORS = re.compile(r"[^\w\s'\"]|\b(?:not|and|or|if|else|in|is|lambda|for)\b")
_WORD = re.compile(r"[^\W\d]\w*")
_KEYWORDS = frozenset(keyword.kwlist)


#: Functions a constraint may call (Python's ``min``, ``max`` and ``abs``). Pure, elementwise, no side effects.
CONSTRAINT_FUNCTIONS: frozenset[str] = frozenset({"min", "max", "abs"})
#: Functions a formula term may call (``I`` and ``C`` are the formula library's own markers).
FORMULA_FUNCTIONS: frozenset[str] = frozenset(
    {"I", "C", "log", "log2", "log10", "exp", "sqrt", "abs", "np.log", "np.log2", "np.log10", "np.exp", "np.sqrt"}
)
#: Arguments a function takes, (fewest, most); every function not listed takes exactly one.
_ARITY: dict[str, tuple[int, int | None]] = {"min": (2, None), "max": (2, None)}


def _token(node: ast.AST) -> str:
    """A short, human-readable name for a rejected syntax node."""
    if isinstance(node, ast.Attribute):
        return f"attribute access '.{node.attr}'"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"call to '{node.func.id}'"
    if isinstance(node, ast.Constant):
        return f"literal {brief(node.value, 40)}"
    if type(node) in OP_SYMBOLS:
        return f"operator '{OP_SYMBOLS[type(node)]}'"
    return f"'{type(node).__name__}'"


def _label(text: str, what: str) -> str:
    return f"{what} {brief(text)}"


def screen(text: str, what: str, names: Iterable[str] = ()) -> str:
    """``text`` stripped, refused before anything parses it: empty, beyond the bounds that keep every
    parse and walk shallow (length, operators and brackets), or naming a column after a keyword."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"{what}: empty expression")
    text = text.strip()
    label = _label(text, what)
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"{label}: longer than {MAX_LENGTH} characters")
    if len(_OPERATORS.findall(text)) > MAX_OPERATORS:
        raise ExpressionError(f"{label}: more than {MAX_OPERATORS} operators and brackets")
    reserved = sorted(set(_WORD.findall(text)) & set(names) & _KEYWORDS)
    if reserved:
        raise ExpressionError(f"{label}: column '{reserved[0]}' is a Python keyword, unusable here; rename it")
    return text


def quiet_parser_warnings() -> None:
    """Inside ``warnings.catch_warnings()``: what Python's parser warns about user text ('1if', '\\d')."""
    warnings.simplefilter("ignore", SyntaxWarning)
    warnings.filterwarnings("ignore", "invalid escape sequence", DeprecationWarning)


def _parse(text: str, what: str, names: Iterable[str] = ()) -> ast.Expression:
    text = screen(text, what, names)
    try:
        with warnings.catch_warnings():  # '1if x else 2', '\\d': warnings on the server's stderr otherwise
            quiet_parser_warnings()
            return ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{_label(text, what)}: syntax error at column {exc.offset}") from None
    except (ValueError, RecursionError, MemoryError):  # a caller already deep in the stack
        raise ExpressionError(f"{_label(text, what)}: cannot be parsed (too complex)") from None


def _dotted(node: ast.AST) -> str | None:
    """'np.log' for Attribute(Name('np'), 'log'), the name for a Name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _arity_text(low: int, high: int | None) -> str:
    if high == low:
        return f"exactly {low} argument{'s' if low != 1 else ''}"
    return f"at least {low} arguments" if high is None else f"{low} to {high} arguments"


def check(
    text: str,
    names: Iterable[str],
    functions: Iterable[str] = CONSTRAINT_FUNCTIONS,
    what: str = "expression",
) -> set[str]:
    """Validate ``text`` and return the column names it uses.

    Raises :class:`ExpressionError` naming the first token that is not allowed: an unknown name,
    attribute access, a call to anything but the whitelisted functions (with their number of
    arguments), text outside a comparison, an integer literal float64 cannot hold exactly, a
    constant exponent beyond :data:`MAX_EXPONENT`, strings, subscripts, lambdas, comprehensions and
    every other construct outside arithmetic and logic. Every constant part is evaluated here (it is
    bounded), so a constant that overflows is refused now rather than when the data arrive.
    """
    names = set(names)
    tree = _parse(text, what, names)
    return _Checker(_label(text.strip(), what), names, set(functions)).run(tree)


@dataclass
class _Checker:
    """One walk over a parsed expression: the whitelist, arities, literals and constant parts."""

    label: str
    names: set[str]
    functions: set[str]
    used: set[str] = field(default_factory=set)

    def refuse(self, reason: str) -> NoReturn:
        raise ExpressionError(f"{self.label}: {reason}")

    def run(self, tree: ast.Expression) -> set[str]:
        if self.visit(tree.body):
            self.fold(tree.body)
        return self.used

    def visit(self, node: ast.AST, text_ok: bool = False) -> bool:
        """Check ``node`` and below; True when it reads no column (a constant its parent folds)."""
        children = self.children(node, text_ok)
        constant = [self.visit(child, ok) for child, ok in children]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and constant[1]:
            self.exponent(node.right)
        if all(constant) and self.foldable(node):
            return True
        for (child, _), is_constant in zip(children, constant):
            if is_constant:
                self.fold(child)
        return False

    def children(self, node: ast.AST, text_ok: bool) -> list[tuple[ast.AST, bool]]:
        """Refuse ``node`` unless it is allowed; its sub-expressions, and whether text may stand there."""
        if isinstance(node, ast.Constant):
            self.literal(node, text_ok)
            return []
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                self.refuse(f"unknown name '{node.id}'")
            self.used.add(node.id)
            return []
        if isinstance(node, ast.BinOp):
            self.allowed(node.op, BINARY_OPERATORS)
            return [(node.left, False), (node.right, False)]
        if isinstance(node, ast.UnaryOp):
            self.allowed(node.op, UNARY_OPERATORS)
            return [(node.operand, False)]
        if isinstance(node, ast.BoolOp):
            return [(value, False) for value in node.values]
        if isinstance(node, ast.Compare):
            for op in node.ops:
                self.allowed(op, COMPARISONS)
            return [(node.left, True), *[(comparator, True) for comparator in node.comparators]]
        if isinstance(node, ast.IfExp):
            return [(node.test, False), (node.body, False), (node.orelse, False)]
        if isinstance(node, ast.Call):
            self.call(node)
            return [(arg, False) for arg in node.args]
        if isinstance(node, ast.Attribute) and _dotted(node) in self.names:  # R reads x.y as one name
            self.refuse(f"column '{_dotted(node)}': a dot in a name reads as attribute access here; "
                        f"rename the column (e.g. '{str(_dotted(node)).replace('.', '_')}')")
        self.refuse(f"{_token(node)} is not allowed")

    def allowed(self, op: ast.AST, table: Mapping[type[ast.AST], str]) -> None:
        if type(op) not in table:
            self.refuse(f"{_token(op)} is not allowed")

    def literal(self, node: ast.Constant, text_ok: bool) -> None:
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > 1023 or float(value) != value:
                self.refuse(f"integer {brief(value, 40)} is beyond 2**53 and not exact in float64")
        elif isinstance(value, str):
            if not text_ok:
                self.refuse(f"text {brief(value, 40)} is only allowed in a comparison")
        elif not isinstance(value, (bool, float)):
            self.refuse(f"{_token(node)} is not allowed")

    def call(self, node: ast.Call) -> None:
        fname = _dotted(node.func)
        if fname is None or fname not in self.functions:
            self.refuse(f"call to '{fname or _token(node.func)}' is not allowed")
        if fname.split(".")[0] in self.names:
            self.refuse(f"'{fname}' is both a function and a column; rename the column")
        if node.keywords:
            self.refuse("keyword arguments are not allowed")
        low, high = _ARITY.get(fname, (1, 1))
        if len(node.args) < low or (high is not None and len(node.args) > high):
            self.refuse(f"{fname}() takes {_arity_text(low, high)}, got {len(node.args)}")

    def exponent(self, node: ast.AST) -> None:
        value = float(self.fold(node))
        if not abs(value) <= MAX_EXPONENT:  # nan too
            self.refuse(f"exponent {number_text(value)} of '**' is beyond the limit of ±{MAX_EXPONENT}")

    def foldable(self, node: ast.AST) -> bool:
        """Whether ``node``, its parts constant, is a constant evaluated here (formula functions are the model matrix's)."""
        if isinstance(node, ast.Call):
            return _dotted(node.func) in CONSTRAINT_FUNCTIONS
        return not isinstance(node, ast.Name)

    def fold(self, node: ast.AST) -> Any:
        """The value of a constant part, evaluated here so that one that fails (overflows) is refused now. A literal
        or a negated one cannot fail (:meth:`literal` checked it) and is read as written: most constraints
        (``n <= 4``, ``x >= -1``) are checked without numpy."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return -cast(float, node.operand.value)  # literal() admits numbers alone here
        from engine.space.evaluate import run

        return run(node, {}, self.label).data


@dataclass(frozen=True)
class Expression:
    """A checked expression, ready to evaluate over columns of equal length."""

    text: str
    names: frozenset[str]
    _tree: ast.Expression
    what: str = "constraint"

    @classmethod
    def compile(cls, text: str, names: Iterable[str], what: str = "constraint") -> Expression:
        used = check(text, names, CONSTRAINT_FUNCTIONS, what)
        return cls(text.strip(), frozenset(used), _parse(text, what), what)

    def evaluate(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Whether the expression holds on each row (a bool array; a bool when it reads no column).

        Values are Python's (see the module docstring); a row whose value is nan (``0/0``) does
        not hold. An integer result float64 cannot hold exactly raises :class:`ExpressionError`.
        """
        from engine.space.evaluate import holds, run

        return holds(run(self._tree.body, columns, _label(self.text, self.what)))
