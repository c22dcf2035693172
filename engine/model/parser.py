"""R's formula language, read here: the terms ``y ~ (a + b)^2 - a:b + I(x^2)`` stands for, in R's order.

Written for Tunelab rather than taken from a formula library: formulaic's import alone cost 0.4 s of CPU,
more than R's whole ``lm`` report (issue 31), and its own rules (term order, coding, names) had to be
overridden one by one to read as R reads. The algebra is Wilkinson–Rogers as R implements it:

* ``+`` joins terms, ``-`` removes them (``- 1`` or ``+ 0`` the intercept), ``:`` multiplies factors,
  ``a * b`` is ``a + b + a:b``, ``a / b`` is ``a + a:b``, ``b %in% a`` is ``a:b``, ``(a + b)^n`` every
  product of up to n of the terms; a term is a set of factors (``b:a`` is ``a:b``, ``a:a`` is ``a``).
* Terms come out by degree, the written order kept within a degree, and each interaction's factors in the
  order the formula first mentions them (R's ``terms()``): ``y ~ x + b + b:x`` has the term ``x:b``.
* A factor is a column name or a call (``I(x ** 2)``, ``log(x)``, ``C(v)``), kept as Python text in
  ``ast.unparse``'s spelling; it is checked against the whitelist of :mod:`engine.space.expr` by the
  caller before anything evaluates it, so a formula is never code.
* Size is bounded before anything expands: the interaction power and the number of terms an operator can
  produce (from its operands' bounds), so ``(a + b + … )^5`` is refused, never formed.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
import warnings
from dataclasses import dataclass
from typing import NoReturn

from engine.errors import brief
from engine.space.expr import ExpressionError, quiet_parser_warnings, screen


class FormulaError(ValueError):
    """A formula cannot be used with the data at hand; the message says why in one line."""


#: Largest interaction power ``(a + b + c)^n``: it forms every n-fold product of the terms.
MAX_POWER = 5
#: Most terms a formula may expand to, bounded from its syntax before anything is expanded.
MAX_TERMS = 10_000
#: The intercept's term (a literal, no column).
INTERCEPT = "1"

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<name>[^\W\d]\w*(?:\.[^\W\d]\w*)*)
  | (?P<op>%in%|\*\*|[~+\-*/:^|().])
""", re.VERBOSE)
#: Binding power of each binary operator (higher binds tighter) and whether it groups to the right.
_BINARY = {"~": (0, False), "+": (10, False), "-": (10, False), "*": (20, False), "/": (20, False),
           "%in%": (20, False), ":": (30, False), "^": (50, True), "**": (50, True)}
_UNARY = 10
_DIGITS = re.compile(r"[0-9]{1,3}")

#: A term: its factors in product order (a set in meaning: the key is the frozenset).
Term = tuple[str, ...]
#: An ordered set of terms, keyed by their sets of factors.
_Terms = dict[frozenset[str], Term]


@dataclass(frozen=True)
class Token:
    kind: str  # "op", "number", "factor"
    text: str
    start: int


@dataclass(frozen=True)
class Parts:
    """A formula's two sides as terms in R's order (``None`` without a ``~``); ``INTERCEPT`` marks the intercept."""

    lhs: tuple[Term, ...] | None
    rhs: tuple[Term, ...]


def read(text: str, label: str) -> Parts:
    """The terms of formula ``text``, in R's order; one :class:`FormulaError` line for anything else."""
    tokens = _tokens(text, label)
    split = [i for i, t in enumerate(tokens) if t.kind == "op" and t.text == "~" and _depth(tokens, i) == 0]
    if len(split) > 1:
        raise FormulaError(f"{label}: more than one '~'")
    if tokens and tokens[-1].kind == "op" and tokens[-1].text == "~":
        raise FormulaError(f"{label}: empty right-hand side; write '~ 1' for an intercept-only model")
    lhs_tokens, rhs_tokens = (tokens[: split[0]], tokens[split[0] + 1 :]) if split else ([], tokens)
    lhs = _order_terms(_intercept_spelling(lhs_tokens), label) if lhs_tokens else None
    one = Token("number", INTERCEPT, 0)
    written = _order_terms(_intercept_spelling([one, Token("op", "+", 0), *rhs_tokens]), label)
    mentioned = [_factor_text(t, label) for t in tokens if t.kind == "factor"]
    return Parts(tuple(lhs) if lhs is not None else None, _r_order(written, mentioned))


