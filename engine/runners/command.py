"""CommandRunner: run a benchmark program once per repeat and read the metric from its output.

The command is an argument list with ``{factor}`` placeholders (``{{``/``}}`` for literal braces),
substituted per configuration and run without a shell, so a factor value can never inject a shell
command. Booleans become ``1``/``0``. The metric comes from stdout through a regular expression
(first group, else the whole match) or a JSON key path (``a.b.c`` into the last JSON object line).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import UserError
from engine.runners.base import MeasureError, Runner, Trial, check_options
from engine.runners.process import check_outcome, run_process, tail

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)", re.IGNORECASE)


def render_value(value: Any) -> str:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def check_template(text: str, what: str) -> list[str]:
    """The factor names a template uses; an unbalanced or empty brace is an error naming it."""
    names = []
    for match in _PLACEHOLDER.finditer(text):
        if match.group(0) in ("{{", "}}"):
            continue
        name = match.group(1)
        if not name.isidentifier():
            raise UserError(f"{what}: placeholder {match.group(0)!r} in {text!r} must be a factor name")
        names.append(name)
    stripped = _PLACEHOLDER.sub("", text)
    if "{" in stripped or "}" in stripped:
        raise UserError(f"{what}: unbalanced brace in {text!r} (write {{{{ or }}}} for a literal brace)")
    return names


def substitute(text: str, config: Mapping[str, Any]) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        if name not in config:
            raise MeasureError("invalid", f"placeholder {{{name}}} names no factor of this configuration")
        return render_value(config[name])

    return _PLACEHOLDER.sub(replace, text)


class Metric:
    """Where the number lives in a program's stdout: ``{"regex": ...}`` or ``{"json": "key.path"}``."""

    def __init__(self, spec: Mapping[str, Any] | str, what: str) -> None:
        if isinstance(spec, str):
            spec = {"regex": spec}
        if not isinstance(spec, Mapping) or len(spec) != 1 or next(iter(spec)) not in ("regex", "json"):
            raise UserError(f"{what}: metric must be {{regex: PATTERN}} or {{json: KEY}}, got {spec!r}")
        self.how, self.pattern = next(iter(spec.items()))
        if not isinstance(self.pattern, str) or not self.pattern:
            raise UserError(f"{what}: metric {self.how} must be a non-empty text")
        if self.how == "regex":
            try:
                self._regex = re.compile(self.pattern, re.MULTILINE)
            except re.error as exc:
                raise UserError(f"{what}: metric regex {self.pattern!r} is invalid ({exc})") from None

    def read(self, stdout: str) -> float:
        text = self._find(stdout)
        match = _NUMBER.fullmatch(text.strip())
        if not match:
            raise MeasureError("failed", f"metric {self.pattern!r}: {text!r} is not a number")
        return float(match.group(0))

    def _find(self, stdout: str) -> str:
        if self.how == "regex":
            found = self._regex.search(stdout)
            if not found:
                raise MeasureError("failed", f"metric regex {self.pattern!r} not found in output: {tail(stdout, 3, 300)!r}")
            return found.group(1) if self._regex.groups else found.group(0)
        for line in reversed(stdout.strip().splitlines()):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            for part in self.pattern.split("."):
                if not isinstance(doc, Mapping) or part not in doc:
                    raise MeasureError("failed", f"metric JSON key {self.pattern!r} not in the output's JSON line")
                doc = doc[part]
            return str(doc)
        raise MeasureError("failed", f"metric JSON key {self.pattern!r}: no JSON object line in output")


class CommandRunner(Runner):
    """One process per repeat (and per warm-up); the metric read from stdout."""

    kind = "command"
    OPTIONS = ("command", "metric", "env", "cwd", "expect")

    def __init__(self, command: Sequence[str], metric: Mapping[str, Any] | str, *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, expect: str | None = None, **common: Any) -> None:
        super().__init__(**common)
        what = "runner 'command'"
        if isinstance(command, str) or not isinstance(command, Sequence) or not command:
            raise UserError(f"{what}: command must be a non-empty list of arguments (no shell), got {command!r}")
        self.command = [str(a) for a in command]
        self.placeholders = sorted({n for a in self.command for n in check_template(a, what)})
        self.metric = Metric(metric, what)
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        for key, value in self.env.items():
            if not key.isidentifier():
                raise UserError(f"{what}: environment variable name {key!r} is not valid")
            check_template(value, what)
        self.cwd = cwd
        self.expect = re.compile(expect, re.MULTILINE) if expect else None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **_: object) -> CommandRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        if "command" not in spec or "metric" not in spec:
            raise UserError("runner 'command': needs 'command' (argument list) and 'metric' ({regex: ..} or {json: ..})")
        return cls(spec["command"], spec["metric"], env=spec.get("env"), cwd=spec.get("cwd"),
                   expect=spec.get("expect"), **cls.common(spec))

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        argv = [substitute(a, config) for a in self.command]
        env = {**os.environ, **{k: substitute(v, config) for k, v in self.env.items()}}

        def once() -> float:
            outcome = run_process(argv, timeout=self.timeout, env=env, cwd=self.cwd)
            check_outcome(outcome, self.timeout, "command")
            if self.expect is not None and not self.expect.search(outcome.stdout) and self.check:
                raise MeasureError("failed", f"correctness check: output does not match {self.expect.pattern!r}")
            return self.metric.read(outcome.stdout)

        return self.repeat_calls(once, repeats, {"command": argv})
