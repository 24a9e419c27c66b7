"""Session fixture: real PostgreSQL, redis-server, MariaDB and moto (DynamoDB) on loopback.

Use it with `from services import services # noqa: F401` in a test module (or once in
conftest.py). The fixture starts the servers with `rctools.services` (installing the Debian
packages on a fresh machine: `make test` promises to run everything there), exports their URLs
into the environment so factories and subprocesses see them, and stops at the end only what it
started itself: a developer's `make services-up` servers survive a test run. URLs already in the
environment win, so the suite can also run against servers started elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from rctools import services as rcservices

URL_VARS = tuple(rcservices.URL_VARS.values())


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
    try:
        with pytest.MonkeyPatch.context() as patch:
            for var, url in result.env.items():
                patch.setenv(var, url)
            yield result.env
    finally:
        if result.started:
            rcservices.down(result.started)
