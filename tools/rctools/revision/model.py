"""A deterministic stand-in for the model inside a node: it counts calls and tokens.

The efficiency of a recovery policy is the model work it saves, so the only thing a fake must
get right is the accounting; its answers only need to depend on the whole prompt, so that an
output computed from stale inputs differs from the one a full restart computes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

COMPLETION_TOKENS = 16


@dataclass
class FakeModel:
    """Answers a prompt with a digest of it; `on_call` lets a test act while a node runs."""

    calls: int = 0
    tokens: int = 0
    on_call: Callable[[], None] | None = field(default=None, repr=False)

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        self.tokens += len(prompt.split()) + COMPLETION_TOKENS
        if self.on_call is not None:
            self.on_call()
        return "out-" + hashlib.sha256(prompt.encode()).hexdigest()[:12]
