"""Session fixture: real PostgreSQL, redis-server, MariaDB and moto (DynamoDB) on loopback.

Use it with `from services import services # noqa: F401` in a test module (or once in
conftest.py). The fixture starts the servers with `rctools.services` (installing the Debian
packages on a fresh machine: `make test` promises to run everything there), exports their URLs
into the environment so factories and subprocesses see them, and stops at the end only what it
started itself: a developer's `make services-up` servers survive a test run. URLs already in the
environment win, so the suite can also run against servers started elsewhere.

Under pytest-xdist (`make test` runs two workers) each worker has its own session: the first to
ask starts the servers and the other reuses them, so the one that started them must not stop
them when its own tests are done. A worker writes what it started into the file the controller
names (`STARTED_VAR`, set in `configure`), and the controller stops those at the very end
(`finish`), after every worker's last test.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from rctools import services as rcservices

URL_VARS = tuple(rcservices.URL_VARS.values())


STARTED_VAR = "RESUME_CHECK_TEST_SERVICES_STARTED"
"""The file (one name a line) where xdist workers list the servers they started."""


def configure(config: pytest.Config) -> None:
    """On the xdist controller (before it starts its workers, which inherit the variable):
    name the file the workers list what they start in."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        handle, path = tempfile.mkstemp(prefix="resume-check-test-services-", suffix=".txt")
        os.close(handle)
        os.environ[STARTED_VAR] = path


def finish(config: pytest.Config) -> None:
    """On the xdist controller, after every worker ended: stop what the workers started."""
    if hasattr(config, "workerinput"):  # a worker: the controller stops them
        return
    path = os.environ.pop(STARTED_VAR, None)
    if path is None or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as listed:
        names = sorted({line.strip() for line in listed if line.strip()})
    os.unlink(path)
    if names:
        rcservices.down(names)


@pytest.fixture(scope="session")
def services() -> Iterator[dict[str, str]]:
    """{RESUME_CHECK_PG_URL: ..., RESUME_CHECK_REDIS_URL: ..., RESUME_CHECK_MYSQL_URL: ...,
    RESUME_CHECK_DYNAMODB_URL: ...}, set in os.environ too."""
    if all(os.environ.get(var) for var in URL_VARS):
        yield {var: os.environ[var] for var in URL_VARS}
        return
    try:
        result = rcservices.up(install=True, names=list(rcservices.NAMES))
    except rcservices.ServiceError as exc:
        pytest.fail(f"could not start the test servers: {exc}", pytrace=False)
    controller = os.environ.get(STARTED_VAR) if os.environ.get("PYTEST_XDIST_WORKER") else None
    if controller and result.started:
        with open(controller, "a", encoding="utf-8") as listed:
            listed.write("".join(f"{name}\n" for name in result.started))
    try:
        with pytest.MonkeyPatch.context() as patch:
            for var, url in result.env.items():
                patch.setenv(var, url)
            yield result.env
    finally:
        if result.started and not controller:
            rcservices.down(result.started)
