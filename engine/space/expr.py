"""A safe, vectorised evaluator for the small expression language of constraints and formulas.

User text (constraints such as ``lws_y <= threads_number``, formula terms such as ``I(1/x)``) is
parsed with Python's ``ast`` and checked against a whitelist *before* anything is evaluated: only
arithmetic, comparisons, boolean logic, numeric literals, known column names and a handful of pure
functions pass. Evaluation walks the checked tree over numpy arrays, so one constraint filters two
million configurations in a single pass and no user text ever reaches ``eval``.

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
import operator
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn, cast

import numpy as np

from engine.errors import brief


class ExpressionError(ValueError):
    """A user expression was rejected; the message names the offending token."""


#: Longest expression, in characters; longer text is refused before it is parsed.
MAX_LENGTH = 1000
#: Most operators and brackets in one expression. It bounds how deeply the text can nest, and so the
#: recursion of Python's parser and of the walks below, before anything is parsed.
MAX_OPERATORS = 100
#: Largest magnitude of a constant exponent of ``**``.
MAX_EXPONENT = 64
#: float64 holds every integer up to 2**53 exactly; integer results beyond it are verified.
EXACT_INTEGERS = 2**53

_BINOPS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide,
    ast.Mod: np.mod,
    ast.Pow: np.power,
}
#: Python's own integer arithmetic, to verify float64 results beyond 2**53.
_EXACT_BINOPS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
}
_UNARY: dict[type[ast.AST], Callable[..., Any]] = {ast.USub: np.negative, ast.UAdd: np.positive, ast.Not: np.logical_not}

_OP_SYMBOL: dict[type[ast.AST], str] = {
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.MatMult: "@", ast.Invert: "~", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}
_OPERATORS = re.compile(r"[^\w\s'\"]|\b(?:not|and|or|if|else|in|is|lambda|for)\b")
_WORD = re.compile(r"[^\W\d]\w*")
_KEYWORDS = frozenset(keyword.kwlist)


class _Value(NamedTuple):
    """An evaluated subexpression: float64, bool or text data, and whether Python would hold integers."""

    data: Any
    ints: bool


def _number_text(value: Any) -> str:
    """A number as a person writes it: ``10000000000`` rather than ``1e10`` for integral floats."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return brief(value, 40)


def _smallest(*values: _Value) -> _Value:
    """Python's ``min``: the first of the smallest arguments."""
    return _first_extreme(values, ast.Lt)


def _largest(*values: _Value) -> _Value:
    """Python's ``max``: the first of the largest arguments."""
    return _first_extreme(values, ast.Gt)


def _magnitude(value: _Value) -> _Value:
    return _Value(np.abs(_number(value)), value.ints)


#: Functions a constraint may call. Pure, elementwise, no side effects.
CONSTRAINT_FUNCTIONS: dict[str, Callable[..., _Value]] = {"min": _smallest, "max": _largest, "abs": _magnitude}
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
    if type(node) in _OP_SYMBOL:
        return f"operator '{_OP_SYMBOL[type(node)]}'"
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
            self.allowed(node.op, _BINOPS)
            return [(node.left, False), (node.right, False)]
        if isinstance(node, ast.UnaryOp):
            self.allowed(node.op, _UNARY)
            return [(node.operand, False)]
        if isinstance(node, ast.BoolOp):
            return [(value, False) for value in node.values]
        if isinstance(node, ast.Compare):
            for op in node.ops:
                self.allowed(op, _CMPOPS)
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

    def allowed(self, op: ast.AST, table: Mapping[type[ast.AST], Callable[..., Any]]) -> None:
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
        value = np.asarray(self.fold(node), dtype=float)
        if not abs(value) <= MAX_EXPONENT:  # nan too
            self.refuse(f"exponent {_number_text(value[()])} of '**' is beyond the limit of ±{MAX_EXPONENT}")

    def foldable(self, node: ast.AST) -> bool:
        """Whether ``node``, its parts constant, is a constant evaluated here (formula functions are formulaic's)."""
        if isinstance(node, ast.Call):
            return _dotted(node.func) in CONSTRAINT_FUNCTIONS
        return not isinstance(node, ast.Name)

    def fold(self, node: ast.AST) -> Any:
        return _run(node, {}, self.label).data


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
        return _holds(_run(self._tree.body, columns, _label(self.text, self.what)))


