"""The user's text made literal in Streamlit's Markdown, which every alert, caption and label renders.

Its own module, importing nothing heavy: the entry point (``app/main.py``) and the store opener escape their
messages before the pages load anything.
"""

from __future__ import annotations

import re

#: Characters Markdown reads as syntax wherever they stand (``\\`` among them: it would escape what follows).
_ALWAYS = frozenset("\\`*[]$&|")
_CANDIDATES = re.compile(r"[\\`*\[\]$&|<_~:/]")
_TAG_START = re.compile(r"[A-Za-z/!?]")
_NAME_START = re.compile(r"[\w+-]")
#: The colon that closes an emoji shortcode (``:smile:``, ``:+1:``): Streamlit loads its emoji only if one is there.
_SHORTCODE_END = re.compile(r"(?<=:)[\w+-]+(?=:)")
#: Block syntax at the start of a line: a heading, a quote, a list item, a setext underline.
_LINE_START = re.compile(r"^([ \t]*(?:\d+(?=[.)]))?)([#>+=\-.)])", re.MULTILINE)


def escape_md(text: object) -> str:
    """``text`` made literal in Streamlit's Markdown: for the user's text and every exception's message (it echoes
    the user's input), which an alert would otherwise render (``**`` bold, ``[a](x)`` a link, ``$x$`` LaTeX).

    Each escape is a backslash before ASCII punctuation, which Markdown shows as that character alone: always
    ``\\ ` * [ ] $ & |``; ``<`` opening a tag or an autolink; ``_`` unless inside a word; ``~`` unless spaced on
    both sides; ``:`` opening a directive or a shortcode (``:red[``, ``:material/``, ``:smile:``) or closing a
    shortcode, and the ``/`` of ``:material/``; block syntax at a line's start. Prose, formulas (``y ~ x1 + x2``)
    and file names read the same in the source. Streamlit's own replacements inside text (`` -> `` as an arrow,
    ``:streamlit:`` as its logo) are beyond an escape's reach.
    """
    text = str(text)
    closers = {match.end() for match in _SHORTCODE_END.finditer(text)}

    def escaped(match: re.Match[str]) -> str:
        char, at = match.group(), match.start()
        before, after = text[at - 1:at], text[at + 1:at + 2]
        active = (char in _ALWAYS
                  or (char == "<" and bool(_TAG_START.match(after)))
                  or (char == "_" and not (before.isalnum() and after.isalnum()))
                  or (char == "~" and not (before.isspace() and after.isspace()))
                  or (char == ":" and (bool(_NAME_START.match(after)) or at in closers))
                  or (char == "/" and text.endswith(":material", 0, at)))
        return "\\" + char if active else char

    return _LINE_START.sub(r"\1\\\2", _CANDIDATES.sub(escaped, text))


def code_md(text: object) -> str:
    """``text`` as a Markdown code span (literal, monospace) fenced by more backticks than it holds in a row, so
    no backtick in it can close the span early."""
    text = " ".join(str(text).splitlines())
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
