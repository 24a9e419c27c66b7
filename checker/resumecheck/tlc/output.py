"""Read TLC's ``-tool`` output into a :class:`TLCResult`: messages, outcome, error trace,
statistics and ``PrintT`` lines. Running TLC is :mod:`resumecheck.tlc.runner`'s part.

What TLC 2.15 actually prints with ``-tool`` (observed, and what the parser relies on):

* Messages are wrapped as ``@!@!@STARTMSG code:class @!@!@`` ... ``@!@!@ENDMSG code @!@!@``.
  They **nest** (an error 1000 wrapping e.g. an ``Assert`` failure 2132), and a nested start
  marker can appear in the *middle* of a line (``: @!@!@STARTMSG 5001:0 @!@!@``).
* SANY's parse and semantic errors are **not** wrapped: they are plain lines between message
  2220 (SANY start) and 2219 (SANY end); TLC then reports only 3002 "Parsing or semantic
  analysis failed." SANY repeats a module's semantic errors once per later module.
* ``PrintT`` output is plain lines; a long value continues on indented lines.
* When TLC finds a violation it re-evaluates the behaviour to print the trace, so ``PrintT``
  lines are printed a second time after the violation message (see ``prints_before_error``).
* The error trace is one 2217 message per state (``N: <Action line ...>`` then the state),
  a 2218 ``N: Stuttering`` or a 2122 ``N: Back to state: <...>`` for liveness lassos.
* Deadlock is message 2114 (not 2112, which is a violated *action property*); a violated
  temporal property (2116) does not name the property.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from resumecheck.tlc.values import Value, parse_state

__all__ = [
    "Collector",
    "Message",
    "Outcome",
    "TLCResult",
    "TraceState",
    "parse_tlc_output",
    "result_of",
]

# Severity classes of TLC messages (tlc2.output.MP).
NONE, ERROR, TLCBUG, WARNING, STATE = 0, 1, 2, 3, 4


class Outcome(enum.Enum):
    """What a TLC run concluded, coarse enough for callers to branch on."""

    OK = "ok"
    DEADLOCK = "deadlock"
    INVARIANT_VIOLATION = "invariant-violation"
    PROPERTY_VIOLATION = "property-violation"
    EVALUATION_ERROR = "evaluation-error"
    SPEC_ERROR = "spec-error"
    FAILURE = "failure"


@dataclass(frozen=True)
class Message:
    """One ``-tool`` message. ``nested`` ones also appear inside their parent's ``text``."""

    code: int
    severity: int
    text: str
    nested: bool = False

    @property
    def is_error(self) -> bool:
        return self.severity in (ERROR, TLCBUG)


@dataclass(frozen=True)
class TraceState:
    """One state of TLC's error trace.

    ``variables`` is parsed from ``text`` on first use, so a value this parser cannot read
    (raising ``ValueSyntaxError``) never costs the caller TLC's verdict itself.
    """

    index: int
    action: str
    """The label TLC prints inside ``<...>``, e.g. ``Initial predicate`` or
    ``Next line 5, col 3 to line 7, col 20 of module M``; ``Stuttering`` for a stuttering step."""
    text: str
    """The state as TLC printed it (``/\\ x = 1`` lines)."""

    @property
    def action_name(self) -> str:
        """The action's name without TLC's source location: ``Next``, ``Initial predicate``."""
        return _LOCATION_RE.sub("", self.action)

    @functools.cached_property
    def variables(self) -> dict[str, Value]:
        return parse_state(self.text)


@dataclass(frozen=True)
class TLCResult:
    """Everything a caller may want from one TLC run, already parsed."""

    exit_code: int
    outcome: Outcome
    messages: list[Message]
    prints: list[str]
    """Plain (unwrapped) output values in order: PrintT lines. See :func:`parse_tlc_output`."""
    violated: str | None
    """The invariant or action property TLC names as violated, if it names one."""
    error_trace: list[TraceState]
    distinct_states: int | None
    states_generated: int | None
    depth: int | None
    seconds: float
    error_text: str
    stdout: str
    stderr: str = ""
    back_to_state: int | None = None
    """For a liveness counterexample: the trace index the final state loops back to."""
    prints_before_error: int = 0
    """How many of ``prints`` came before the first error message; the rest are TLC's
    re-evaluation while printing the error trace, i.e. duplicates."""

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


