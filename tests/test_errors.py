"""The one error registry: every code a class of ``store.errors``, drawn in its docstring and
documented in ``docs/errors.md``; one JSON body on every surface; ``sqlite3`` errors translated
and chained at the database boundary."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import requests.exceptions

import store.errors as errors
from capabilities.http_api._errors import error_response
from capabilities.mcp._dispatch import ToolOutcome
from store.db import Database
from store.errors import (
    Conflict,
    DockerUnavailable,
    InternalError,
    InvalidArgument,
    MemoryNotFound,
    MemoryRevisionConflict,
    NotFound,
    RoundtableError,
    StoreBusy,
    error_body,
    error_classes,
    hierarchy,
)
from supervisor.cli._output import emit_error
from supervisor.docker import DockerClient
from supervisor.image._common import ImageBuildError, docker_step
from tests.fakes.docker_engine import FakeDockerBackend, api_error, connection_refused, connection_reset

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PACKAGES = ("store", "capabilities", "supervisor")
_DOC_ROW = re.compile(r"^\| `([a-z_]+)` \| (\d{3}) \|", re.MULTILINE)


def _product_modules() -> Iterator[str]:
    for package in PACKAGES:
        root = importlib.import_module(package)
        yield package
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if not info.name.endswith("__main__"):
                yield info.name


def _all_subclasses(cls: type[RoundtableError]) -> Iterator[type[RoundtableError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def _documented() -> dict[str, int]:
    text = (DOCS / "errors.md").read_text(encoding="utf-8")
    rows = _DOC_ROW.findall(text)
    codes = [code for code, _ in rows]
    assert len(codes) == len(set(codes)), f"a code is documented twice: {sorted(codes)}"
    return {code: int(status) for code, status in rows}


def _text(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _codes_in(node: ast.AST) -> Iterator[tuple[str, str | None]]:
    """The literal codes ``node`` passes or defaults to, each with the error class it calls (if any)."""
    if isinstance(node, ast.Call):
        called = node.func.id if isinstance(node.func, ast.Name) and node.func.id in vars(errors) else None
        for keyword in node.keywords:
            if keyword.arg == "code" and (code := _text(keyword.value)):
                yield code, called
            if keyword.arg == "field_codes" and isinstance(keyword.value, ast.Dict):
                yield from ((code, None) for value in keyword.value.values if (code := _text(value)))
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True):
            if arg.arg == "code" and (code := _text(default)):
                yield code, None


def _literal_codes() -> dict[str, str | None]:
    """Codes still passed as string literals (``code="..."``, ``code: str = "..."``, ``field_codes``),
    with the error class called when the call names one. Transitional: once every code is a class
    this is empty and the ``code=`` argument of :class:`RoundtableError` can go."""
    found: dict[str, str | None] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                for code, called in _codes_in(node):
                    found[code] = found.get(code) or called
    return found


# -- (a) the registry and its drawing ----------------------------------------------------------------


def test_every_error_class_has_a_unique_code() -> None:
    classes = error_classes()
    assert classes[0] is RoundtableError and len(classes) > 15
    codes = [cls.code for cls in classes[1:]]  # the root shares ``internal`` with InternalError
    assert len(codes) == len(set(codes)), sorted(codes)
    for cls in classes[1:]:
        assert "code" in vars(cls), f"{cls.__name__} inherits its code instead of declaring one"
        assert re.fullmatch(r"[a-z][a-z_]*[a-z]", cls.code), cls.code
        assert 400 <= cls.http_status < 600


def test_no_code_is_invented_outside_the_registry() -> None:
    for name in _product_modules():
        importlib.import_module(name)
    outside = [cls for cls in _all_subclasses(RoundtableError) if cls.__module__ != errors.__name__]
    product = [cls for cls in outside if cls.__module__.split(".")[0] in PACKAGES]
    assert product, "expected refinements such as ImageBuildError"
    for cls in product:
        own = {"code", "http_status"} & set(vars(cls))
        assert not own, f"{cls.__module__}.{cls.__name__} declares {own}; add a class to store.errors"


def test_the_docstring_draws_every_class() -> None:
    drawn = hierarchy()
    doc = errors.__doc__ or ""
    block = "\n".join(line.removeprefix("    ") for line in doc.splitlines() if line.startswith("    "))
    assert block == drawn, f"store/errors.py's docstring should show:\n{drawn}"
    for cls in error_classes():
        assert re.search(rf"\b{cls.__name__}\s+{cls.code}\s+{cls.http_status}$", drawn, re.MULTILINE)


def test_code_means_the_code_answered() -> None:
    exc = NotFound("gone")
    assert exc.code == type(exc).code == "not_found" == exc.code
    assert error_body(MemoryNotFound("gone"))["error"]["code"] == "memory_not_found"
    # Every code is a class: there is no per-instance override that could disagree with it.
    with pytest.raises(TypeError):
        NotFound("gone", code="memory_not_found")  # type: ignore[call-arg]
    assert _literal_codes() == {}, "a code passed as a string literal: make it a class in store.errors"


# -- (b) every code documented --------------------------------------------------------------------------


def test_every_code_is_documented_with_its_status() -> None:
    documented = _documented()
    registry = {cls.code: cls.http_status for cls in error_classes()}
    literal = _literal_codes()
    assert set(documented) == set(registry) | set(literal), (
        f"undocumented: {sorted((set(registry) | set(literal)) - set(documented))}; "
        f"documented but unused: {sorted(set(documented) - set(registry) - set(literal))}"
    )
    for code, status in registry.items():
        assert documented[code] == status, code
    for code, klass in literal.items():
        if klass is not None and code not in registry:
            assert documented[code] == getattr(errors, klass).http_status, (code, klass)


def test_the_errors_page_is_reachable_from_the_index() -> None:
    assert "(errors.md)" in (DOCS / "index.md").read_text(encoding="utf-8")


# -- (c) one body on every surface ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        InvalidArgument("title is blank"),
        MemoryRevisionConflict("stale", details={"current_revision": 3}),
        StoreBusy("locked"),
        InternalError("boom: ünïcode"),
    ],
    ids=lambda exc: exc.code,
)
def test_the_three_surfaces_answer_the_same_body(
    exc: RoundtableError, capsys: pytest.CaptureFixture[str]
) -> None:
    expected: dict[str, Any] = {"error": {"code": exc.code, "message": exc.message}}
    if exc.details:
        expected["error"]["details"] = exc.details
    assert error_body(exc) == expected

    response = error_response(exc)
    assert response.status_code == exc.http_status
    http = json.loads(bytes(response.body))

    mcp = ToolOutcome(None, exc).body()

    emit_error(exc, as_json=True)
    cli = json.loads(capsys.readouterr().out)

    assert http == mcp == cli == expected


# -- (d) sqlite3 translated at the database boundary ----------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    opened = Database(tmp_path / "t.db", busy_timeout_ms=20, write_attempts=3)
    opened.write(lambda conn: conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY)"))
    try:
        yield opened
    finally:
        opened.close()


def test_a_lock_that_outlives_the_retries_is_store_busy(db: Database) -> None:
    holder = sqlite3.connect(db.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    calls: list[int] = []

    def insert(conn: sqlite3.Connection) -> None:
        calls.append(1)
        conn.execute("INSERT INTO t VALUES ('a')")

    try:
        with pytest.raises(StoreBusy) as caught:
            db.write(insert)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert "locked" in str(caught.value.__cause__)
    assert (caught.value.code, caught.value.http_status) == ("store_busy", 503)
    assert calls == []  # BEGIN IMMEDIATE itself waited, so ``fn`` never ran
    db.write(insert)  # the lock is gone: the same write now succeeds
    assert db.read(lambda conn: conn.execute("SELECT count(*) FROM t").fetchone()[0]) == 1


def test_other_sqlite_errors_are_translated_and_chained(db: Database) -> None:
    db.write(lambda conn: conn.execute("INSERT INTO t VALUES ('a')"))
    with pytest.raises(Conflict) as duplicate:
        db.write(lambda conn: conn.execute("INSERT INTO t VALUES ('a')"))
    assert isinstance(duplicate.value.__cause__, sqlite3.IntegrityError)

    with pytest.raises(InternalError) as unknown:
        db.read(lambda conn: conn.execute("SELECT * FROM missing"))
    assert isinstance(unknown.value.__cause__, sqlite3.OperationalError)
    # The caller may be a role container: the message names no table, and the cause is chained.
    assert "missing" not in unknown.value.message and "no such table" in str(unknown.value.__cause__)

    def direct() -> None:
        db.connection().execute("INSERT INTO missing VALUES (1)")

    with pytest.raises(InternalError) as ran:
        anyio.run(db.run, direct)
    assert isinstance(ran.value.__cause__, sqlite3.OperationalError)


# -- Docker translated at the engine boundary ---------------------------------------------------------


class _ClosingFails(FakeDockerBackend):
    def close(self) -> None:
        raise connection_reset()


def test_closing_a_lost_engine_is_docker_unavailable_chained() -> None:
    client = DockerClient(_ClosingFails)

    async def use_then_close() -> None:
        await client.ping()
        await client.aclose()

    with pytest.raises(DockerUnavailable) as caught:
        anyio.run(use_then_close)
    assert isinstance(caught.value.__cause__, requests.exceptions.ConnectionError)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [(connection_refused(), DockerUnavailable), (api_error(500, "disk full"), ImageBuildError)],
)
def test_an_image_build_step_translates_docker_errors(
    raised: Exception, expected: type[RoundtableError]
) -> None:
    with pytest.raises(expected) as caught, docker_step("docker build of x"):
        raise raised
    assert caught.value.__cause__ is raised
    assert caught.value.code == ("docker_unavailable" if expected is DockerUnavailable else "internal")