def _run(node: ast.AST, columns: Mapping[str, np.ndarray], label: str) -> _Value:
    """Evaluate a checked tree; a refusal names the expression."""
    try:
        with np.errstate(all="ignore"):
            return _eval(node, columns)
    except ExpressionError as exc:
        raise ExpressionError(f"{label}: {exc}") from None


def _eval(node: ast.AST, cols: Mapping[str, np.ndarray]) -> _Value:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, (bool, str)):
            return _Value(value, isinstance(value, bool))
        return _Value(np.float64(cast(float, value)), isinstance(value, int))  # check() admits int and float only
    if isinstance(node, ast.Name):
        return _column(node.id, cols)
    if isinstance(node, ast.BinOp):
        return _arithmetic(type(node.op), _eval(node.left, cols), _eval(node.right, cols))
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, cols)
        if isinstance(node.op, ast.Not):
            return _Value(np.logical_not(_truth(operand.data)), True)
        return _Value(_UNARY[type(node.op)](_number(operand)), operand.ints)
    if isinstance(node, ast.BoolOp):
        return _boolean(isinstance(node.op, ast.And), [_eval(value, cols) for value in node.values])
    if isinstance(node, ast.Compare):
        left, result = _eval(node.left, cols), True
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, cols)
            result = np.logical_and(result, _compare(type(op), left.data, right.data))
            left = right
        return _Value(result, True)
    if isinstance(node, ast.IfExp):
        test, body, orelse = (_eval(part, cols) for part in (node.test, node.body, node.orelse))
        return _Value(np.where(_truth(test.data), body.data, orelse.data), body.ints or orelse.ints)
    if isinstance(node, ast.Call):
        function = cast(ast.Name, node.func).id  # check() admits calls by plain name only
        return CONSTRAINT_FUNCTIONS[function](*(_eval(arg, cols) for arg in node.args))
    raise ExpressionError(f"cannot evaluate {_token(node)}")  # unreachable after check()


def _column(name: str, cols: Mapping[str, np.ndarray]) -> _Value:
    """A column as numbers (integers flagged; converted to float64 by arithmetic), booleans or text."""
    if name not in cols:
        raise ExpressionError(f"no values given for '{name}'")
    data = np.asarray(cols[name])
    kind = data.dtype.kind
    if kind == "b":
        return _Value(data, True)
    if kind in "iu":
        return _Value(_exact_integers(name, data), True)
    if kind == "f":  # integer factors can arrive as floats: integral values are integers to Python
        data = data.astype(np.float64, copy=False)
        return _Value(data, bool(np.all((data == np.trunc(data)) | np.isnan(data))))
    if kind in "OUS":
        return _Value(data, False)
    raise ExpressionError(f"column '{name}' holds {data.dtype} values, not numbers, booleans or text")


def _exact_integers(name: str, data: np.ndarray) -> np.ndarray:
    """An integer column, refused when a value is beyond 2**53 and would round as float64."""
    if data.size and (data.min() < -EXACT_INTEGERS or data.max() > EXACT_INTEGERS):
        big = (data > EXACT_INTEGERS) | (data < -EXACT_INTEGERS)
        for value in np.unique(data[big]).tolist():  # few distinct levels
            if float(value) != value:
                raise ExpressionError(f"column '{name}': value {value} is beyond 2**53 and not exact in float64")
    return data


def _number(value: _Value) -> Any:
    """Numeric data for arithmetic: booleans become 0 and 1 (Python's meaning), text is refused."""
    data = value.data
    if isinstance(data, str) or (isinstance(data, np.ndarray) and data.dtype.kind in "OUS"):
        raise ExpressionError("arithmetic on text is not allowed")
    return np.asarray(data, dtype=np.float64)


def _arithmetic(op: type[ast.AST], left: _Value, right: _Value) -> _Value:
    x, y = _number(left), _number(right)
    ints = left.ints and right.ints and op is not ast.Div and not (op is ast.Pow and np.all(y < 0))
    out = _integer_power(x, y) if ints and op is ast.Pow else _BINOPS[op](x, y)
    if ints:
        _verify_integers(op, x, y, out)
    return _Value(out, ints)