# --- reading -tool output ------------------------------------------------------------------

_MARKER_RE = re.compile(r"@!@!@(?:STARTMSG (\d+):(\d+)|ENDMSG (\d+)) @!@!@")
_PRINT_START_RE = re.compile(r'(?:<<|[{\[("]|-?[0-9]|TRUE\b|FALSE\b)')
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_SANY_PROGRESS = ("Parsing file ", "Semantic processing of module ")
_LOCATION_RE = re.compile(r"\s+line \d+, col \d+ to line \d+, col \d+ of module \S+$")
_STATE_HEADER_RE = re.compile(r"(?:State\s+)?(\d+):\s*(.*)")
_VIOLATED_RE = re.compile(
    r"^(?:Invariant|Action property|Temporal property|Property)\s+(\S+)\s+is violated",
    re.MULTILINE,
)
_STATS_RE = re.compile(r"([\d,]+) states? generated, ([\d,]+) distinct states? found")
_DEPTH_RE = re.compile(r"depth of the complete state graph search is ([\d,]+)")

_SANY_START, _SANY_END = 2220, 2219
_STATE_CODES = {2216, 2217}
_STUTTERING, _BACK_TO_STATE = 2218, 2122
_STATS, _DEPTH = 2199, 2194
_HEADER_CODES = {2121, 2264}  # "The behavior up to this point is:" and its liveness twin


def _nesting(line: str) -> int:
    """Net open brackets on a printed line, ignoring string contents."""
    bare = _STRING_RE.sub('""', line)
    opened = bare.count("<<") + bare.count("{") + bare.count("[") + bare.count("(")
    closed = bare.count(">>") + bare.count("}") + bare.count("]") + bare.count(")")
    return opened - closed


@dataclass
class _Open:
    code: int
    severity: int
    slot: int
    nested: bool
    lines: list[str] = field(default_factory=list)


