"""Show untrusted text so that it cannot pass for the report around it.

File names and everything a trace supplies (events, identifiers in reasons) reach the reports.
A newline in a file name would start a report line of its own (`x\\nok.jsonl: conforms`), an
ANSI escape could rewrite the terminal, a bidi override could reorder what is shown, and a byte
of a file name that is not UTF-8 cannot even be printed. The renderers pass such text through
this module:

- `text`: control, format and separator characters and undecodable bytes as visible escapes
  (`\\n`, `\\x1b`, `\\u202e`, `\\xff`); everything else unchanged. Applied to every line of
  the text report, so no line can hold two.
- `path`: a file name as the first word of a report line: a plain name as it is, any other in
  double quotes with `"` and `\\` escaped too, so where the name ends is never in doubt.
- `xml`: text XML 1.0 can carry: the characters it forbids as the same visible escapes.
- `json_safe`: a JSON document whose strings are all valid Unicode (JSON escapes the rest).
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Unicode categories shown as escapes: controls (C0, DEL, C1), format characters (bidi
# overrides, zero-width characters), line and paragraph separators, and surrogates, which is
# how Python holds the undecodable bytes of a file name.
_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
_PLAIN_PATH = re.compile(r"[\w./@+,=%~-]+")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape_char(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: byte (code - 0xDC00) of a file name
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def text(value: object) -> str:
    """`value` as one line of visible text: hidden characters shown as escapes."""
    shown = str(value)
    if shown.isascii() and shown.isprintable():
        return shown
    return "".join(
        _escape_char(char) if unicodedata.category(char) in _HIDDEN else char for char in shown
    )


def path(value: Path | str) -> str:
    """A file name for the start of a report line: bare when plain, quoted otherwise."""
    shown = os.fspath(value)
    if _PLAIN_PATH.fullmatch(shown):
        return shown
    return '"' + text(shown.replace("\\", "\\\\").replace('"', '\\"')) + '"'


def xml(value: object) -> str:
    """Text for an XML 1.0 document: the characters it forbids shown as escapes."""
    return _NOT_XML.sub(lambda match: _escape_char(match.group()), str(value))


def json_safe(value: Any) -> Any:
    """`value` (a JSON document) with every string valid Unicode: a file name's undecodable
    bytes, or a lone surrogate a trace wrote as `\\ud800`, shown as escapes."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "".join(_escape_char(c) if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
        return value
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
