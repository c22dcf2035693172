"""The dashboard shows the user's text as typed (issue 29): every Streamlit text element is Markdown, so a formula
``I(2**10**10)`` used to show as ``I(21010)`` in bold, ``[a](javascript:x)`` as a link and ``$x$`` as LaTeX.

The rule, checked here on the source of ``app/*.py`` and ``pages/*.py`` (with :mod:`ast`, so it holds for code
not written yet): the text of every Markdown call — ``.error .warning .info .success .toast .caption .markdown
.write .title .header .subheader .status`` on any receiver (``st``, ``st.sidebar``, a column) and the app's own
``flash`` — is built only of

* string literals: the app's own text, where Markdown is meant;
* calls of :func:`app.escape.escape_md` or :func:`app.escape.code_md`: the user's text, an exception's
  message (it echoes the user's input), anything read from the store or the engine;
* UPPER_CASE names: module constants, the app's own text;
* numbers: a formatted value with a numeric format spec (``{n:,}``, ``{step:d}``, ``{s:.1f}``) or ``len(...)``
  (a string given a numeric spec raises, so a mislabelled value fails loudly instead of showing unescaped);
* ``+``, ``a if c else b`` and ``"sep".join(...)`` of the above (a join's items each so built).

Text that is Markdown on purpose and made elsewhere (the README, the user's own notes previewed as Markdown, what
``show_flash`` replays of a checked ``flash``) says so with a ``# markdown: <why>`` comment on a line of the call.
"""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import given
from hypothesis import strategies as hs
from streamlit.testing.v1 import AppTest

from app.escape import code_md, escape_md
from engine.io.paths import REPO_ROOT
from tests.test_pages import _measured_toy, app_db, page  # noqa: F401  (app_db: the fixture)

#: Calls whose text Streamlit renders as Markdown (any receiver), and the app's own ``flash``.
MARKDOWN_CALLS = {"error", "warning", "info", "success", "toast", "caption", "markdown", "write", "title", "header",
                  "subheader", "status"}
ESCAPES = {"escape_md", "code_md"}
NUMERIC_SPEC = re.compile(r"[,_]|[bcdoxXeEfFgGn%]$")
PRAGMA = "# markdown:"


def displayed(source: str) -> str:
    """What a CommonMark renderer shows of text whose only syntax is backslash escapes."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", source)


# -- the helper ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("typed", "source"), [
    ("I(2**10**10)", r"I(2\*\*10\*\*10)"),  # bold
    ("x*y*", r"x\*y\*"),  # emphasis
    ("[a](javascript:x)", r"\[a\](javascript\:x)"),  # a link
    ("![i](x.png)", r"!\[i\](x.png)"),  # an image
    ("$x$ and $$y$$", r"\$x\$ and \$\$y\$\$"),  # LaTeX
    ("<script>a</script> <https://x.y>", r"\<script>a\</script> \<https://x.y>"),  # HTML, an autolink
    ("&amp; &#42;", r"\&amp; \&#42;"),  # entities
    (":red[alert] :blue-background[x]", r"\:red\[alert\] \:blue-background\[x\]"),  # coloured text directives
    ("x:small[y] x1:x3 a:b{c}", r"x\:small\[y\] x1\:x3 a\:b{c}"),
    (":material/home: :smile: :+1:", r"\:material\/home: \:smile\: \:+1\:"),  # an icon, emoji shortcodes
    ("__init__ _a_", r"\_\_init\_\_ \_a\_"),  # emphasis by underscores
    ("~~gone~~ a~b~", r"\~\~gone\~\~ a\~b\~"),  # strikethrough
    ("`code`", r"\`code\`"),
    ("a | b", r"a \| b"),  # a table cell
    (r"C:\dir\*", r"C:\\dir\\\*"),  # a backslash stays one
    ("# title", r"\# title"),  # block syntax at the start of a line
    ("- item\n+ item\n> quote\n1. item\n2) item\n===", "\\- item\n\\+ item\n\\> quote\n1\\. item\n2\\) item\n\\==="),
])
def test_markdown_the_user_typed_is_escaped(typed, source):
    assert escape_md(typed) == source
    assert displayed(source) == typed


@pytest.mark.parametrize("plain", [
    "unknown name 'x9'", "y ~ x1 + x2 + I(x1^2)", "lws_y <= threads_number", "p < 0.05, p > 0.1",
    "table my-table.csv: objective 'time' row 3: 'fast' is not a number", "Type III ANOVA: the model (I(x1 + x2))",
    "time_per_pixel", "3 * 4", "1,400 samples (200 new).", "Noise floor: 6 configurations",
])
def test_ordinary_text_reads_the_same_in_the_source(plain):
    """Only what Markdown would interpret is escaped: prose, formulas and file names stay readable in the source."""
    expected = plain.replace("*", r"\*")
    assert escape_md(plain) == expected


@given(hs.text(alphabet=hs.characters(codec="utf-8", exclude_characters="\r")))
def test_escaping_keeps_every_character(text):
    """Each escape is a backslash before ASCII punctuation, which CommonMark shows as that character alone."""
    assert displayed(escape_md(text)) == text


@given(hs.text(alphabet=hs.sampled_from("*_`[]$<&|:~\\ab1 \n#>-/")))
def test_no_active_character_is_left_unescaped(text):
    source = escape_md(text)
    bare = re.sub(r"\\[!-/:-@\[-`{-~]", "\0", source)  # each escaped character, as a character of no meaning
    assert not re.search(r"[*`\[\]$&|\\]|<[A-Za-z/!?]|:[\w+-]|^[ ]*[#>+-]", bare, re.MULTILINE), source


@pytest.mark.parametrize(("typed", "source"), [
    ("x1", "`x1`"), ("a`b", "``a`b``"), ("`a``", "``` `a`` ```"), ("y ~ **x**", "`y ~ **x**`"), ("", ""),
])
def test_code_md_is_a_code_span_that_no_backtick_can_close(typed, source):
    assert code_md(typed) == source


# -- the rule -----------------------------------------------------------------------------------------------------
def _safe(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_safe_value(part) if isinstance(part, ast.FormattedValue) else _safe(part) for part in node.values)
    if isinstance(node, ast.Call):
        called = node.func
        name = called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute) else ""
        if name in ESCAPES or name == "len":
            return True
        if name == "join" and isinstance(called, ast.Attribute) and isinstance(called.value, ast.Constant) and node.args:
            items = node.args[0]
            return _safe(items.elt) if isinstance(items, (ast.GeneratorExp, ast.ListComp)) else _safe(items)
        return False
    if isinstance(node, ast.Name):
        return node.id.isupper()
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _safe(node.left) and _safe(node.right)
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    return False


def _safe_value(part: ast.FormattedValue) -> bool:
    spec = part.format_spec
    text = "".join(str(c.value) for c in spec.values if isinstance(c, ast.Constant)) if isinstance(spec, ast.JoinedStr) else ""
    return (part.conversion == -1 and bool(NUMERIC_SPEC.search(text))) or _safe(part.value)


def unescaped_calls(source: str, filename: str = "<source>") -> list[str]:
    """``file:line: text`` of every Markdown call whose text the rule above does not accept."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if not ((isinstance(called, ast.Attribute) and called.attr in MARKDOWN_CALLS)
                or (isinstance(called, ast.Name) and called.id == "flash")):
            continue
        text = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("body", "label")), None)
        if text is None or _safe(text) or any(PRAGMA in line for line in lines[node.lineno - 1:node.end_lineno]):
            continue
        found.append(f"{filename}:{node.lineno}: {ast.unparse(text)[:100]}")
    return found


