"""What resume-check concludes about one trace, in the words of the contract."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Events after a violation's bad one that a picture of it draws (pale: they were never judged).
SHOWN_AFTER = 4


class Status(enum.Enum):
    CONFORMS = "conforms"
    VIOLATES = "violates"
    INVALID = "invalid"
    ERROR = "error"  # TLC could not judge it


@dataclass(frozen=True)
class WitnessStep:
    """One state of a witness: the initial one (`after_event` 0, no `event`), or the one the
    trace's `after_event`-th event leads to, with that event's line as the trace has it."""

    after_event: int
    event: str | None
    changed: dict[str, str]
    """The parts of the state that changed, by path (`run[2].task[1]`), in TLA+ syntax; every
    variable for the initial state."""


@dataclass(frozen=True)
class Witness:
    """A behaviour of the contract that matches a trace, hidden state too (`--witness`)."""

    steps: tuple[WitnessStep, ...]
    ids: dict[str, dict[str, Any]]
    """Per namespace, the numbers TLC saw for identifiers and the trace's own names for them."""


@dataclass
class Verdict:
    """The judgement of one trace file.

    For a violation, `event_index` is the 1-based index of the first event that no behaviour of
    the contract allows (`matched` = event_index - 1 events did match), `properties` the
    properties that event would break, empty when no action of the contract matches it at all.
    """

    path: Path
    status: Status
    contract: str | None = None
    events: int = 0
    matched: int = 0
    event_index: int | None = None
    line: int | None = None
    event: str | None = None
    properties: list[str] = field(default_factory=list)
    descriptions: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    # Why the trace's last line was not judged (cut short by a killed writer), if it was not:
    # the verdict is then about the complete lines only and says so.
    truncation: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    # Under --witness: the witness, or why TLC gave none.
    witness: Witness | str | None = None
    # For an event no action allows: the reference runtime's possible moves there, or None when
    # the contract could not say (an area without TraceExpected).
    expected: list[dict[str, Any]] | None = None
    # The contract's files TLC judged this trace with (override folders first); empty when the
    # trace never reached TLC.
    spec_files: tuple[Path, ...] = ()
    # This trace's share of the wall time TLC took for its contract's batch (JUnit's `time`).
    seconds: float = 0.0
    # Under --tolerate: each tolerated property some behaviour broke, and the first event (of
    # the matched prefix) where one did. It did not make the trace violate.
    tolerated: dict[str, int] = field(default_factory=dict)
    # Every property whose break cut some behaviour of this trace short, on any branch TLC
    # explored (the violation's own, and branches that stopped earlier): a run that tolerates
    # none of them explores the same behaviours again.
    cut_for: frozenset[str] = frozenset()
    # For a violation: the events a picture of it draws, as the trace has them (every event up
    # to the bad one and SHOWN_AFTER after it), so that no renderer reads the trace again (a
    # file that may have changed, or gone, since it was judged).
    shown: tuple[dict[str, Any], ...] = ()
    # The trace's header line as read (the workflow's graph it may declare), for the same reason.
    header: dict[str, Any] | None = None

    @property
    def truncated(self) -> bool:
        return self.truncation is not None

    @property
    def complete(self) -> bool | None:
        """Whether a conforming trace reached an end, as the contract's summary says (its
        `complete` field, decided in TLA+); None for a contract whose summary does not say.
        A trace whose last line was cut short is not complete, whatever its lines reached."""
        if self.status is not Status.CONFORMS:
            return None
        if self.truncated:
            return False
        complete = self.summary.get("complete")
        return complete if isinstance(complete, bool) else None

    @property
    def in_brief(self) -> str:
        """The verdict in a few words for a report line: `violates CV at event 33`."""
        if self.status is Status.VIOLATES:
            where = f" at event {self.event_index}" if self.event_index else ""
            return f"violates {', '.join(self.properties) or self.reason}{where}"
        if self.status is Status.CONFORMS:
            return "conforms"
        return f"{self.status.value}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": str(self.path),
            "status": self.status.value,
            "contract": self.contract,
            "events": self.events,
            "matched": self.matched,
        }
        if self.status is Status.VIOLATES:
            data |= {
                "event_index": self.event_index,
                "line": self.line,
                # The event as the trace has it: an object, so a program needs no second parse.
                "event": _event_object(self.event),
                "properties": self.properties,
            }
            if not self.properties and self.expected is not None:
                data["expected"] = self.expected
        if self.reason:
            data["reason"] = self.reason
        if self.truncation is not None:
            data["truncated"] = True
            data["truncation"] = self.truncation
        if self.summary:
            data["summary"] = self.summary
        if self.complete is not None:
            data["complete"] = self.complete
        if self.tolerated:
            data["tolerated"] = self.tolerated
        if self.witness is not None:
            data["witness"] = _witness_json(self.witness)
        return data


def _witness_json(witness: Witness | str) -> list[dict[str, Any]]:
    """The steps, then the ids legend; or one entry with the reason there is no witness."""
    if isinstance(witness, str):
        return [{"error": witness}]
    steps: list[dict[str, Any]] = []
    for step in witness.steps:
        entry: dict[str, Any] = {"after_event": step.after_event}
        if step.event is not None:
            entry["event"] = _event_object(step.event)
        entry["changed"] = step.changed
        steps.append(entry)
    return [*steps, {"ids": witness.ids}]


def _event_object(line: str | None) -> Any:
    """A trace line that passed validation, as the JSON value it is (an event object)."""
    return None if line is None else json.loads(line)


def one_line(text: str) -> str:
    """TLC's text of a failure as one line of a report."""
    return shortened(" ".join(text.split()))


def shortened(text: str, limit: int = 500) -> str:
    """A reason cut to `limit` characters: a schema's complaint quotes the value it rejects,
    which a trace can make a megabyte long."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
