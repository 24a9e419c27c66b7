"""Imported once by the suite's fork server (`rctools.suite.preload`): crewai with telemetry
off, so that each worker forked from the server skips the ~3 CPU-s import. Nothing runs here:
a kickoff would start crewai's event-bus threads, which a forked worker would not have."""

import os

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"

import crewai.flow.flow
import crewai.flow.persistence

FLOW = crewai.flow.flow.Flow
