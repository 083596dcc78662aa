"""The access log (issue 17): one line per HTTP request on the ``mcp_ref.access``
logger (remote, method and target, status, body bytes, milliseconds, session id); off by
default in the API, on in the CLI unless ``--no-access-log``.  Through the real trio
server on a loopback socket, and the ASGI application."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
import trio

from mcp_ref._http_access import ACCESS_LOGGER, Exchange, access_line
from mcp_ref.asgi import asgi_app
from mcp_ref.cli import _parser
from mcp_ref.cli.serve import _http_extras
from mcp_ref.trio.http.server import open_http_server
from tests._http_raw import RawConnection, init_body
from tests.test_asgi import ACCEPT, JSON, initialize, make_server, request
from tests.test_http_cors import tiny_server

LINE = re.compile(
    r'^(?P<peer>\S+) "(?P<method>[A-Z]+|-) (?P<target>\S+)" (?P<status>\d+|-) '
    r"(?P<bytes>\d+)B (?P<ms>[\d.]+)ms session=(?P<session>\S+)(?P<incomplete> incomplete)?$"
)


class Recorder(logging.Handler):
    """The access log's records, and a way to wait for the next one."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self.news = trio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self.news.set()

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        while len(self.lines) < count:
            self.news = trio.Event()
            await self.news.wait()
        return [m.groupdict() for m in map(LINE.match, self.lines) if m]


@pytest.fixture
def recorder() -> Any:
    logger = logging.getLogger(ACCESS_LOGGER)
    rec = Recorder()
    logger.addHandler(rec)
    old = logger.level
    logger.setLevel(logging.INFO)
    yield rec
    logger.removeHandler(rec)
    logger.setLevel(old)


async def test_off_by_default(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    with trio.fail_after(10):
        async with open_http_server(tiny_server()) as info:
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=init_body())
            await ans.body()
            await conn.aclose()
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]


async def test_one_line_per_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    with trio.fail_after(10):
        async with open_http_server(tiny_server(), access_log=True) as info:
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=init_body())
            body = await ans.body()
            sid = ans.session_id
            # The second request on the same connection: an unknown session, 404.
            ans = await conn.request("GET", session_id="ab" * 16, version="2025-11-25")
            missing = await ans.body()
            await conn.aclose()
            # A refusal before any endpoint: 403 for the Origin.
            conn = await RawConnection.open(info.port)
            ans = await conn.request("GET", headers={"origin": "https://evil.example"})
            await ans.body()
            await conn.aclose()
    records = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert all(r.levelno == logging.INFO for r in records)
    lines = [LINE.match(r.getMessage()) for r in records]
    assert all(lines), [r.getMessage() for r in records]
    got = [m.groupdict() for m in lines if m]
    assert len(got) == 3
    first, second, third = got
    assert first["peer"] == "127.0.0.1"
    assert (first["method"], first["target"], first["status"]) == ("POST", "/mcp", "200")
    assert int(first["bytes"]) == len(body) > 0
    assert first["session"] == sid
    assert float(first["ms"]) >= 0
    assert (second["method"], second["status"], second["session"]) == ("GET", "404", "ab" * 16)
    assert int(second["bytes"]) == len(missing)
    assert (third["status"], third["session"]) == ("403", "-")
    assert not any(m["incomplete"] for m in got)


async def test_a_request_broken_before_its_head_is_logged(recorder: Recorder) -> None:
    with trio.fail_after(10):
        async with open_http_server(tiny_server(), access_log=True) as info:
            conn = await RawConnection.open(info.port)
            await conn.send_bytes(b"NOT HTTP AT ALL\r\n\r\n")
            got = await recorder.wait_for(1)
            await conn.aclose()
    assert (got[0]["method"], got[0]["target"], got[0]["status"]) == ("-", "-", "400")