def _integer_power(x: Any, y: Any) -> np.ndarray:
    """``x ** y`` for whole ``y >= 0`` by repeated squaring (np.power elsewhere).

    Each product is correctly rounded, so the result is exact wherever it stays below 2**53;
    vectorised ``pow`` may be an ulp off even there. Exponents past 2,100 are cut to 2,100 or 2,101
    (same parity): any base beyond ±1 has overflowed by then, and 0, 1 and -1 only see the parity.
    """
    x, y = np.broadcast_arrays(x, y)
    whole = np.isfinite(y) & (y >= 0) & (y == np.trunc(y))
    exponent = np.where(whole, y, 0.0)
    exponent = np.where(exponent > 2100, 2100 + exponent % 2, exponent)
    out, base = np.ones(x.shape), x.astype(np.float64)
    while (exponent > 0).any():
        out = np.where(exponent % 2 == 1, out * base, out)
        base, exponent = base * base, np.floor(exponent / 2)
    return np.where(whole, out, np.power(x, y))


def _verify_integers(op: type[ast.AST], x: Any, y: Any, out: Any) -> None:
    """Refuse an integer result that float64 rounded or overflowed where Python's integers are exact.

    Below 2**53 float64 is exact, so only rows beyond it (or with operands beyond it, for ``//`` and
    ``%``) are recomputed with Python integers; those are bounded by float64's range, so the
    recomputation is cheap. Rows Python would raise on (division by zero) keep their IEEE value.
    """
    x, y, out = np.broadcast_arrays(x, y, out)
    suspect = ~(np.abs(out) < EXACT_INTEGERS)
    if op in (ast.FloorDiv, ast.Mod):
        suspect |= (np.abs(x) >= EXACT_INTEGERS) | (np.abs(y) >= EXACT_INTEGERS)
        suspect &= y != 0
    if not suspect.any():
        return
    suspect &= np.isfinite(x) & np.isfinite(y) & ~np.isnan(out)
    if op is ast.Pow:
        suspect &= (x != 0) | (y >= 0)
    if np.isinf(out[suspect]).any():
        raise ExpressionError("an integer result is beyond float64's range (about 1.8e308)")
    exact = _EXACT_BINOPS[op](_python(x[suspect]), _python(y[suspect]))
    wrong = np.asarray(exact != out[suspect].astype(object), dtype=bool)
    if wrong.any():
        value = exact[np.argmax(wrong)]
        raise ExpressionError(f"the integer result {_number_text(value)} is beyond 2**53 and not exact in float64")


def _python_number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


_python = np.frompyfunc(_python_number, 1, 1)


def _compare(op: type[ast.AST], left: Any, right: Any) -> Any:
    """A comparison as Python makes it: text never equals a number, and cannot be ordered against one."""
    try:
        return _CMPOPS[op](left, right)
    except TypeError:
        if op in (ast.Eq, ast.NotEq):
            return np.full(np.broadcast(left, right).shape, op is ast.NotEq)
        raise ExpressionError(f"'{_OP_SYMBOL[op]}' cannot order text and numbers") from None


def _truth(data: Any) -> np.ndarray:
    """Python's ``bool`` of each value (nan is true, as in Python)."""
    data = np.asarray(data)
    if data.dtype.kind in "OUS":
        return np.asarray(np.frompyfunc(bool, 1, 1)(data), dtype=bool)
    truth: np.ndarray = data != 0  # np.bool_ when data is 0-d
    return truth


def _holds(value: _Value) -> np.ndarray:
    """Truth of a constraint's value; nan (an undefined result such as ``0/0``) does not hold."""
    data = np.asarray(value.data)
    truth = _truth(data)
    return truth & ~np.isnan(data) if data.dtype.kind == "f" else truth


def _boolean(conjunction: bool, values: list[_Value]) -> _Value:
    """Python's ``and``/``or``: the first operand that decides, row by row."""
    out = values[0]
    for value in values[1:]:
        truth = _truth(out.data)
        keep = ~truth if conjunction else truth
        out = _Value(np.where(keep, out.data, value.data), out.ints or value.ints)
    return out


def _first_extreme(values: Iterable[_Value], op: type[ast.AST]) -> _Value:
    values = list(values)
    out = values[0]
    for value in values[1:]:
        better = _compare(op, value.data, out.data)
        out = _Value(np.where(better, value.data, out.data), out.ints or value.ints)
    return out