def _tokens(text: str, label: str) -> list[Token]:
    """Operators, numbers and factors; a factor that calls a function is one token up to its closing
    bracket, and a backquoted name (R's quoting) is the name."""
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        if text[i] == "{":
            raise FormulaError(f"{label}: {{...}} is Python, not R formula syntax; write I(...)")
        if text[i] == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise FormulaError(f"{label}: unclosed backquote at column {i + 1}")
            tokens.append(Token("factor", text[i + 1 : end], i))
            i = end + 1
            continue
        match = _TOKEN.match(text, i)
        if match is None:
            raise FormulaError(f"{label}: unexpected {brief(text[i], 10)} at column {i + 1}")
        kind = match.lastgroup
        if kind == "name":
            end = _call_end(text, match.end(), label)
            tokens.append(Token("factor", text[i:end], i))
            i = end
            continue
        if kind != "space":
            tokens.append(Token(str(kind), match.group(), i))
        i = match.end()
    return tokens


def _call_end(text: str, after_name: int, label: str) -> int:
    """Where a name's call ends (its closing bracket, quotes skipped), or the name's end if it calls nothing."""
    j = after_name
    while j < len(text) and text[j].isspace():
        j += 1
    if j >= len(text) or text[j] != "(":
        return after_name
    depth, quote = 0, ""
    while j < len(text):
        char = text[j]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise FormulaError(f"{label}: unbalanced parenthesis")


def _depth(tokens: list[Token], index: int) -> int:
    depth = 0
    for token in tokens[:index]:
        if token.kind == "op" and token.text in ("(", ")"):
            depth += 1 if token.text == "(" else -1
    return depth


def _intercept_spelling(tokens: list[Token]) -> list[Token]:
    """``0`` is ``- 1`` (R), and a run of signs is one sign (``1 + -1`` is ``1 - 1``)."""
    out: list[Token] = []
    for token in tokens:
        if token.kind == "number" and token.text == "0":
            out += [Token("op", "-", token.start), Token("number", INTERCEPT, token.start)]
        else:
            out.append(token)
    merged: list[Token] = []
    for token in out:
        if _sign(token) and merged and _sign(merged[-1]):
            merged[-1] = Token("op", "-" if (merged[-1].text == "-") != (token.text == "-") else "+", merged[-1].start)
        else:
            merged.append(token)
    return merged


def _sign(token: Token) -> bool:
    return token.kind == "op" and token.text in ("+", "-")


def _postfix(tokens: list[Token], label: str) -> list[Token]:
    """The tokens in postfix order (shunting-yard: no recursion, however deep the brackets); a prefix sign
    is the operator ``u+`` or ``u-``."""
    out: list[Token] = []
    stack: list[Token] = []
    operand_next = True
    for token in tokens:
        if token.kind != "op":
            if not operand_next:
                _unexpected(token, label)
            out.append(token)
            operand_next = False
        elif token.text == "|":
            raise FormulaError(f"{label}: '|' (a multi-part formula) is not supported")
        elif token.text == ".":
            raise FormulaError(f"{label}: '.' (every other column) is not supported; name the terms")
        elif operand_next:
            if token.text == "(":
                stack.append(token)
            elif _sign(token):
                stack.append(Token("op", "u" + token.text, token.start))
            else:
                _unexpected(token, label)
        elif token.text == ")":
            while stack and stack[-1].text != "(":
                out.append(stack.pop())
            if not stack:
                raise FormulaError(f"{label}: unbalanced parenthesis")
            stack.pop()
        elif token.text in _BINARY and token.text != "~":
            power, right = _BINARY[token.text]
            while stack and stack[-1].text != "(" and (_power_of(stack[-1]) > power
                                                      or (_power_of(stack[-1]) == power and not right)):
                out.append(stack.pop())
            stack.append(token)
            operand_next = True
        else:
            _unexpected(token, label)
    if operand_next:
        raise FormulaError(f"{label}: ends where a term is expected")
    while stack:
        if stack[-1].text == "(":
            raise FormulaError(f"{label}: unbalanced parenthesis")
        out.append(stack.pop())
    return out


def _power_of(operator: Token) -> int:
    return _UNARY if operator.text in ("u+", "u-") else _BINARY[operator.text][0]


def _unexpected(token: Token, label: str) -> NoReturn:
    raise FormulaError(f"{label}: unexpected {brief(token.text, 40)} at column {token.start + 1}")


@dataclass
class _Item:
    """A value on the evaluation stack: its leaf token (if it is one), its bound and (lazily) its terms."""

    token: Token | None
    bound: int
    terms: _Terms | None = None

    def resolved(self, label: str) -> _Terms:
        if self.terms is None:
            assert self.token is not None
            text = _factor_text(self.token, label)
            self.terms = {frozenset((text,)): (text,)}
        return self.terms


