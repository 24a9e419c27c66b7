"""Is this text the beginning of a JSON object? The test that tells a cut line from damage.

A writer killed in the middle of a line leaves a *prefix* of the line it meant to write: some
valid JSON object with its end missing. Anything else at the end of a file -- a complete object
followed by a stray `}`, a raw control character, a word that is not JSON -- cannot come from a
cut, so the reader must call it damage rather than drop it as "truncated". This scanner accepts
exactly the texts that some continuation would turn into one syntactically valid JSON object
(the strict JSON the reader parses: no NaN, no Infinity, no raw control characters in strings).
"""

from __future__ import annotations

import re

_WS = re.compile(r"[ \t\n\r]*")
_CHARS = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*'
_STRING = re.compile(f'"{_CHARS}"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERAL = re.compile(r"true|false|null")
# What may be left at the very end: a token whose rest was never written.
_PARTIAL_STRING = re.compile('"' + _CHARS + r"(?:\\|\\u[0-9a-fA-F]{0,3})?")
_PARTIAL_NUMBER = re.compile(r"-|-?(?:0|[1-9][0-9]*)(?:\.|(?:\.[0-9]+)?(?:[eE][+-]?[0-9]*)?)")
_PARTIAL_LITERAL = re.compile(r"t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?")

# Parser states: what the grammar allows next.
_VALUE, _KEY_OR_CLOSE, _KEY, _COLON, _COMMA_OR_CLOSE, _VALUE_OR_CLOSE, _DONE = range(7)


def is_object_prefix(text: str) -> bool:
    """True when `text` is a proper beginning of a JSON object: not complete, not damaged."""
    stack: list[str] = []  # the open containers, "{" or "["
    state = _VALUE
    pos = _WS.match(text).end()
    if not text.startswith("{", pos):
        return False
    while True:
        pos = _WS.match(text, pos).end()
        if pos == len(text):
            return state != _DONE
        char = text[pos]
        if state == _DONE:
            return False
        if state in (_KEY_OR_CLOSE, _COMMA_OR_CLOSE, _VALUE_OR_CLOSE) and char in "}]":
            if char != ("}" if stack[-1] == "{" else "]"):
                return False
            stack.pop()
            state, pos = (_COMMA_OR_CLOSE if stack else _DONE), pos + 1
        elif state == _COMMA_OR_CLOSE and char == ",":
            state, pos = (_KEY if stack[-1] == "{" else _VALUE), pos + 1
        elif state == _COLON and char == ":":
            state, pos = _VALUE, pos + 1
        elif state in (_KEY_OR_CLOSE, _KEY):
            step = _token(text, pos, (_STRING,), (_PARTIAL_STRING,))
            if step is None:
                return False
            if step == len(text):
                return True
            state, pos = _COLON, step
        elif state in (_VALUE, _VALUE_OR_CLOSE) and char in "{[":
            stack.append(char)
            state, pos = (_KEY_OR_CLOSE if char == "{" else _VALUE_OR_CLOSE), pos + 1
        elif state in (_VALUE, _VALUE_OR_CLOSE):
            step = _token(
                text,
                pos,
                (_STRING, _NUMBER, _LITERAL),
                (_PARTIAL_STRING, _PARTIAL_NUMBER, _PARTIAL_LITERAL),
            )
            if step is None:
                return False
            if step == len(text):
                return True
            state, pos = _COMMA_OR_CLOSE, step
        else:
            return False


def _token(
    text: str, pos: int, whole: tuple[re.Pattern[str], ...], partial: tuple[re.Pattern[str], ...]
) -> int | None:
    """Where a complete token starting at `pos` ends, len(text) when the rest of the text is an
    unfinished (or just finished) one, None when neither."""
    if any(pattern.fullmatch(text, pos) for pattern in partial):
        return len(text)
    for pattern in whole:
        match = pattern.match(text, pos)
        if match:
            end = match.end()
            # `1x` or `truex` is no token; `1,` and `"a"x` end theirs (the parser judges `x`).
            if pattern is not _STRING and text[end : end + 1].isalnum():
                return None
            return end
    return None
