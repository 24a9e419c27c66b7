"""Checkpointer backends for the LangGraph matrix: one zero-argument factory per backend.

The factory contract: a factory takes no arguments and returns either a `BaseCheckpointSaver`,
a context manager yielding one, or (for savers bound to an event loop) an async context
manager yielding one; `open_saver` / `aopen_saver` accept all three. Durable state lives under
`$RESUME_CHECK_STORE`, a folder that is unique per matrix cell and shared by all processes of
that cell, so a process started after a SIGKILL finds what its predecessor persisted. Server
backends read `$RESUME_CHECK_PG_URL` / `$RESUME_CHECK_REDIS_URL` (see `rctools.services`) and
derive their namespace (a PostgreSQL schema, a redis key prefix) from a token kept in the store
folder: recreating the folder gives a fresh namespace even when a path is reused.

API of each backend (`api_of` finds it from the saver itself):

    memory          InMemorySaver            sync+async  one process only
    sqlite          SqliteSaver              sync
    sqlite-async    AsyncSqliteSaver         async       async context manager
    postgres        PostgresSaver            sync        .setup() under an advisory lock
    postgres-async  AsyncPostgresSaver       async       async context manager
    redis           plainredis RedisSaver    sync
    redis-async     plainredis AsyncRedisSaver  async    async context manager
    lmdb            LMDBSaver                sync        list(filter=...) ignored, no delete_thread
    lmdb-async      AsyncLMDBSaver           async       async context manager
    objectstorage   ObjectStorageSaver       sync+async  file:// folder; thread ids must be
                                                         path-safe ([A-Za-z0-9.:_-])

Third-party savers on local servers (docs/backends.md says what each was checked against):

    mysql           mysql PyMySQLSaver       sync        MariaDB; a database per cell, .setup()
                                                         under GET_LOCK
    mysql-async     mysql AIOMySQLSaver      async       async context manager
    valkey          aws ValkeySaver          sync        redis-server; a logical database per
                                                         cell (the saver has no key prefix)
    valkey-async    aws AsyncValkeySaver     async       async context manager
    dynamodb        aws DynamoDBSaver        sync+async  moto server; a table per cell, made as
                                                         the README's template does (PK/SK, ttl)
    dynamodb-checkpoint  langgraph-dynamodb-checkpoint's DynamoDBSaver  sync+async (executor)
                                                         moto; it creates its own table

Not in BACKENDS because they cannot save a checkpoint on langgraph-checkpoint 4.x (they call
JsonPlusSerializer.dumps, which 4.x removed; docs/backends.md): `MODULE:FACTORY` still reaches

    rctools.langgraph.backends:django        DjangoSaver        Django ORM on SQLite in the store
    rctools.langgraph.backends:django_async  AsyncDjangoSaver
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import logging
import os
import secrets
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

STORE_VAR = "RESUME_CHECK_STORE"
PG_URL_VAR = "RESUME_CHECK_PG_URL"
REDIS_URL_VAR = "RESUME_CHECK_REDIS_URL"
MYSQL_URL_VAR = "RESUME_CHECK_MYSQL_URL"
DYNAMODB_URL_VAR = "RESUME_CHECK_DYNAMODB_URL"

Factory = Callable[[], Any]

BACKENDS: dict[str, str] = {
    "memory": "rctools.langgraph.backends:memory",
    "sqlite": "rctools.langgraph.backends:sqlite",
    "sqlite-async": "rctools.langgraph.backends:sqlite_async",
    "postgres": "rctools.langgraph.backends:postgres",
    "postgres-async": "rctools.langgraph.backends:postgres_async",
    "redis": "rctools.langgraph.backends:redis",
    "redis-async": "rctools.langgraph.backends:redis_async",
    "lmdb": "rctools.langgraph.backends:lmdb",
    "lmdb-async": "rctools.langgraph.backends:lmdb_async",
    "objectstorage": "rctools.langgraph.backends:objectstorage",
    "mysql": "rctools.langgraph.backends:mysql",
    "mysql-async": "rctools.langgraph.backends:mysql_async",
    "valkey": "rctools.langgraph.backends:valkey",
    "valkey-async": "rctools.langgraph.backends:valkey_async",
    "dynamodb": "rctools.langgraph.backends:dynamodb",
    "dynamodb-checkpoint": "rctools.langgraph.backends:dynamodb_checkpoint",
}

# Backends whose state outlives the process (all but memory).
DURABLE = frozenset(BACKENDS) - {"memory"}


class BackendError(Exception):
    """A bad backend spec or a missing environment variable; the message says which."""


# --------------------------------------------------------------------------- environment


def store_dir() -> Path:
    """The cell's store folder, created on first use."""
    value = os.environ.get(STORE_VAR)
    if not value:
        raise BackendError(f"{STORE_VAR} is not set: point it at the matrix cell's store folder")
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cell_token() -> str:
    """A random token stored in the cell's folder, the same for every process of the cell.

    Why not a hash of the path: a runner that reuses an output folder would then find the
    previous run's rows in a server. `os.link` publishes the token atomically, so two processes
    starting together agree on one."""
    folder = store_dir()
    target = folder / "backend-token"
    if not target.exists():
        scratch = folder / f".backend-token.{os.getpid()}.{secrets.token_hex(4)}"
        scratch.write_text(secrets.token_hex(8) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(scratch, target)
        scratch.unlink()
    return target.read_text().strip()


def _url(var: str) -> str:
    value = os.environ.get(var)
    if not value:
        raise BackendError(f"{var} is not set: start the servers with `make services-up`")
    return value


# --------------------------------------------------------------------------- factories


def memory() -> BaseCheckpointSaver:
    """Process memory only: a new process starts empty, so no crash scenarios with it."""
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


def sqlite() -> contextlib.AbstractContextManager[BaseCheckpointSaver]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver.from_conn_string(str(store_dir() / "checkpoints.sqlite"))


# How much slower the reference's writes are in its last retries (see `sqlite_slowed`).
SLOWED_WRITES_SECONDS = 0.05


def sqlite_slowed() -> contextlib.AbstractContextManager[BaseCheckpointSaver]:
    """LangGraph's SqliteSaver whose `put_writes` first waits 50 ms: the reference as a slower
    store. Some LangGraph races (a sibling's write still in flight when a node error ends the
    invocation) are won by a fast local SQLite and lost by a slower saver; retrying the
    reference on a slowed store lets it lose them too, so they are not blamed on the saver."""
    import time

    from langgraph.checkpoint.sqlite import SqliteSaver

    class SlowedSqliteSaver(SqliteSaver):
        def put_writes(self, *args: Any, **kwargs: Any) -> None:
            time.sleep(SLOWED_WRITES_SECONDS)
            super().put_writes(*args, **kwargs)

    return SlowedSqliteSaver.from_conn_string(str(store_dir() / "checkpoints.sqlite"))


def sqlite_async() -> contextlib.AbstractAsyncContextManager[BaseCheckpointSaver]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    return AsyncSqliteSaver.from_conn_string(str(store_dir() / "checkpoints.sqlite"))


def sqlite_async_slowed() -> contextlib.AbstractAsyncContextManager[BaseCheckpointSaver]:
    """`sqlite_slowed` for the async API: AsyncSqliteSaver whose `aput_writes` first waits."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class SlowedAsyncSqliteSaver(AsyncSqliteSaver):
        async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
            await asyncio.sleep(SLOWED_WRITES_SECONDS)
            await super().aput_writes(*args, **kwargs)

    return SlowedAsyncSqliteSaver.from_conn_string(str(store_dir() / "checkpoints.sqlite"))


def _pg_schema_url() -> tuple[str, str, int]:
    """(url with the cell's schema as search_path, schema, advisory lock key)."""
    schema = f"rc_{cell_token()}"
    base = _url(PG_URL_VAR)
    joiner = "&" if "?" in base else "?"
    lock = int.from_bytes(hashlib.sha256(schema.encode()).digest()[:8], "big", signed=True)
    return f"{base}{joiner}options=-csearch_path%3D{schema}", schema, lock


@contextlib.contextmanager
def postgres() -> Iterator[BaseCheckpointSaver]:
    """PostgresSaver in a schema of its own; `.setup()` runs under an advisory lock because
    two processes of one cell may start together and its migrations are not concurrency-safe."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    url, schema, lock = _pg_schema_url()
    with psycopg.connect(_url(PG_URL_VAR), autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (lock,))
        try:
            admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            with PostgresSaver.from_conn_string(url) as saver:
                saver.setup()
                admin.execute("SELECT pg_advisory_unlock(%s)", (lock,))
                yield saver
        finally:
            if not admin.closed:
                admin.execute("SELECT pg_advisory_unlock_all()")


@contextlib.asynccontextmanager
async def postgres_async() -> AsyncIterator[BaseCheckpointSaver]:
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    url, schema, lock = _pg_schema_url()
    async with await psycopg.AsyncConnection.connect(_url(PG_URL_VAR), autocommit=True) as admin:
        await admin.execute("SELECT pg_advisory_lock(%s)", (lock,))
        try:
            await admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            async with AsyncPostgresSaver.from_conn_string(url) as saver:
                await saver.setup()
                await admin.execute("SELECT pg_advisory_unlock(%s)", (lock,))
                yield saver
        finally:
            if not admin.closed:
                await admin.execute("SELECT pg_advisory_unlock_all()")


@contextlib.contextmanager
def redis() -> Iterator[BaseCheckpointSaver]:
    from langgraph_checkpoint_plainredis import RedisSaver

    saver = RedisSaver(url=_url(REDIS_URL_VAR), prefix=f"rc:{cell_token()}")
    try:
        yield saver
    finally:
        saver.close()


@contextlib.asynccontextmanager
async def redis_async() -> AsyncIterator[BaseCheckpointSaver]:
    from langgraph_checkpoint_plainredis import AsyncRedisSaver

    saver = AsyncRedisSaver(url=_url(REDIS_URL_VAR), prefix=f"rc:{cell_token()}")
    try:
        yield saver
    finally:
        await saver.aclose()


def _lmdb_env() -> Any:
    import lmdb as lmdb_module

    # Two named databases (checkpoints, writes); the map size is virtual, so be generous.
    return lmdb_module.open(str(store_dir() / "lmdb"), max_dbs=4, map_size=1 << 30)


@contextlib.contextmanager
def lmdb() -> Iterator[BaseCheckpointSaver]:
    from langgraph_checkpoint_lmdb import LMDBSaver

    env = _lmdb_env()
    try:
        yield LMDBSaver(env)
    finally:
        env.close()


@contextlib.asynccontextmanager
async def lmdb_async() -> AsyncIterator[BaseCheckpointSaver]:
    """AsyncLMDBSaver binds the event loop current at construction, so it is built inside
    the running loop; it runs the sync saver in a thread pool."""
    from langgraph_checkpoint_lmdb import AsyncLMDBSaver

    env = _lmdb_env()
    saver = AsyncLMDBSaver(env)
    try:
        yield saver
    finally:
        saver.executor.shutdown(wait=True)
        env.close()


def objectstorage() -> BaseCheckpointSaver:
    from langgraph_checkpoint_objectstorage import ObjectStorageSaver

    # The object store caches by URL across folders of the same path: a token makes the URL
    # new when a runner reuses an output folder.
    folder = store_dir() / f"objects-{cell_token()}"
    folder.mkdir(exist_ok=True)
    return ObjectStorageSaver.from_conn_string(folder.resolve().as_uri())


# --------------------------------------------------------------------------- MariaDB


def _mysql_cell() -> tuple[str, str]:
    """(the cell's database, a URL naming it): every cell gets a database of its own."""
    from urllib.parse import urlsplit, urlunsplit

    database = f"rc_{cell_token()}"
    parts = urlsplit(_url(MYSQL_URL_VAR))
    return database, urlunsplit(parts._replace(path=f"/{database}"))


@contextlib.contextmanager
def _mysql_admin(database: str) -> Iterator[Any]:
    """A pymysql connection that has created the cell's database and holds a named lock on it
    until the saver's `.setup()` is done: two processes of one cell may start together, and
    the saver's migrations (CREATE TABLE, then INSERT INTO checkpoint_migrations) race."""
    from urllib.parse import unquote, urlsplit

    import pymysql

    parts = urlsplit(_url(MYSQL_URL_VAR))
    admin = pymysql.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        autocommit=True,
    )
    try:
        with admin.cursor() as cursor:
            cursor.execute("SELECT GET_LOCK(%s, 60)", (database,))
            if cursor.fetchone()[0] != 1:
                raise BackendError(f"mysql: could not take the setup lock of {database}")
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        yield admin
    finally:
        admin.close()  # also releases the lock if setup failed


def _mysql_release(admin: Any, database: str) -> None:
    with admin.cursor() as cursor:
        cursor.execute("SELECT RELEASE_LOCK(%s)", (database,))


@contextlib.contextmanager
def mysql() -> Iterator[BaseCheckpointSaver]:
    """langgraph-checkpoint-mysql's PyMySQLSaver in a database of the cell's own."""
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    database, url = _mysql_cell()
    with _mysql_admin(database) as admin, PyMySQLSaver.from_conn_string(url) as saver:
        saver.setup()
        _mysql_release(admin, database)
        yield saver


@contextlib.asynccontextmanager
async def mysql_async() -> AsyncIterator[BaseCheckpointSaver]:
    from langgraph.checkpoint.mysql.aio import AIOMySQLSaver

    database, url = _mysql_cell()
    with _mysql_admin(database) as admin:
        async with AIOMySQLSaver.from_conn_string(url) as saver:
            await saver.setup()
            _mysql_release(admin, database)
            yield saver


# --------------------------------------------------------------------------- Valkey


def _valkey_url() -> str:
    """The redis URL of the cell's own logical database.

    The Valkey savers name their keys `checkpoint:{thread}:...` with no prefix to set, so a
    cell cannot get a key prefix: it gets one of the server's numbered databases instead
    (rctools.services starts redis-server with many). The number is taken from a counter in
    database 0, the database emptied, and only then published in the store folder (os.link, as
    for the token), so every process of the cell agrees and no cell inherits another's keys.
    Numbers wrap around: a cell reuses the database of the cell started `databases - 1` before."""
    from urllib.parse import urlsplit, urlunsplit

    import valkey as valkey_module

    base = _url(REDIS_URL_VAR)
    target = store_dir() / f"valkey-db-{cell_token()}"
    if not target.exists():
        with valkey_module.Valkey.from_url(base) as client:
            count = int(client.config_get("databases").get("databases", 16))
            if count < 2:
                raise BackendError("valkey: the redis server has a single database")
            number = 1 + (int(client.incr("resume-check:valkey-next-db")) - 1) % (count - 1)
        parts = urlsplit(base)
        url = urlunsplit(parts._replace(path=f"/{number}"))
        with valkey_module.Valkey.from_url(url) as client:
            client.flushdb()
        scratch = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
        scratch.write_text(url + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(scratch, target)
        scratch.unlink()
    return target.read_text().strip()


def valkey() -> contextlib.AbstractContextManager[BaseCheckpointSaver]:
    """langgraph-checkpoint-aws's ValkeySaver on redis-server (it speaks the same protocol)."""
    from langgraph_checkpoint_aws.checkpoint.valkey import ValkeySaver

    return ValkeySaver.from_conn_string(_valkey_url())


def valkey_async() -> contextlib.AbstractAsyncContextManager[BaseCheckpointSaver]:
    from langgraph_checkpoint_aws.checkpoint.valkey import AsyncValkeySaver

    return AsyncValkeySaver.from_conn_string(_valkey_url())


# --------------------------------------------------------------------------- DynamoDB

# moto accepts any key; fixed fake ones keep boto3 away from the machine's AWS configuration.
_AWS_FAKE = {
    "aws_access_key_id": "resume-check",
    "aws_secret_access_key": "resume-check",
    "region_name": "us-east-1",
}


def _dynamodb_table() -> tuple[Any, str, str]:
    """(a boto3 session, the cell's table, the endpoint), the table created as the saver's
    README has a user create it (its CloudFormation template: PK/SK strings, on-demand
    capacity, TTL on `ttl`) unless it exists already."""
    import boto3

    endpoint = _url(DYNAMODB_URL_VAR)
    table = f"rc_{cell_token()}"
    session = boto3.Session(**_AWS_FAKE)
    client = session.client("dynamodb", endpoint_url=endpoint)
    try:
        client.create_table(
            TableName=table,
            AttributeDefinitions=[
                {"AttributeName": "PK", "AttributeType": "S"},
                {"AttributeName": "SK", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        client.get_waiter("table_exists").wait(
            TableName=table, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100}
        )
        client.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
        )
    except client.exceptions.ResourceInUseException:
        client.get_waiter("table_exists").wait(
            TableName=table, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100}
        )
    return session, table, endpoint


def dynamodb() -> BaseCheckpointSaver:
    """langgraph-checkpoint-aws's DynamoDBSaver against moto's server, a table per cell."""
    from langgraph_checkpoint_aws import DynamoDBSaver

    session, table, endpoint = _dynamodb_table()
    return DynamoDBSaver(table_name=table, session=session, endpoint_url=endpoint)


def dynamodb_checkpoint() -> BaseCheckpointSaver:
    """langgraph-dynamodb-checkpoint's DynamoDBSaver against moto, a table per cell.

    It builds its client as `boto3.resource('dynamodb')` with no endpoint or session argument,
    so the endpoint and the fake credentials go where boto3 reads them by default: the default
    session and $AWS_ENDPOINT_URL_DYNAMODB (this process only). It creates its table itself."""
    import boto3

    endpoint = _url(DYNAMODB_URL_VAR)
    os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint
    boto3.setup_default_session(**_AWS_FAKE)
    from langgraph_dynamodb_checkpoint import DynamoDBSaver as CommunityDynamoDBSaver
    from langgraph_dynamodb_checkpoint import configure_logging

    # Its logger writes INFO lines to stdout on import, which is a worker's channel.
    configure_logging(level=logging.WARNING, stream=sys.stderr)
    return CommunityDynamoDBSaver(table_name=f"rc_{cell_token()}")


# --------------------------------------------------------------------------- Django


def _django_database() -> None:
    """Points Django's default database at the cell's SQLite file and migrates it, as the
    saver's README has a user do (INSTALLED_APPS + `manage.py migrate`).

    Django's settings are global to the process: the first call configures them; a later call
    for another cell (the conformance suite makes a saver per capability) re-points the
    `default` connection at the new file. Migrations run under a file lock, since two processes
    of one cell may start together and `migrate` on one SQLite file is not safe in parallel."""
    import django
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections
    from filelock import FileLock

    path = str(store_dir() / "django.sqlite3")
    if not settings.configured:
        settings.configure(
            DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": path}},
            INSTALLED_APPS=["langgraph.checkpoint.django.checkpoint"],
            USE_TZ=True,
        )
        django.setup()
    elif connections["default"].settings_dict["NAME"] != path:
        connections["default"].close()
        connections["default"].settings_dict["NAME"] = path
    with FileLock(store_dir() / "django.lock"):
        call_command("migrate", verbosity=0, interactive=False)
    connections["default"].close()


def django() -> BaseCheckpointSaver:
    """langgraph-checkpoint-django's DjangoSaver (Django ORM on a SQLite file in the store).
    Django's ORM refuses to run in a thread with a running event loop, so a runner drives it
    through the sync API off the loop."""
    import asyncio
    import concurrent.futures

    def make() -> BaseCheckpointSaver:
        _django_database()  # before the import: the saver's models need configured settings
        from langgraph.checkpoint.django.saver import DjangoSaver

        return DjangoSaver()  # its constructor queries SQLite's version

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return make()
    # aopen_saver calls factories on the loop, where Django's ORM refuses to run.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(make).result()


async def _django_async_saver() -> BaseCheckpointSaver:
    from asgiref.sync import sync_to_async

    await sync_to_async(_django_database, thread_sensitive=True)()
    from langgraph.checkpoint.django.aio import AsyncDjangoSaver

    return AsyncDjangoSaver()


@contextlib.asynccontextmanager
async def django_async() -> AsyncIterator[BaseCheckpointSaver]:
    """AsyncDjangoSaver binds the running loop at construction: built inside it."""
    yield await _django_async_saver()


# --------------------------------------------------------------------------- lookup


def resolve(spec: str) -> Factory:
    """A backend name from BACKENDS or `module:factory`; a BackendError names what is wrong."""
    target = BACKENDS.get(spec, spec)
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise BackendError(
            f"unknown backend {spec!r}: use one of {', '.join(BACKENDS)} or MODULE:FACTORY"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendError(f"backend {spec!r}: cannot import {module_name!r} ({exc})") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise BackendError(f"backend {spec!r}: {module_name!r} has no callable {attr!r}")
    return factory


@contextlib.contextmanager
def open_saver(factory: Factory) -> Iterator[BaseCheckpointSaver]:
    """The saver of a sync-usable factory, closed afterwards."""
    made = factory()
    if isinstance(made, BaseCheckpointSaver):
        yield made
    elif hasattr(made, "__enter__"):
        with made as saver:
            yield _checked(saver)
    elif hasattr(made, "__aenter__"):
        raise BackendError("this backend opens asynchronously: use aopen_saver in an event loop")
    else:
        raise BackendError(f"factory returned {type(made).__name__}, not a checkpoint saver")


@contextlib.asynccontextmanager
async def aopen_saver(factory: Factory) -> AsyncIterator[BaseCheckpointSaver]:
    """The saver of any factory, opened inside the running loop (async savers bind to it)."""
    made = factory()
    if isinstance(made, BaseCheckpointSaver):
        yield made
    elif hasattr(made, "__aenter__"):
        async with made as saver:
            yield _checked(saver)
    elif hasattr(made, "__enter__"):
        with made as saver:
            yield _checked(saver)
    else:
        raise BackendError(f"factory returned {type(made).__name__}, not a checkpoint saver")


def _checked(saver: object) -> BaseCheckpointSaver:
    if not isinstance(saver, BaseCheckpointSaver):
        raise BackendError(f"factory yielded {type(saver).__name__}, not a checkpoint saver")
    return saver


# --------------------------------------------------------------------------- API detection

_SYNC_CORE = ("get_tuple", "put", "put_writes")
_ASYNC_CORE = ("aget_tuple", "aput", "aput_writes")


def _implements(saver: BaseCheckpointSaver, name: str) -> bool:
    """Whether `name` is a real implementation: overridden from BaseCheckpointSaver and not a
    stub. Savers use two kinds of stub: a method that only raises (NotImplementedError or a
    `_*_unsupported` helper, as plainredis does), and a sync method that forwards to the
    saver's own event loop with `run_coroutine_threadsafe` (AsyncSqliteSaver,
    AsyncPostgresSaver), which deadlocks-or-raises on that loop's thread and so is no sync API
    for a runner that drives the graph on that loop."""
    method = getattr(type(saver), name, None)
    if method is None or method is getattr(BaseCheckpointSaver, name):
        return False
    code = inspect.unwrap(method).__code__
    names = set(code.co_names)
    if "NotImplementedError" in names or any(n.endswith("_unsupported") for n in names):
        return False
    return "run_coroutine_threadsafe" not in names


def deletes_of(saver: BaseCheckpointSaver) -> set[str]:
    """{"sync"}, {"async"}, both or none: through which API the saver deletes a thread
    (`delete_thread`, `adelete_thread`). LangGraph's base class raises NotImplementedError for
    both, and a saver may leave them so (LMDBSaver does): a thread it cannot delete is a
    method it lacks, not a bug of what it stores."""
    names = {"sync": "delete_thread", "async": "adelete_thread"}
    return {api for api, name in names.items() if _implements(saver, name)}


def api_of(saver: BaseCheckpointSaver) -> set[str]:
    """{"sync"}, {"async"} or both: which API the saver really implements."""
    api = set()
    if all(_implements(saver, name) for name in _SYNC_CORE):
        api.add("sync")
    if all(_implements(saver, name) for name in _ASYNC_CORE):
        api.add("async")
    return api
