"""Model formulas, the user-facing model language (``Y ~ x1 + x3 + I(x8^2) + x1:x3``).

One formula engine is used everywhere (formulaic), with R's term order: terms of lower degree first,
the written order kept within a degree (R's ``terms()``), so Type I ANOVA rows come out as R prints
them. ``^`` inside ``I(...)`` means a power, as in R. Every factor expression is checked by the
whitelist of :mod:`engine.space.expr` before formulaic evaluates anything, so a formula is never code, and
the formula's size is bounded before formulaic expands it: its length, the interaction power of
``(a + b)^n`` and the number of terms it can expand to. Numeric columns are evaluated as float64, R's
doubles, so ``I(x^20)`` is R's number, not an int64 that wrapped around.

The matrix itself follows R's ``model.matrix``, not formulaic's own rank rules (:class:`_RMaterializer`):
which factors get contrasts and which a column per level, a logical column as a two-level factor
(``bFALSE``, ``bTRUE``), and the intercept's column (term ``1``) apart from a data column named
``Intercept``, which formulaic names alike.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Container, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from formulaic import Formula
from formulaic import model_matrix as _formulaic_model_matrix
from formulaic.materializers import PandasMaterializer
from formulaic.materializers.types import ScopedFactor, ScopedTerm
from formulaic.parser import DefaultFormulaParser
from formulaic.parser.algos.tokenize import tokenize
from formulaic.parser.types import ASTNode, Factor, Term, Token
from formulaic.transforms import C as _formulaic_C
from interface_meta import override

from engine.errors import brief
from engine.space.expr import FORMULA_FUNCTIONS, ExpressionError, check, quiet_parser_warnings, screen


class FormulaError(ValueError):
    """A formula cannot be used with the data at hand; the message says why in one line."""


#: Longest formula, in characters (formulaic's term algebra slows quadratically in the term count).
MAX_FORMULA_LENGTH = 10_000
#: Largest interaction power ``(a + b + c)^n``: formulaic forms every n-fold product of the terms.
MAX_POWER = 5
#: Most terms a formula may expand to, bounded from its syntax before formulaic expands anything.
MAX_TERMS = 10_000

_I_CALL = re.compile(r"\bI\(")
_DIGITS = re.compile(r"[0-9]{1,3}")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_T = TypeVar("_T")


def _label(formula: str) -> str:
    return f"formula {brief(formula.strip())}"


def normalize(formula: str) -> str:
    """Rewrite R spellings into formulaic's: ``^`` inside ``I(...)`` becomes ``**``."""
    if not isinstance(formula, str) or not formula.strip():
        raise FormulaError("formula: empty")
    text = formula.strip()
    if len(text) > MAX_FORMULA_LENGTH:
        raise FormulaError(f"{_label(formula)}: longer than {MAX_FORMULA_LENGTH:,} characters")
    out, i = [], 0
    while i < len(text):
        match = _I_CALL.search(text, i)
        if not match:
            out.append(text[i:])
            break
        out.append(text[i : match.end()])
        depth, j = 1, match.end()
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        if depth:
            raise FormulaError(f"{_label(formula)}: unbalanced parenthesis in I(...)")
        out.append(text[match.end() : j].replace("^", "**"))
        i = j
    return "".join(out)


def _formulaic(call: Callable[[], _T], label: str) -> _T:
    """Run a formulaic step; whatever it raises becomes one :class:`FormulaError` line."""
    try:
        with warnings.catch_warnings():  # formulaic parses Python text too: no SyntaxWarning on stderr
            quiet_parser_warnings()
            return call()
    except FormulaError:
        raise
    except Exception as exc:  # formulaic raises many types, and its messages span lines
        lines = _ANSI.sub("", str(exc)).strip().splitlines()
        raise FormulaError(f"{label}: {lines[0][:200] if lines else type(exc).__name__}") from None


def _check_shape(text: str, columns: list[str], label: str) -> None:
    """Refuse, before formulaic expands anything, what R would refuse or what would expand without bound."""
    tokens = _formulaic(lambda: list(tokenize(text)), label)
    for token in (t for t in tokens if t.kind is Token.Kind.PYTHON):  # formulaic parses these itself
        if text[token.source_start] == "{":
            raise FormulaError(f"{label}: {{...}} (formulaic's Python escape) is not R; write I(...)")
        try:
            screen(token.token, f"{label}: term", columns)
        except ExpressionError as exc:
            raise FormulaError(str(exc)) from None
    if tokens and tokens[-1].token == "~":
        raise FormulaError(f"{label}: empty right-hand side; write '~ 1' for an intercept-only model")
    _term_bound(_formulaic(lambda: DefaultFormulaParser().get_ast(text), label), label)


