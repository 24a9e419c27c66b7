"""The workflows the durable-execution suites (DBOS, Restate, Temporal) each run, written once.

Why one home: a cell of one runtime is compared with the same cell of another (docs/runtimes/),
which holds only while they run the same workflow -- the same steps, in the same order, with
the same kinds of effect, waiting at the same points. Each runtime spells an operation in its
own words (a DBOS step and `recv`, a Restate `ctx.run` and promise, a Temporal activity and
signal wait); `spelled` gives the shared workflows in those words.
"""

from __future__ import annotations

Op = tuple[str, ...]
"""(step word, name, effect kind) or (wait word, topic)."""

LINEAR = (("reserve", "inventory"), ("charge", "payment"), ("mail", "mail"), ("ship", "shipping"))
"""The linear workflow: four steps, each with an effect of its kind."""
QUOTE, BOOK, SHIP = ("quote", "quote"), ("book", "booking"), ("ship", "shipping")


def spelled(step: str, wait: str, second: str = "approval") -> dict[str, list[Op]]:
    """`linear`, `approval` (quote, wait for an approval, book) and `two-approvals` (the same,
    then a second wait on topic `second` and ship), in a runtime's words for a step and a wait."""
    return {
        "linear": [(step, *s) for s in LINEAR],
        "approval": [(step, *QUOTE), (wait, "approval"), (step, *BOOK)],
        "two-approvals": [
            (step, *QUOTE),
            (wait, "approval"),
            (step, *BOOK),
            (wait, second),
            (step, *SHIP),
        ],
    }
