"""The placeholders of a manifest's templates (commands, launcher, library build paths): find
them, fill them, render an argument list.

A template element holds {name} placeholders; {{ and }} stand for literal braces. Templates are
argument lists, so nothing passes through a shell; a placeholder that stands for several
arguments ({binary}, {params}, {extra}) fills a whole element.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_TOKEN_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


def placeholders(text: str) -> list[str] | None:
    """Placeholder names in one template element; None if its braces are malformed."""
    names = []
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if tok in ("{{", "}}"):
            continue
        if m.group(1) is None:
            return None  # a lone brace
        names.append(m.group(1))
    return names


def fill(element: str, values: Mapping[str, str]) -> str:
    """One template element with its placeholders replaced by values (KeyError for a name
    values lacks: the manifest's checks make sure none does)."""

    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        return values[m.group(1)]

    return _TOKEN_RE.sub(sub, element)


def render(
    template: Sequence[str], scalars: Mapping[str, str], lists: Mapping[str, list[str]]
) -> list[str]:
    """An argument list: an element that is exactly {name} of lists becomes those arguments,
    every other element is filled from scalars."""
    out: list[str] = []
    for element in template:
        name = element[1:-1] if element.startswith("{") and element.endswith("}") else ""
        if name in lists and element == f"{{{name}}}":
            out += lists[name]
        else:
            out.append(fill(element, scalars))
    return out


def arg_text(value: object) -> str:
    """A cell value as the prototype sees it: booleans lower case, numbers without '.0'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