class Collector:
    """Splits TLC's stdout, fed line by line, into messages, prints and SANY's report; the
    runner feeds it while TLC runs, :func:`parse_tlc_output` from a finished run's text."""

    def __init__(self) -> None:
        self._slots: list[Message | None] = []
        self._open: list[_Open] = []
        self._in_sany = False
        self._pending: list[str] = []
        self._pending_depth = 0
        self.prints: list[str] = []
        self.prints_before_error: int | None = None
        self.sany_blocks: list[list[str]] = [[]]
        self.saw_marker = False

    def feed(self, line: str) -> None:
        pos = 0
        for marker in _MARKER_RE.finditer(line):
            self.saw_marker = True
            fragment = line[pos : marker.start()]
            if fragment.strip():
                self._text(fragment.strip())
            pos = marker.end()
            if marker.group(1):
                self._start(int(marker.group(1)), int(marker.group(2)))
            else:
                self._end(int(marker.group(3)))
        if pos == 0:
            self._text(line)
        elif line[pos:].strip():
            self._text(line[pos:].strip())

    def finish(self) -> list[Message]:
        """Close whatever a killed or crashed TLC left open and return messages in start order."""
        self._flush_print()
        while self._open:
            self._close(self._open.pop())
        return [message for message in self._slots if message is not None]

    def _start(self, code: int, severity: int) -> None:
        self._flush_print()
        if code == _SANY_START:
            self._in_sany = True
        elif code == _SANY_END:
            self._in_sany = False
        if severity in (ERROR, TLCBUG) and self.prints_before_error is None:
            self.prints_before_error = len(self.prints)
        self._open.append(_Open(code, severity, len(self._slots), nested=bool(self._open)))
        self._slots.append(None)

    def _end(self, code: int) -> None:
        if not any(entry.code == code for entry in self._open):
            return  # a stray end marker: nothing sensible to attach it to
        while self._open:
            entry = self._open.pop()
            self._close(entry)
            if entry.code == code:
                return

    def _close(self, entry: _Open) -> None:
        text = "\n".join(entry.lines).strip()
        self._slots[entry.slot] = Message(entry.code, entry.severity, text, entry.nested)
        if self._open:
            self._open[-1].lines.extend(text.splitlines())

    def _text(self, line: str) -> None:
        if self._open:
            self._open[-1].lines.append(line)
        elif self._in_sany:
            self._sany_line(line)
        else:
            self._print_line(line)

    def _sany_line(self, line: str) -> None:
        if line.startswith(_SANY_PROGRESS):
            if self.sany_blocks[-1]:
                self.sany_blocks.append([])
        else:
            self.sany_blocks[-1].append(line.rstrip())

    def _print_line(self, line: str) -> None:
        if self._pending:
            self._pending.append(line.rstrip())
            self._pending_depth += _nesting(line)
        elif _PRINT_START_RE.match(line.lstrip()):
            self._pending = [line.strip()]
            self._pending_depth = _nesting(line)
        else:
            return
        if self._pending_depth <= 0:
            self._flush_print()

    def _flush_print(self) -> None:
        if self._pending:
            self.prints.append("\n".join(self._pending))
            self._pending = []
            self._pending_depth = 0

    def sany_text(self) -> str:
        """SANY's report with progress lines dropped and repeated error blocks shown once."""
        seen: list[str] = []
        for block in self.sany_blocks:
            text = re.sub(r"\n{3,}", "\n\n", "\n".join(block)).strip()
            if text and text not in seen:
                seen.append(text)
        return "\n\n".join(seen)


# --- outcome -------------------------------------------------------------------------------

_BY_EXIT_CODE = {
    0: Outcome.OK,
    10: Outcome.SPEC_ERROR,  # an ASSUME is false: the model's constants are unusable
    11: Outcome.DEADLOCK,
    12: Outcome.INVARIANT_VIOLATION,
    13: Outcome.PROPERTY_VIOLATION,
    14: Outcome.EVALUATION_ERROR,  # Assert failed (newer TLC; 2.15 exits 75)
    75: Outcome.EVALUATION_ERROR,
    76: Outcome.EVALUATION_ERROR,
    77: Outcome.EVALUATION_ERROR,
    150: Outcome.SPEC_ERROR,
    151: Outcome.SPEC_ERROR,
}

_BY_MESSAGE_CODE = {
    2107: Outcome.INVARIANT_VIOLATION,
    2110: Outcome.INVARIANT_VIOLATION,
    2146: Outcome.INVARIANT_VIOLATION,
    2108: Outcome.PROPERTY_VIOLATION,
    2112: Outcome.PROPERTY_VIOLATION,
    2116: Outcome.PROPERTY_VIOLATION,
    2114: Outcome.DEADLOCK,
    2104: Outcome.SPEC_ERROR,
    2171: Outcome.SPEC_ERROR,
    3002: Outcome.SPEC_ERROR,
    **{code: Outcome.SPEC_ERROR for code in range(2222, 2244)},  # config file problems
    **{code: Outcome.SPEC_ERROR for code in (2280, 2281, 4000, 4001, 4002)},
    **{code: Outcome.SPEC_ERROR for code in range(5001, 5007)},  # config file syntax
    **{
        code: Outcome.EVALUATION_ERROR
        for code in (2102, 2103, 2105, 2106, 2109, 2111, 2113, 2132, 2147, 2154, 2155)
    },
}


def _outcome(exit_code: int, messages: Sequence[Message]) -> Outcome:
    """The exit code decides when it is a known verdict. When it is not (an unknown code, or 0
    from a TLC that exits 0 regardless), the first message that implies a verdict decides."""
    by_exit = _BY_EXIT_CODE.get(exit_code, Outcome.FAILURE)
    if by_exit not in (Outcome.OK, Outcome.FAILURE):
        return by_exit
    for message in messages:
        implied = _BY_MESSAGE_CODE.get(message.code)
        if implied is not None:
            return implied
    return by_exit