def _term_bound(root: Any, label: str) -> int:
    """An upper bound on the terms ``root`` expands to, walked without recursion; refused past MAX_TERMS."""
    bounds: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if not isinstance(node, ASTNode):
            bounds[id(node)] = 1
        elif not ready:
            stack.append((node, True))
            stack.extend((arg, False) for arg in node.args)
        else:
            bounds[id(node)] = bound = _operator_bound(node, [bounds[id(arg)] for arg in node.args], label)
            if bound > MAX_TERMS:
                raise FormulaError(f"{label}: expands to more than {MAX_TERMS:,} terms")
    return bounds[id(root)]


def _operator_bound(node: ASTNode, args: list[int], label: str) -> int:
    """Terms one operator can produce from its operands' bounds (formulaic's algebra, without dedup)."""
    symbol = node.operator.symbol
    if symbol == "|":
        raise FormulaError(f"{label}: '|' (a multi-part formula) is not supported")
    if symbol == ".":
        raise FormulaError(f"{label}: '.' (every other column) is not supported; name the terms")
    if symbol in ("^", "**"):
        power: int = args[0] ** _power(node.args[1], label)  # int ** int is Any to typeshed
        return power
    if symbol == "*" and len(args) == 2:
        return args[0] + args[1] + args[0] * args[1]
    if symbol == ":":
        return math.prod(args)
    return sum(args)


def _power(operand: Any, label: str) -> int:
    """The n of ``(a + b)^n``: a whole number from 1 to MAX_POWER."""
    text = operand.token if isinstance(operand, Token) else str(operand)
    if isinstance(operand, Token) and operand.kind is Token.Kind.VALUE and _DIGITS.fullmatch(text):
        if 1 <= int(text) <= MAX_POWER:
            return int(text)
    raise FormulaError(f"{label}: interaction power {brief(text, 40)} must be a whole number from 1 to {MAX_POWER}")


@dataclass(frozen=True)
class ParsedFormula:
    """A checked formula: its response (or None), its terms in R order, and the columns it uses."""

    text: str
    response: str | None
    terms: tuple[str, ...]
    variables: frozenset[str]
    has_intercept: bool
    _formula: Formula = field(repr=False, compare=False)

    @property
    def rhs(self) -> str:
        return " + ".join(self.terms) if self.terms else "1"


def formula_text(response: str, terms: Sequence[str], intercept: bool = True) -> str:
    """``response ~ terms`` (``~ 1`` when none is left; ``- 1`` kept from a model without intercept)."""
    return f"{response} ~ " + (" + ".join(terms) + ("" if intercept else " - 1") if terms else "1")


def parse(formula: str, columns: Iterable[str]) -> ParsedFormula:
    """Parse ``formula`` against the available ``columns`` and check every factor expression."""
    text = normalize(formula)
    label = _label(formula)
    columns = list(columns)
    _check_shape(text, columns, label)
    parsed = _in_variable_order(_formulaic(lambda: Formula(text, _ordering="degree"), label), text, label)
    rhs = parsed.rhs if hasattr(parsed, "rhs") else parsed
    response = None
    if hasattr(parsed, "lhs"):
        lhs_terms = [str(t) for t in parsed.lhs]
        if len(lhs_terms) != 1:
            raise FormulaError(f"{label}: the response must be a single column")
        response = lhs_terms[0]
    variables: set[str] = set()
    terms: list[str] = []
    intercept = False
    for term in rhs:
        name = str(term)
        if name == "1":
            intercept = True
            continue
        for factor in term.factors:
            variables |= _factor_columns(factor.expr, columns, f"{label}: term")
        terms.append(name)
    if response is not None:
        variables |= _factor_columns(response, columns, f"{label}: response")
    return ParsedFormula(formula.strip(), response, tuple(terms), frozenset(variables), intercept, parsed)