def test_the_rule_tells_escaped_text_from_raw_text():
    raw = ["st.error(str(exc))", "st.error(job.error)", "st.warning(f'{line}')", "col.markdown(f'**{name}**')",
           "flash(f'Created {spec.name}')", "st.info('a' + name)", "st.caption(', '.join(names))",
           "st.success(f'{n!r:>5}')", "st.error(body=text)"]
    cleared = ["st.error(escape_md(exc))", "st.error('A **literal**')", "st.info(f'{n:,} rows of {escape_md(name)}')",
               "col.markdown(f'**{escape_md(kind)}**')", "flash(f'Saved design {design_id:d}.')",
               "st.caption(', '.join(escape_md(n) for n in names))", "st.info(HINT if a else f'{len(x)} rows')",
               "st.caption(f'Model: {code_md(formula)}')", "st.markdown(text)  # markdown: the user's notes",
               "st.dataframe(frame)", "log.append(text)"]
    assert [unescaped_calls(line) != [] for line in raw] == [True] * len(raw)
    assert [unescaped_calls(line) for line in cleared] == [[]] * len(cleared)


def test_every_dashboard_text_escapes_what_it_did_not_write():
    paths = sorted([*(REPO_ROOT / "app").glob("*.py"), *(REPO_ROOT / "pages").glob("*.py")])
    found = [line for path in paths
             for line in unescaped_calls(path.read_text(encoding="utf-8"), str(path.relative_to(REPO_ROOT)))]
    assert found == [], "escape these with app.escape.escape_md (or code_md):\n" + "\n".join(found)


# -- on the pages ---------------------------------------------------------------------------------------------------
def _guarded() -> None:
    import streamlit as st

    from app.components import guard
    from engine.errors import UserError

    with guard():
        raise UserError(st.session_state.get("message", ""))


def test_the_error_guard_escapes_the_message():
    at = AppTest.from_function(_guarded, default_timeout=60)
    at.session_state["message"] = "formula 'I(2**10**10)': term [a](javascript:x) :red[$x$]"
    at.run()
    assert not at.exception
    assert at.error[0].value == r"formula 'I(2\*\*10\*\*10)': term \[a\](javascript\:x) \:red\[\$x\$\]"


@pytest.mark.parametrize(("typed", "escaped"), [
    ("I(2**10**10)", r"I(2\*\*10\*\*10)"),
    ("[a](javascript:x)", r"\[a\](javascript\:x)"),
    ("$x$", r"\$x\$"),
    ("x1*x2*", r"x1\*x2\*"),
])
def test_a_bad_formula_on_the_analyze_page_shows_as_typed(app_db, typed, escaped):  # noqa: F811
    _measured_toy(app_db, n=6)
    at = page("analyze.py").run()
    [t for t in at.text_input if t.label == "Formula"][0].input(f"y ~ {typed}").run()
    assert not at.exception
    errors = [e.value for e in at.error if "formula" in e.value]
    assert len(errors) == 1 and escaped in errors[0], errors
    assert typed in displayed(errors[0])


def test_a_study_name_in_a_flash_shows_as_typed(app_db):  # noqa: F811
    at = page("studies.py").run()
    at.text_input(key="new_name").input("Toy _draft_").run()
    at.button(key="create_from_template").click().run()
    assert not at.exception and not at.error
    assert at.success[0].value.startswith(r"Created study 'Toy \_draft\_'")
