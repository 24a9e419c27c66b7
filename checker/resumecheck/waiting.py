"""Waiting for a condition with a deadline: the one polling helper of the checker and every
recorder (a server that starts, a process that stops, a workflow that parks, a barrier).

Each caller used to write its own `deadline = ...; while ...: time.sleep(...)` loop, with its
own idea of whether the check runs once more at the deadline; tenacity does the timing here, so
every wait checks at least once, checks again every `every` seconds, and gives up after
`timeout`. What a caller does when the time runs out (raise its own error, go on) stays its own:
`poll` returns None then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tenacity import AsyncRetrying, Retrying, retry_if_result, stop_after_delay, wait_fixed

T = TypeVar("T")


def _unmet(result: object) -> bool:
    return not result


def _policy(timeout: float, every: float) -> dict[str, Any]:
    """Check, and again every `every` s while the result is falsy, until `timeout` s passed;
    then None. An exception is not retried."""
    return {
        "stop": stop_after_delay(timeout),
        "wait": wait_fixed(every),
        "retry": retry_if_result(_unmet),
        "retry_error_callback": lambda _state: None,
        "reraise": True,
    }


def poll(check: Callable[[], T], *, timeout: float, every: float) -> T | None:
    """The first truthy result of `check()`, or None once `timeout` seconds passed without
    one. An exception from `check` is not retried: it propagates (a check that may fail for a
    while catches its own errors and returns a falsy value)."""
    return Retrying(**_policy(timeout, every))(check)


async def apoll(check: Callable[[], Awaitable[T]], *, timeout: float, every: float) -> T | None:
    """`poll` for a coroutine check, sleeping on the event loop between the checks."""
    return await AsyncRetrying(**_policy(timeout, every))(check)
