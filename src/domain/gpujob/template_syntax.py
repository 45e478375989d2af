"""Template syntax of runpod-deploy configs: parsing, text rendering and shell-safe rendering.

The rule, in the order the scanner applies it at each position:
1. `{{` is a literal `{` and `}}` a literal `}` (so `${{VAR}}` renders as bash's `${VAR}`).
2. `${` (not followed by a second `{`) starts a bash parameter expansion, copied verbatim up to
   its matching `}`: `${HOME}`, `${VAR:-x}` and `${a:-${b}}` reach bash unchanged. Inside it
   nothing is substituted; write `${{OUT:-{run_dir}}}` to put a placeholder in a bash default.
3. `{name}` with `name` an identifier is a placeholder; an unknown name is an error.
4. Every other character, including a lone brace (`{ cmd; }`, `{1..3}`), is literal.
Substituted text is never re-scanned, so a value containing braces stays as it is.

`render_shell` quotes every substituted value for the bash context it lands in (unquoted,
'single', "double", $'ansi', `backticks`, $(...) nesting, comments and here-documents), so the
value always reaches the command as literal data and never as code.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import PegboardError

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TemplateError(PegboardError, ValueError):
    """A template that cannot be rendered: unknown variable, bad syntax or unsafe value."""


@attrs.frozen
class Literal:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    text: str


@attrs.frozen
class Placeholder:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    name: str


Segment = Literal | Placeholder


def parse_template(template: str) -> tuple[Segment, ...]:
    """Split `template` into literal text (escapes resolved) and placeholders."""
    segments: list[Segment] = []
    text: list[str] = []
    i, n = 0, len(template)
    while i < n:
        char = template[i]
        pair = template[i : i + 2]
        if pair in ("{{", "}}"):
            text.append(char)
            i += 2
        elif pair == "${" and template[i + 2 : i + 3] != "{":
            end = _matching_brace(template, i + 1)
            text.append(template[i : end + 1])
            i = end + 1
        elif char == "{" and (match := _PLACEHOLDER.match(template, i)):
            if text:
                segments.append(Literal("".join(text)))
                text = []
            segments.append(Placeholder(match.group(1)))
            i = match.end()
        else:
            text.append(char)
            i += 1
    if text:
        segments.append(Literal("".join(text)))
    return tuple(segments)


def _matching_brace(template: str, open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(template)):
        if template[index] == "{":
            depth += 1
        elif template[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    raise TemplateError(
        f"unterminated bash expansion '${{' at offset {open_index - 1} "
        "(write '${{' for a literal '${')"
    )


def referenced_names(template: str) -> tuple[str, ...]:
    """The placeholder names in `template`, in order of first use."""
    names: dict[str, None] = {}
    for segment in parse_template(template):
        if isinstance(segment, Placeholder):
            names.setdefault(segment.name, None)
    return tuple(names)


def render_text(template: str, variables: Mapping[str, str]) -> str:
    """Substitute placeholders verbatim (paths, names, markers: not shell code)."""
    parts: list[str] = []
    for segment in parse_template(template):
        if isinstance(segment, Literal):
            parts.append(segment.text)
        else:
            parts.append(_lookup(segment.name, variables))
    return "".join(parts)


def render_shell(template: str, variables: Mapping[str, str]) -> str:
    """Substitute placeholders into bash code, each value quoted for its bash context."""
    scanner = _ShellScanner()
    parts: list[str] = []
    for segment in parse_template(template):
        if isinstance(segment, Literal):
            scanner.feed(segment.text)
            parts.append(segment.text)
        else:
            parts.append(scanner.quote(segment.name, _lookup(segment.name, variables)))
    return "".join(parts)


def _lookup(name: str, variables: Mapping[str, str]) -> str:
    try:
        return variables[name]
    except KeyError:
        hint = " (for a bash variable write ${{" + name + "}} or $" + name + ")"
        raise TemplateError(f"unknown template variable {{{name}}}{hint}") from None


def rendered_length(template: str, variables: Mapping[str, str]) -> int:
    """How long `render_text(template, variables)` would be, without building it: checked
    before rendering, so a template that doubles a doubled variable ten times costs nothing."""
    total = 0
    for segment in parse_template(template):
        if isinstance(segment, Literal):
            total += len(segment.text)
        else:
            total += len(variables.get(segment.name, ""))
    return total


def check_names(template: str, known: Iterable[str]) -> list[str]:
    """Unknown placeholder names in `template` (empty when all are known)."""
    known_set = set(known)
    return [name for name in referenced_names(template) if name not in known_set]


# --- bash context tracking ------------------------------------------------------------------

_UNQUOTED, _SINGLE, _DOUBLE, _ANSI, _BACKTICK, _SUBST, _COMMENT = (
    "unquoted",
    "single",
    "double",
    "ansi",
    "backtick",
    "subst",
    "comment",
)
_WORD_BREAK = frozenset(" \t\n;&|()")
_DELIMITER_END = frozenset(" \t\n;&|<>()")


@attrs.define
class _Heredoc:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    delimiter: str
    quoted: bool
    strip_tabs: bool


@attrs.define
class _ShellScanner:
    """A small bash lexer: just enough state to know how a value must be quoted here."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq

    stack: list[str] = attrs.field(factory=lambda: [_UNQUOTED])
    depth: list[int] = attrs.field(factory=list)  # paren depth per open $( )
    escaped: bool = False
    previous: str = "\n"
    pending: list[_Heredoc] = attrs.field(factory=list)
    heredoc: _Heredoc | None = None
    line: str = ""

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            i = self._step(text, i)

    def quote(self, name: str, value: str) -> str:
        if self.escaped:
            raise TemplateError(f"{{{name}}} follows a backslash; a value cannot be escaped")
        if self.heredoc is not None:
            return self._quote_heredoc(name, value)
        state = self.stack[-1]
        if state == _SINGLE:
            return value.replace("'", "'\\''")
        if state == _DOUBLE:
            return re.sub(r'([\\"$`])', r"\\\1", value)
        if state == _ANSI:
            return re.sub(r"([\\'])", r"\\\1", value)
        if state == _COMMENT:
            return value.replace("\n", " ")
        quoted = shlex.quote(value)
        if _BACKTICK in self.stack:
            # Backticks unescape \\ \` \$ once before running the command inside them.
            quoted = re.sub(r"([\\`$])", r"\\\1", quoted)
        self.previous = "'"
        return quoted

    def _quote_heredoc(self, name: str, value: str) -> str:
        assert self.heredoc is not None
        for line in (self.line + value).split("\n"):
            if self._ends_heredoc(line):
                raise TemplateError(
                    f"{{{name}}} would end the here-document {self.heredoc.delimiter!r} early"
                )
        if self.heredoc.quoted:
            return value
        return re.sub(r"([\\$`])", r"\\\1", value)

    def _ends_heredoc(self, line: str) -> bool:
        assert self.heredoc is not None
        candidate = line.lstrip("\t") if self.heredoc.strip_tabs else line
        return candidate == self.heredoc.delimiter

    def _step(self, text: str, i: int) -> int:
        char = text[i]
        if self.heredoc is not None:
            if char == "\n":
                if self._ends_heredoc(self.line):
                    self.heredoc = self.pending.pop(0) if self.pending else None
                self.line = ""
            else:
                self.line += char
            return i + 1
        state = self.stack[-1]
        if self.escaped:
            self.escaped = False
            self.previous = "x"
            return i + 1
        if state == _SINGLE:
            if char == "'":
                self.stack.pop()
            return i + 1
        if state == _COMMENT:
            if char == "\n":
                self.stack.pop()
                return self._newline(i)
            return i + 1
        if state == _ANSI:
            if char == "\\":
                self.escaped = True
            elif char == "'":
                self.stack.pop()
            return i + 1
        if state == _DOUBLE:
            if char == "\\":
                self.escaped = True
            elif char == '"':
                self.stack.pop()
            elif text.startswith("$(", i):
                self._open_subst()
                return i + 2
            elif char == "`":
                self.stack.append(_BACKTICK)
            return i + 1
        return self._step_unquoted(text, i, char, state)

    def _step_unquoted(self, text: str, i: int, char: str, state: str) -> int:
        at_word_start = self.previous in _WORD_BREAK
        self.previous = char
        if char == "\\":
            self.escaped = True
        elif char == "'":
            self.stack.append(_SINGLE)
        elif char == '"':
            self.stack.append(_DOUBLE)
        elif text.startswith("$'", i):
            self.stack.append(_ANSI)
            return i + 2
        elif text.startswith("$(", i):
            self._open_subst()
            self.previous = "("
            return i + 2
        elif char == "`":
            if state == _BACKTICK:
                self.stack.pop()
            else:
                self.stack.append(_BACKTICK)
        elif char == "#" and at_word_start:
            self.stack.append(_COMMENT)
        elif state == _SUBST and char == "(":
            self.depth[-1] += 1
        elif state == _SUBST and char == ")":
            if self.depth[-1] == 0:
                self.stack.pop()
                self.depth.pop()
            else:
                self.depth[-1] -= 1
        elif text.startswith("<<", i) and not text.startswith("<<<", i):
            return self._read_heredoc_operator(text, i + 2)
        elif char == "\n":
            return self._newline(i)
        return i + 1

    def _open_subst(self) -> None:
        self.stack.append(_SUBST)
        self.depth.append(0)

    def _newline(self, i: int) -> int:
        self.previous = "\n"
        if self.pending:
            self.heredoc = self.pending.pop(0)
            self.line = ""
        return i + 1

    def _read_heredoc_operator(self, text: str, i: int) -> int:
        strip_tabs = text.startswith("-", i)
        if strip_tabs:
            i += 1
        while i < len(text) and text[i] in " \t":
            i += 1
        start = i
        while i < len(text) and text[i] not in _DELIMITER_END:
            if text[i] in "'\"":
                close = text.find(text[i], i + 1)
                i = len(text) if close < 0 else close + 1
            else:
                i += 1
        word = text[start:i]
        if word:
            delimiter = word.replace("'", "").replace('"', "").replace("\\", "")
            quoted = delimiter != word
            self.pending.append(_Heredoc(delimiter, quoted, strip_tabs))
        self.previous = "x"
        return i