async def test_an_answer_that_never_ends_is_logged_incomplete(recorder: Recorder) -> None:
    with trio.fail_after(10):
        async with open_http_server(tiny_server(), access_log=True) as info:
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=init_body())
            await ans.body()
            sid = ans.session_id
            assert sid is not None
            await recorder.wait_for(1)
            ans = await conn.request("GET", session_id=sid, version="2025-11-25")
            assert ans.status == 200
            assert await ans.event() is not None  # the priming event: the stream is open
            await conn.aclose()  # the client leaves; the server notices
            got = await recorder.wait_for(2)
    assert got[1]["method"] == "GET" and got[1]["status"] == "200"
    assert got[1]["incomplete"] and got[1]["session"] == sid


async def test_asgi_access_log(recorder: Recorder) -> None:
    with trio.fail_after(10):
        app = asgi_app(make_server(), access_log=True)
        ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON], body=initialize())
        got = await recorder.wait_for(1)
    assert got[0]["peer"] == "127.0.0.1"
    assert (got[0]["method"], got[0]["target"], got[0]["status"]) == ("POST", "/mcp", "200")
    assert int(got[0]["bytes"]) == len(ex.body)
    assert got[0]["session"] == ex.headers[b"mcp-session-id"].decode()


def test_cli_logs_by_default_and_not_with_no_access_log() -> None:
    logger = logging.getLogger(ACCESS_LOGGER)
    before, level = list(logger.handlers), logger.level
    args = _parser().parse_args(["serve", "--http", "127.0.0.1:0", "--cors", "https://a.example"])
    try:
        logger.handlers.clear()
        assert _http_extras(args) == {"cors_origins": ["https://a.example"], "access_log": True}
        assert len(logger.handlers) == 1  # a line per request on stderr
        _http_extras(args)
        assert len(logger.handlers) == 1  # once
    finally:
        logger.handlers[:] = before
        logger.setLevel(level)
    args = _parser().parse_args(["serve", "--http", "127.0.0.1:0", "--no-access-log"])
    assert _http_extras(args)["access_log"] is False


def test_the_line() -> None:
    ex = Exchange(b"POST", b"/mcp?x=1", [(b"mcp-session-id", b"abc")], started=1.0)
    ex.status, ex.bytes = 202, 0
    assert access_line("10.0.0.1:5", ex, 1.0125) == (
        '10.0.0.1:5 "POST /mcp?x=1" 202 0B 12.5ms session=abc'
    )
    assert access_line(None, Exchange(b"GET", b"/", [], 0.0), 0.0, complete=False) == (
        '- "GET /" - 0B 0.0ms session=- incomplete'
    )


async def test_mcp_ref_serve_http_logs_each_request_on_stderr() -> None:
    """``mcp-ref serve --http ... --cors ORIGIN``: CORS headers on the answer, and its
    access log line on stderr."""
    import subprocess
    import sys
    from functools import partial

    origin = "https://a.example"
    argv = [sys.executable, "-m", "mcp_ref", "serve", "--http", "127.0.0.1:0", "--cors", origin]
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            proc = await nursery.start(
                partial(trio.run_process, argv, stderr=subprocess.PIPE, check=False)
            )
            buf = b""
            while (match := re.search(rb"http://127\.0\.0\.1:(\d+)/mcp", buf)) is None:
                chunk = await proc.stderr.receive_some()
                assert chunk, f"the server exited: {buf!r}"
                buf += chunk
            conn = await RawConnection.open(int(match.group(1)))
            ans = await conn.request("POST", body=init_body(), headers={"origin": origin})
            await ans.body()
            await conn.aclose()
            assert ans.status == 200
            assert ans.headers["access-control-allow-origin"] == origin
            while b'"POST /mcp" 200' not in buf:
                chunk = await proc.stderr.receive_some()
                assert chunk, f"the server exited: {buf!r}"
                buf += chunk
            line = next(x for x in buf.decode().splitlines() if '"POST /mcp" 200' in x)
            assert f"session={ans.session_id}" in line
            proc.terminate()
