"""TLC's evaluation errors in a sentence: what failed, in which definition, where.

When TLC cannot evaluate an expression (a division by zero, a function applied outside its
domain, a failed Assert) it stops and prints a Java exception's boilerplate, the cause, and a
list of every nested source position it was evaluating -- forty lines that say, in the end,
which definition of which module went wrong. This module keeps the cause, maps the positions
back to the definitions that contain them, and names the innermost one (and the property, when
the error happened inside the contract's `Properties` record).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from resumecheck.tlc.output import TLCResult

_POSITION = re.compile(r"^\d+\. Line (\d+), column (\d+) to line \d+, column \d+ in (\w+)$")
_DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==")
_BOILERPLATE = (
    "TLC threw an unexpected exception.",
    "This was probably caused by an error in the spec or model.",
    "See the User Output or TLC Console for clues to what happened.",
    "The exception was a ",
    "The error occurred when TLC was evaluating the nested",
    "expressions at the following positions:",
    "The behavior up to this point is:",
    "Error: ",
)


@dataclass(frozen=True)
class EvaluationError:
    """One evaluation error as TLC reported it, in the contract's terms."""

    cause: str
    definition: str | None = None  # the innermost contract definition being evaluated
    location: str | None = None  # e.g. "ResumeCore.tla, line 448, column 27"
    property: str | None = None  # the Properties member the error was inside, if any

    def what(self) -> str:
        """E.g. `property ZZ (ResumeCore.tla, line 448, column 27)`."""
        if self.definition is None:
            return "the contract"
        if self.property is None:
            return f"{self.definition} ({self.location})"
        inner = "" if self.definition == self.property else f"in {self.definition}, "
        return f"property {self.property} ({inner}{self.location})"


def read_evaluation_error(result: TLCResult, folders: Sequence[Path]) -> EvaluationError:
    """The evaluation error of a TLC run; `folders` are where its modules can be read."""
    cause: list[str] = []
    positions: list[tuple[str, int, int]] = []
    for message in result.messages:
        if not message.is_error or message.nested:  # a nested message is in its parent's text
            continue
        for line in message.text.splitlines():
            line = line.strip().removeprefix(":").strip()
            match = _POSITION.match(line)
            if match:
                positions.append((match.group(3), int(match.group(1)), int(match.group(2))))
            elif line and not line.startswith(_BOILERPLATE) and line not in cause:
                cause.append(line)
    chain: list[tuple[str, str]] = []  # (definition, location), outermost first
    for module, line, column in positions:
        name = _definition_at(_find(module, tuple(folders)), line)
        if name is not None:
            chain.append((name, f"{module}.tla, line {line}, column {column}"))
    names = [name for i, (name, _) in enumerate(chain) if i == 0 or chain[i - 1][0] != name]
    inside = names[names.index("Properties") + 1 :] if "Properties" in names else []
    return EvaluationError(
        cause=" ".join(cause) or f"TLC exited with code {result.exit_code}",
        definition=chain[-1][0] if chain else None,
        location=chain[-1][1] if chain else None,
        property=inside[0] if inside else None,
    )


def _find(module: str, folders: tuple[Path, ...]) -> Path | None:
    for folder in folders:
        path = folder / f"{module}.tla"
        if path.is_file():
            return path
    return None


def _definition_at(path: Path | None, line: int) -> str | None:
    """The top-level definition of the module at `path` whose text holds `line`."""
    if path is None:
        return None
    found = None
    for number, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
        if number >= line:
            break
        match = _DEFINITION.match(text)
        if match:
            found = match.group(1)
    return found
