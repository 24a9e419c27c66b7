"""The events that carry a recorded workflow from one step to the next: one class per step, so
each step accepts only its own (a shared class would fan out to every step). Module-level, so
that `Context.from_dict` can import them back by their qualified name."""

from __future__ import annotations

from workflows.events import Event

STEPS = ("reserve", "charge", "mail", "ship", "quote", "approve", "book")


def _event(step: str) -> type[Event]:
    name = f"To{step.title()}"
    cls = type(name, (Event,), {"__module__": __name__, "__qualname__": name})
    globals()[name] = cls
    return cls


TO: dict[str, type[Event]] = {step: _event(step) for step in STEPS}