def _in_variable_order(parsed: Formula, text: str, label: str) -> Formula:
    """The formula with each interaction's factors in the order the formula first mentions them, as R's
    ``terms()`` orders them (``y ~ x + b + b:x`` has the term ``x:b``, coefficient ``x:bTRUE``); formulaic
    keeps each interaction as written. The order decides the names and the order of the term's columns."""
    written = _formulaic(lambda: Formula(text, _ordering="none"), label)
    order: dict[str, int] = {}
    for term in written.rhs if hasattr(written, "rhs") else written:
        for factor in term.factors:
            order.setdefault(factor.expr, len(order))
    terms = [term for term in (parsed.rhs if hasattr(parsed, "rhs") else parsed) if str(term) != "1"]
    factors = [[f.expr for f in term.factors] for term in terms]
    placed = [sorted(names, key=order.__getitem__) for names in factors]
    if placed == factors:
        return parsed
    intercept = "1" if len(terms) < len(parsed.rhs if hasattr(parsed, "rhs") else parsed) else "0"
    lhs = f"{parsed.lhs} ~ " if hasattr(parsed, "lhs") else ""
    rewritten = lhs + " + ".join([intercept, *(":".join(names) for names in placed)])
    return _formulaic(lambda: Formula(rewritten, _ordering="degree"), label)


def _factor_columns(expr: str, columns: list[str], what: str) -> set[str]:
    """The columns one factor expression reads; it must pass the whitelist and read at least one."""
    try:
        used = check(expr, columns, FORMULA_FUNCTIONS, what=what)
    except ExpressionError as exc:
        raise FormulaError(str(exc)) from None
    if not used:
        raise FormulaError(f"{what} {brief(expr)} uses no column (R refuses a constant term)")
    return used


@dataclass(frozen=True)
class ModelMatrix:
    """The numeric model matrix of a formula over a frame, with the columns of each term."""

    X: np.ndarray
    columns: tuple[str, ...]
    term_slices: dict[str, slice]
    y: np.ndarray | None
    formula: ParsedFormula

    @property
    def k(self) -> int:
        return int(self.X.shape[1])


def model_matrix(formula: str | ParsedFormula, data: pd.DataFrame) -> ModelMatrix:
    """Build R's ``model.matrix`` (treatment coding, raw values) for ``formula`` over ``data``."""
    parsed = formula if isinstance(formula, ParsedFormula) else parse(formula, data.columns)
    frame = model_frame(data, parsed.variables | ({parsed.response} & set(data.columns) if parsed.response else set()))
    return _formulaic(lambda: _build(parsed, frame), _label(parsed.text))