def _trace(messages: Sequence[Message]) -> tuple[list[TraceState], int | None]:
    """The first error trace (``-continue`` can print several; each restarts at index 1)."""
    trace: list[TraceState] = []
    back_to: int | None = None
    for message in messages:
        if message.nested or message.code not in (*_STATE_CODES, _STUTTERING, _BACK_TO_STATE):
            continue
        header, _, body = message.text.partition("\n")
        match = _STATE_HEADER_RE.match(header.strip())
        if match is None:
            continue
        index = int(match.group(1))
        if message.code == _BACK_TO_STATE:
            back_to = index
            break
        if trace and index <= trace[-1].index:
            break
        action = match.group(2).strip()
        if action.startswith("<") and action.endswith(">"):
            action = action[1:-1]
        if message.code == _STUTTERING:
            body = trace[-1].text if trace else ""
        trace.append(TraceState(index, action, body.strip()))
    return trace, back_to


def _last_int(
    messages: Sequence[Message], code: int, pattern: re.Pattern[str], group: int
) -> int | None:
    for message in reversed(messages):
        if message.code == code:
            match = pattern.search(message.text)
            if match:
                return int(match.group(group).replace(",", ""))
    return None


def parse_tlc_output(
    stdout: str, *, exit_code: int, seconds: float = 0.0, stderr: str = ""
) -> TLCResult:
    """Build a :class:`TLCResult` from the complete ``-tool`` output of one TLC run.

    ``prints`` rule: a line outside every message and outside SANY's report is a print if it
    starts (after indentation) with ``<<``, ``{``, ``[``, ``(``, ``"``, a digit, ``-digit``,
    ``TRUE`` or ``FALSE``; while its brackets are unbalanced, the following lines continue it
    (TLC breaks long values over indented lines), joined with newlines. Blank lines and TLC's
    banners are therefore never prints; neither is a bare model value (``PrintT(p1)`` prints
    ``p1``), which cannot be told from a banner word.
    """
    collector = Collector()
    for line in stdout.splitlines():
        collector.feed(line)
    return result_of(collector, stdout, exit_code=exit_code, seconds=seconds, stderr=stderr)


def result_of(
    collector: Collector, stdout: str, *, exit_code: int, seconds: float, stderr: str
) -> TLCResult:
    """The :class:`TLCResult` of a run whose stdout (all of it, as ``stdout``) was fed to
    ``collector``."""
    messages = collector.finish()
    outcome = _outcome(exit_code, messages)
    trace, back_to = _trace(messages)
    top_errors = [m for m in messages if m.is_error and not m.nested]
    violated = next(
        (match.group(1) for m in top_errors if (match := _VIOLATED_RE.search(m.text))), None
    )
    parts = [m.text for m in top_errors if m.code not in _HEADER_CODES and m.text]
    if outcome is Outcome.SPEC_ERROR and collector.sany_text():
        parts.insert(0, collector.sany_text())
    if outcome is Outcome.FAILURE and not parts and stderr.strip():
        parts.append(stderr.strip())
    prints = collector.prints
    before = collector.prints_before_error
    return TLCResult(
        exit_code=exit_code,
        outcome=outcome,
        messages=messages,
        prints=prints,
        violated=violated,
        error_trace=trace,
        distinct_states=_last_int(messages, _STATS, _STATS_RE, 2),
        states_generated=_last_int(messages, _STATS, _STATS_RE, 1),
        depth=_last_int(messages, _DEPTH, _DEPTH_RE, 1),
        seconds=seconds,
        error_text="\n\n".join(parts),
        stdout=stdout,
        stderr=stderr,
        back_to_state=back_to,
        prints_before_error=len(prints) if before is None else before,
    )