def _order_terms(tokens: list[Token], label: str) -> list[Term]:
    """The terms of one side in written order. Each operator's bound on the terms it can produce is
    checked (:data:`MAX_TERMS`) before its terms are formed, so nothing huge is ever built."""
    stack: list[_Item] = []
    for token in _postfix(tokens, label):
        if token.kind != "op":
            stack.append(_Item(token, 1))
            continue
        if token.text in ("u+", "u-"):
            item = stack.pop()
            stack.append(_Item(None, item.bound, {} if token.text == "u-" else item.resolved(label)))
            continue
        right, left = stack.pop(), stack.pop()
        bound = _bound(token.text, left.bound, right, label)
        if bound > MAX_TERMS:
            raise FormulaError(f"{label}: expands to more than {MAX_TERMS:,} terms")
        stack.append(_Item(None, bound, _combine(token.text, left.resolved(label), right, label)))
    return list(stack[-1].resolved(label).values())


def _bound(op: str, left: int, right: _Item, label: str) -> int:
    """An upper bound on the terms one operator can produce from its operands' bounds."""
    if op in ("^", "**"):
        bound: int = left ** _power(right, label)
        return bound
    if op == "*":
        return left + right.bound + left * right.bound
    if op == ":":
        return left * right.bound
    return left + right.bound


def _power(operand: _Item, label: str) -> int:
    """The n of ``(a + b)^n``: a whole number from 1 to MAX_POWER."""
    token = operand.token
    text = token.text if token is not None else "(...)"
    if token is not None and token.kind == "number" and _DIGITS.fullmatch(text) and 1 <= int(text) <= MAX_POWER:
        return int(text)
    raise FormulaError(f"{label}: interaction power {brief(text, 40)} must be a whole number from 1 to {MAX_POWER}")



def _combine(op: str, left: _Terms, right_item: _Item, label: str) -> _Terms:
    """The terms of ``left op right`` (R's algebra)."""
    if op in ("^", "**"):
        return _products([left] * _power(right_item, label))
    right = right_item.resolved(label)
    if op == "+":
        return _union(left, right)
    if op == "-":
        return {k: v for k, v in left.items() if k not in right}
    if op == ":":
        return _products([left, right])
    if op == "*":
        return _union(left, right, _products([left, right]))
    parents, nested = (left, right) if op == "/" else (right, left)  # b %in% a: a is the parent
    common = _product(list(parents.values()))
    within = {_key(t): t for t in (_product([common, term]) for term in nested.values())}
    return _union(parents, within) if op == "/" else within


def _factor_text(token: Token, label: str) -> str:
    """A leaf's factor: ``1`` for the intercept, a name, or a call in ``ast.unparse``'s spelling (as
    written where Python cannot parse it: the caller's whitelist check refuses it in one line)."""
    if token.kind == "number":
        if token.text == INTERCEPT:
            return INTERCEPT
        raise FormulaError(f"{label}: the number {brief(token.text, 40)} is not a term (R scales nothing by "
                           "a number in a formula); write I(...) for arithmetic")
    try:
        screen(token.text, f"{label}: term")  # bounded before Python parses it (bracket depth, length)
    except ExpressionError as exc:
        raise FormulaError(str(exc)) from None
    return token.text if token.text.isidentifier() else _python_spelling(token.text)


@functools.lru_cache(maxsize=4096)
def _python_spelling(text: str) -> str:
    """``ast.unparse``'s spelling of a call (the same for every formula that writes it: cached, since a page
    parses its formula on every rerun); as written where Python cannot parse it."""
    try:
        with warnings.catch_warnings():  # '1if x', '\\d': no SyntaxWarning on the server's stderr
            quiet_parser_warnings()
            return ast.unparse(ast.parse(text, mode="eval"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text  # the whitelist's check names what is wrong with it


def _key(term: Term) -> frozenset[str]:
    return frozenset(term)


def _product(terms: list[Term]) -> Term:
    """The term of all the factors of ``terms``, each once, in order; the intercept multiplies as 1."""
    factors = dict.fromkeys(f for term in terms for f in term if f != INTERCEPT)
    return tuple(factors) or (INTERCEPT,)


def _products(sets: list[_Terms]) -> _Terms:
    out: _Terms = {}
    for combination in itertools.product(*(list(s.values()) for s in sets)):
        term = _product(list(combination))
        out.setdefault(_key(term), term)
    return out


def _union(*sets: _Terms) -> _Terms:
    out: _Terms = {}
    for terms in sets:
        for key, term in terms.items():
            out.setdefault(key, term)
    return out


def _r_order(written: list[Term], mentioned: list[str]) -> tuple[Term, ...]:
    """R's ``terms()`` order: by degree (the intercept first), written order within a degree, and each
    interaction's factors in the order the formula first mentions them (removed terms count: R orders
    by the formula's variables, so ``y ~ a*b - a`` has ``a:b``)."""
    first = {factor: i for i, factor in reversed(list(enumerate(mentioned)))}
    placed = [tuple(sorted(term, key=lambda f: first.get(f, len(first)))) for term in written]
    return tuple(sorted(placed, key=lambda term: 0 if term == (INTERCEPT,) else len(term)))
