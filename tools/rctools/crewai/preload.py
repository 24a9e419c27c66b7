"""Imported once by the suite's fork server (`rctools.suite.preload`): crewai with telemetry
off, warmed up by one kickoff of a throwaway flow with no persistence (crewai imports most of
its event and console machinery on the first kickoff: ~2 CPU-s more), so that each worker forked
from the server starts in a fraction of a second. The warm-up touches no cell's store."""

import os

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"

import crewai.flow.persistence  # noqa: F401
from crewai.flow.flow import Flow, start


class _WarmUp(Flow):  # type: ignore[type-arg]
    @start()
    def only(self) -> str:
        return "warm"


_WarmUp().kickoff()
