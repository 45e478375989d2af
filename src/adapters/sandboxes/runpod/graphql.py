"""A strict parser for the GraphQL the RunPod SDK and our adapter send (executable documents).

It accepts one operation (`query`/`mutation`, optional name, or a bare selection set) with fields,
arguments, nested selection sets and the value literals of the spec: strings with the spec's
escapes, numbers, true/false/null, enums, lists and input objects. Variables, fragments,
directives, aliases and block strings are not used by any client we serve and are rejected, so a
query that was assembled by string interpolation and broke is reported, not guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_PUNCTUATORS = "{}()[]:,!$=@|&"
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class GraphQLSyntaxError(ValueError):
    """The document is not well-formed GraphQL (message names the offset)."""


@dataclass(frozen=True)
class EnumValue:
    name: str


@dataclass
class Field:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    selections: list[Field] | None = None  # None: a leaf


@dataclass
class Operation:
    kind: str  # "query" or "mutation"
    name: str | None
    selections: list[Field]


@dataclass(frozen=True)
class _Token:
    kind: str  # "punct", "name", "string", "number", "eof"
    value: Any
    offset: int


def parse(document: str) -> Operation:
    """Parse one operation; raise GraphQLSyntaxError on anything else."""
    return _Parser(_tokenize(document)).document()


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n,\ufeff":  # commas are insignificant in GraphQL
            i += 1
        elif ch == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
        elif ch == "." and text.startswith("...", i):
            raise GraphQLSyntaxError(f"fragments are not supported (offset {i})")
        elif ch in _PUNCTUATORS:
            tokens.append(_Token("punct", ch, i))
            i += 1
        elif ch == '"':
            start = i
            value, i = _string(text, i)
            tokens.append(_Token("string", value, start))
        elif ch == "-" or ch.isdigit():
            match = _NUMBER.match(text, i)
            if not match or (match.end() < n and (_NAME.match(text, match.end()))):
                raise GraphQLSyntaxError(f"bad number at offset {i}")
            literal = match.group(0)
            number = float(literal) if any(c in literal for c in ".eE") else int(literal)
            tokens.append(_Token("number", number, i))
            i = match.end()
        else:
            match = _NAME.match(text, i)
            if not match:
                raise GraphQLSyntaxError(f"unexpected character {ch!r} at offset {i}")
            tokens.append(_Token("name", match.group(0), i))
            i = match.end()
    tokens.append(_Token("eof", None, n))
    return tokens


def _string(text: str, start: int) -> tuple[str, int]:
    if text.startswith('"""', start):
        raise GraphQLSyntaxError(f"block strings are not supported (offset {start})")
    out: list[str] = []
    i, n = start + 1, len(text)
    while True:
        if i >= n:
            raise GraphQLSyntaxError(f"unterminated string starting at offset {start}")
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch in "\r\n":
            raise GraphQLSyntaxError(f"line break inside a string at offset {i}")
        if ch < " " and ch != "\t":
            raise GraphQLSyntaxError(f"control character inside a string at offset {i}")
        if ch == "\\":
            code = text[i + 1] if i + 1 < n else ""
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                i += 2
                continue
            digits = text[i + 2 : i + 6]
            if code == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            raise GraphQLSyntaxError(f"bad escape sequence at offset {i}")
        out.append(ch)
        i += 1


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self._tokens = tokens
        self._pos = 0

    def document(self) -> Operation:
        token = self._peek()
        if token.kind == "punct" and token.value == "{":
            operation = Operation("query", None, self._selection_set())
        elif token.kind == "name" and token.value in {"query", "mutation"}:
            self._pos += 1
            name = None
            if self._peek().kind == "name":
                name = self._take("name").value
            if self._is("("):
                raise GraphQLSyntaxError(
                    f"variables are not supported (offset {self._peek().offset})"
                )
            operation = Operation(token.value, name, self._selection_set())
        else:
            raise GraphQLSyntaxError(f"expected an operation at offset {token.offset}")
        end = self._peek()
        if end.kind != "eof":
            raise GraphQLSyntaxError(
                f"unexpected {end.value!r} after the operation (offset {end.offset})"
            )
        return operation

    def _selection_set(self) -> list[Field]:
        self._expect("{")
        fields: list[Field] = []
        while not self._is("}"):
            fields.append(self._field())
        self._expect("}")
        if not fields:
            raise GraphQLSyntaxError("empty selection set")
        return fields

    def _field(self) -> Field:
        name = self._take("name").value
        if self._is(":"):
            raise GraphQLSyntaxError(f"aliases are not supported ({name})")
        if self._is("@"):
            raise GraphQLSyntaxError(f"directives are not supported ({name})")
        arguments: dict[str, Any] = {}
        if self._is("("):
            self._pos += 1
            while not self._is(")"):
                key = self._take("name").value
                self._expect(":")
                if key in arguments:
                    raise GraphQLSyntaxError(f"argument {key} given twice")
                arguments[key] = self._value()
            self._expect(")")
            if not arguments:
                raise GraphQLSyntaxError(f"empty argument list on {name}")
        selections = self._selection_set() if self._is("{") else None
        return Field(name, arguments, selections)

    def _value(self) -> Any:
        token = self._peek()
        if token.kind in {"string", "number"}:
            self._pos += 1
            return token.value
        if token.kind == "name":
            self._pos += 1
            return {"true": True, "false": False, "null": None}.get(
                token.value, EnumValue(token.value)
            )
        if self._is("["):
            self._pos += 1
            items = []
            while not self._is("]"):
                items.append(self._value())
            self._expect("]")
            return items
        if self._is("{"):
            self._pos += 1
            obj: dict[str, Any] = {}
            while not self._is("}"):
                key = self._take("name").value
                self._expect(":")
                if key in obj:
                    raise GraphQLSyntaxError(f"input field {key} given twice")
                obj[key] = self._value()
            self._expect("}")
            return obj
        if self._is("$"):
            raise GraphQLSyntaxError(f"variables are not supported (offset {token.offset})")
        raise GraphQLSyntaxError(f"expected a value at offset {token.offset}")

    def _peek(self) -> _Token:
        return self._tokens[self._pos]

    def _is(self, punct: str) -> bool:
        token = self._peek()
        return token.kind == "punct" and token.value == punct

    def _expect(self, punct: str) -> None:
        if not self._is(punct):
            token = self._peek()
            got = "end of document" if token.kind == "eof" else repr(token.value)
            raise GraphQLSyntaxError(f"expected {punct!r}, got {got} at offset {token.offset}")
        self._pos += 1

    def _take(self, kind: str) -> _Token:
        token = self._peek()
        if token.kind != kind:
            got = "end of document" if token.kind == "eof" else repr(token.value)
            raise GraphQLSyntaxError(f"expected a {kind}, got {got} at offset {token.offset}")
        self._pos += 1
        return token