def formulaic_matrix(spec: Formula, frame: pd.DataFrame) -> Any:
    """formulaic's model matrix of ``spec`` over a :func:`model_frame`, coded as R codes it
    (:class:`_RMaterializer`), with this module's functions (``sqrt``, ``abs``, R-named integer levels in
    ``C``); division by zero and overflow give inf/nan, as in R. A numpy matrix: a pandas one would merge
    the intercept's column with a data column named ``Intercept``, which formulaic names alike."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _formulaic_model_matrix(spec, frame, na_action="ignore", context=_FUNCTIONS,
                                       materializer=_RMaterializer, output="numpy")


def full_coding(terms: Sequence[Sequence[str]], categorical: Container[str], intercept: bool) -> list[set[str]]:
    """Per term (the intercept left out, in R's order), the categorical factors R codes with a column per
    level instead of contrasts (``terms.formula``'s TermCode, then ``model.matrix``): a factor f of a term T
    when T without f is not empty and lies inside no term before T; and, without an intercept, the first
    categorical factor of the first term that has one (``y ~ 0 + b + x`` codes ``bFALSE`` and ``bTRUE``)."""
    full: list[set[str]] = []
    for i, term in enumerate(terms):
        rest = [set(term) - {f} for f in term]
        full.append({f for f, others in zip(term, rest) if f in categorical and others
                     and not any(others <= set(before) for before in terms[:i])})
    if not intercept:
        first = next(((i, f) for i, term in enumerate(terms) for f in term if f in categorical), None)
        if first is not None:
            full[first[0]].add(first[1])
    return full


#: R's levels of a logical, in R's order (its coefficients are ``bFALSE`` and ``bTRUE``).
LOGICAL_LEVELS = ("FALSE", "TRUE")


class _RMaterializer(PandasMaterializer):  # type: ignore[misc]  # formulaic ships no type information
    """formulaic's pandas materializer with R's ``model.matrix`` rules in place of its own: each
    categorical factor coded by contrasts or by a column per level as :func:`full_coding` says (formulaic
    keeps a matrix structurally full-rank its own way, which names and spans other columns), and a
    logical column as R's logical: a factor with levels FALSE and TRUE where the formula names it, a
    0/1 number inside an expression (``I(b * x)``). Registered by name only (a model spec keeps the
    name), so formulaic's default for pandas data stays its own."""

    REGISTER_NAME = "tunelab-r"
    data: pd.DataFrame
    logical: set[str]

    @override
    def _init(self) -> None:
        """Logical columns noted, and held as 0/1 numbers for expressions (R's coercion)."""
        super()._init()
        self.logical = {c for c in self.data.columns if pd.api.types.is_bool_dtype(self.data[c].dtype)}
        self.data = self.data.astype(dict.fromkeys(self.logical, float))

    @override
    def _lookup(self, name: str) -> Any:
        """A column the formula names as it is: a logical one is R's two-level factor."""
        values, variables = super()._lookup(name)
        if name in self.logical:
            codes = np.asarray(values, dtype=np.int8)
            values = pd.Series(pd.Categorical.from_codes(codes, LOGICAL_LEVELS), index=values.index, name=name)
        return values, variables

    @override
    def _get_scoped_terms(self, terms: Iterable[Term], ensure_full_rank: bool = True
                          ) -> Generator[tuple[Term, Iterable[ScopedTerm]], None, None]:
        """Each term once, its categorical factors coded as :func:`full_coding` says (formulaic's own rule
        keeps the matrix full-rank its way: it splits ``~ f:g`` into ``g`` and ``f:g`` columns, and codes
        ``~ 0 + x + x:b`` by contrasts where R gives ``x:bFALSE`` and ``x:bTRUE``)."""
        terms = list(terms)
        evaluated = {term: [self.factor_cache[f.expr] for f in term.factors] for term in terms}
        constant = {term for term, factors in evaluated.items()
                    if all(f.metadata.kind is Factor.Kind.CONSTANT for f in factors)}  # the intercept
        categorical = {f.expr for factors in evaluated.values() for f in factors
                       if f.metadata.kind is Factor.Kind.CATEGORICAL}
        others = [term for term in terms if term not in constant]
        full = dict(zip(others, full_coding([[f.expr for f in t.factors] for t in others], categorical,
                                            intercept=bool(constant))))
        for term in terms:
            factors = [ScopedFactor(f, reduced=f.expr not in full.get(term, ())) for f in evaluated[term]
                       if f.metadata.kind is not Factor.Kind.CONSTANT]
            yield term, [ScopedTerm(factors)]


def _build(parsed: ParsedFormula, frame: pd.DataFrame) -> ModelMatrix:
    mm = formulaic_matrix(parsed._formula, frame)
    rhs = mm.rhs if hasattr(mm, "rhs") else mm
    y = None
    if parsed.response is not None and hasattr(mm, "lhs"):
        y = np.asarray(mm.lhs, dtype=float).ravel()
    slices = {str(term): sl for term, sl in rhs.model_spec.term_slices.items()}
    return ModelMatrix(
        X=np.asarray(rhs, dtype=float),
        columns=tuple(str(c) for c in rhs.model_spec.column_names),
        term_slices=slices,
        y=y,
        formula=parsed,
    )


def _categorical(data: Any, contrasts: Any = None, **options: Any) -> Any:
    """formulaic's ``C`` with integral float columns as integers, so a level reads ``2`` as in R, not ``2.0``."""
    values = np.asarray(data)
    whole = values.dtype.kind == "f" and values.size and np.all(np.abs(values) <= 2**53)  # nan, inf: False
    if whole and np.all(values == np.trunc(values)):
        data = data.astype(np.int64)
    return _formulaic_C(data, contrasts, **options)


#: What formula functions evaluate to, where formulaic's own table has no entry (or a different one).
_FUNCTIONS = {"C": _categorical, "sqrt": np.sqrt, "abs": np.abs}


def model_frame(data: pd.DataFrame, variables: Container[str]) -> pd.DataFrame:
    """Only the used columns; numbers as float64 (R's doubles: ``I(x^20)`` cannot wrap around in int64),
    booleans as booleans (R's logicals, also when missing values left them in an object column), strings
    as categoricals."""
    frame = data.loc[:, [c for c in data.columns if c in variables]].copy()
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_integer_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
            frame[name] = col.astype(float)
        elif col.dtype == object and pd.api.types.infer_dtype(col, skipna=False) == "boolean":
            frame[name] = col.astype(bool)
        elif col.dtype == object or pd.api.types.is_string_dtype(col):
            frame[name] = pd.Categorical(col.astype(str))
    return frame
