"""A blocking MCP client for scripts: subprocess pipes and a selector, nothing else.

Usage::

    from mcp_ref.blocking import connect_stdio

    with connect_stdio([sys.executable, "-m", "mcp_ref.asyncio.example_server"]) as client:
        print(client.call_tool("echo", {"text": "hi"}).content[0].text)

No threads and no event loop: every call does its own waiting, on the caller's thread,
one request at a time.

How it drives the core, step by step
------------------------------------
1. ``conn = Connection(CLIENT, default_timeout=RequestTimeout(seconds=60))``.
2. ``request()``: ``rid = conn.next_request_id()``; ``data = conn.send(Request(...),
   now=time.monotonic())``; write ``data`` to the server's stdin.  With
   ``on_progress``, the params carry ``rid`` as ``_meta.progressToken``.  The pipe is
   non-blocking and the write waits on a selector that also watches the server's
   stdout, reading what arrives meanwhile, so a server that writes while we write
   cannot deadlock us.
3. Then, until the answer to ``rid`` is in:

   a. wait on the selector for the server's stdout, no later than
      ``conn.next_deadline()``;
   b. read what is there (``os.read``) and ``conn.receive_data(chunk)``;
   c. write what ``conn.handle_timeout(time.monotonic())`` returns (the
      ``notifications/cancelled`` of an expired request);
   d. drain ``conn.next_event()``: the Response or ErrorResponse for ``rid`` ends the
      wait; RequestTimedOut for it raises :class:`NoAnswerError` (an McpError with
      code ``REQUEST_TIMEOUT`` that no server sent: we gave up waiting); a Progress
      for it (the core matched the token) goes to ``on_progress``; a ``ping``
      from the server is answered; any other server request gets -32601.  Requests
      that need client capabilities (sampling, roots, elicitation) never get that
      far: this client declares none, so the core refuses them itself and hands us
      the error response in ``RemoteProtocolError.event_hint`` to write back.
4. If the wait is interrupted (KeyboardInterrupt, or any exception), the request is
   cancelled with ``notifications/cancelled`` before the exception goes on.
5. Closing: close the server's stdin, wait; SIGTERM, wait; SIGKILL.

``subprocess`` and ``selectors`` are imported when a client is made, not when this
module is imported: ``import mcp_ref.blocking`` loads no I/O module, like the rest of
the package's top level.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from . import types as t
from ._connection import NEED_DATA, Connection
from ._convert import ConversionError, structure
from ._errors import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    LocalProtocolError,
    McpError,
    NoAnswerError,
    RemoteProtocolError,
)
from ._inflight import RequestTimeout
from ._methods import (
    LATEST_PROTOCOL_VERSION,
    METHODS,
    check_version,
    with_progress_token,
)
from ._pagination import PageWalker
from ._state import CLIENT, State
from .events import (
    ConnectionClosed,
    ErrorResponse,
    Event,
    Notification,
    Progress,
    Request,
    RequestId,
    RequestTimedOut,
    Response,
)

if TYPE_CHECKING:
    import selectors
    import subprocess

__all__ = ["DEFAULT_CLIENT_INFO", "Client", "NoAnswerError", "SessionClosed", "connect_stdio"]


DEFAULT_CLIENT_INFO: Final = t.Implementation(name="mcp-ref-blocking", version="0.1.0")
"""The ``clientInfo`` sent in ``initialize`` unless another is given."""

_DEFAULT: Final[Any] = object()
_CHUNK: Final = 65536


class SessionClosed(ConnectionError):
    """The session ended (the server exited or closed its stdout, a write failed, or
    the client was closed) before the answer came, or a request was made after."""


class Client:
    """A blocking MCP client over a server process's stdin/stdout.

    Made by :func:`connect_stdio`, which initializes it.  One request at a time: do not
    call it from ``on_notification``.  An exception raised by ``on_notification``
    propagates from the call that was waiting, which first cancels its request.

    Attributes:
        process: the server process (``subprocess.Popen``).
        connection: the core, ``Connection(CLIENT)``.
        initialize_result: the server's ``InitializeResult`` (None before it).

    Source: 2025-06-18/basic/transports#stdio; 2025-06-18/basic/lifecycle.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        connection: Connection,
        *,
        on_notification: Callable[[Notification], object] | None = None,
        write_timeout: float | None = 60.0,
    ) -> None:
        import selectors

        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.connection = connection
        self.on_notification = on_notification
        self.initialize_result: t.InitializeResult | None = None
        self._in = process.stdin.fileno()
        self._out = process.stdout.fileno()
        os.set_blocking(self._in, False)  # every write waits on the selector instead
        self._selector: selectors.BaseSelector = selectors.DefaultSelector()
        self._selector.register(self._out, selectors.EVENT_READ)
        self._write_timeout = write_timeout
        self._waiting: RequestId | None = None
        self._on_progress: Callable[[Progress], object] | None = None
        self._answer: Event | Exception | None = None
        self._closed: str | None = None

    # -- requests ------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | RequestTimeout | None = _DEFAULT,
        on_progress: Callable[[Progress], object] | None = None,
    ) -> Any:
        """Send a request, wait for the answer, return its typed result.

        Args:
            method: e.g. ``"tools/call"``.
            params: typed params (``mcp_ref.types``), a dict in wire form, or None.
            timeout: seconds (or a RequestTimeout); None for none; default: the
                client's.
            on_progress: called, on this thread while the call waits, with each
                :class:`~mcp_ref.events.Progress` the server reports for this request
                (its id goes out as the progress token).  Like ``on_notification``, it
                must not make requests; an exception it raises cancels the request and
                propagates.

        Raises:
            NoAnswerError: no answer within the timeout (an McpError, code -32001).
            McpError: the server answered with an error response.
            SessionClosed: the session ended first.
            LocalProtocolError: the request breaks the protocol (nothing was sent).
            RuntimeError: called while another request waits (from on_notification).

        Source: 2025-06-18/basic/lifecycle#timeouts;
        2025-06-18/basic/utilities/cancellation#cancellation-flow;
        2025-06-18/basic/utilities/progress#progress-flow.
        """
        self._check_open()
        if self._waiting is not None:
            raise RuntimeError("the blocking client makes one request at a time")
        conn = self.connection
        rid = conn.next_request_id()
        params = _typed(method, params)
        if on_progress is not None:
            params = with_progress_token(method, params, rid)
        kw: dict[str, Any] = {}
        if timeout is not _DEFAULT:
            kw["timeout"] = (
                timeout
                if timeout is None or isinstance(timeout, RequestTimeout)
                else RequestTimeout(seconds=timeout)
            )
        data = conn.send(Request(id=rid, method=method, params=params), now=time.monotonic(), **kw)
        self._waiting, self._answer, self._on_progress = rid, None, on_progress
        try:
            self._write(data)
            while self._answer is None:
                self._step()
        except BaseException:
            if self._answer is None:
                self._give_up(rid, method)
            raise
        finally:
            answer, self._waiting, self._answer = self._answer, None, None
            self._on_progress = None
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, ErrorResponse):
            raise McpError(answer.code, answer.message, answer.data)
        assert isinstance(answer, Response)
        return answer.result

    def _give_up(self, rid: RequestId, method: str) -> None:
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        if method == "initialize" or self.connection.state is State.CLOSED:
            return
        note = Notification(
            method="notifications/cancelled",
            params=t.CancelledNotificationParams(request_id=rid, reason="cancelled by the client"),
        )
        with contextlib.suppress(LocalProtocolError, SessionClosed):
            self._write(self.connection.send(note))

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (typed params, a wire-form dict, or None).

        Raises:
            LocalProtocolError: it breaks the protocol; SessionClosed: the session ended.
        """
        self._check_open()
        self._write(
            self.connection.send(Notification(method=method, params=_typed(method, params)))
        )

    def initialize(
        self,
        *,
        client_info: t.Implementation = DEFAULT_CLIENT_INFO,
        protocol_version: str = LATEST_PROTOCOL_VERSION,
    ) -> t.InitializeResult:
        """``initialize`` (declaring no client capabilities), then
        ``notifications/initialized``.  ``protocol_version`` is the revision asked for;
        the server may answer another supported one.  Raises as :meth:`request`, and
        ValueError for a version mcp-ref does not speak.

        Source: 2025-06-18/basic/lifecycle#initialization;
        2025-06-18/basic/lifecycle#version-negotiation.1.
        """
        params = t.InitializeRequestParams(
            protocol_version=check_version(protocol_version),
            capabilities=t.ClientCapabilities(),
            client_info=client_info,
        )
        result: t.InitializeResult = self.request("initialize", params)
        self.initialize_result = result
        # Spec: 2025-06-18/basic/lifecycle#initialization.4
        # "After successful initialization, the client MUST send an `initialized` notification to
        # indicate it is ready to begin normal operations:"
        self.notify("notifications/initialized")
        return result

    def ping(self, *, timeout: float | None = _DEFAULT) -> None:
        """Send ``ping`` and wait for the answer.  Raises as :meth:`request`.

        Source: 2025-06-18/basic/utilities/ping#behavior-requirements.1.
        """
        self.request("ping", timeout=timeout)

    def list_tools(self) -> list[t.Tool]:
        """All the server's tools, following ``nextCursor``.  Raises as :meth:`request`,
        and RemoteProtocolError when the server repeats a cursor.

        Source: 2025-06-18/server/tools#listing-tools.
        """
        walker = PageWalker()
        while (cursor := walker.next_cursor()) is not PageWalker.DONE:
            params = t.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            page: t.ListToolsResult = self.request("tools/list", params)
            walker.add_page(page.tools, page.next_cursor)
        return walker.items

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = _DEFAULT,
        on_progress: Callable[[Progress], object] | None = None,
    ) -> t.CallToolResult:
        """Call a tool and return its result.  ``timeout`` and ``on_progress`` are as
        for :meth:`request`; raises as :meth:`request`.

        Source: 2025-06-18/server/tools#calling-tools.
        """
        params = t.CallToolRequestParams(name=name, arguments=arguments)
        result: t.CallToolResult = self.request(
            "tools/call", params, timeout=timeout, on_progress=on_progress
        )
        return result

    # -- the loop ------------------------------------------------------------------

    def _step(self) -> None:
        """Steps 3a to 3d: wait, read, expire, dispatch."""
        conn = self.connection
        self._process_events()  # what was read while writing may hold the answer, or EOF
        if self._answer is not None:
            return
        deadline = conn.next_deadline()
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if self._selector.select(wait):
            self._receive()
        # Spec: 2025-06-18/basic/lifecycle#timeouts.2
        # "When the request has not received a success or error response within the timeout period,
        # the sender SHOULD issue a cancellation notification for that request and stop waiting for
        # a response."
        for data in conn.handle_timeout(time.monotonic()):
            self._write(data)
        self._process_events()

    def _receive(self) -> None:
        try:
            chunk = os.read(self._out, _CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self._selector.unregister(self._out)
        self.connection.receive_data(chunk)

    def _write(self, data: bytes) -> None:
        """Write one whole message, reading the server's output meanwhile (step 2)."""
        import selectors

        view, written = memoryview(data), 0
        limit = None if self._write_timeout is None else time.monotonic() + self._write_timeout
        self._selector.register(self._in, selectors.EVENT_WRITE)
        try:
            while written < len(view):
                wait = None if limit is None else max(0.0, limit - time.monotonic())
                ready = self._selector.select(wait)
                if not ready:
                    raise SessionClosed("writing to the server timed out")
                for key, _ in ready:
                    if key.fd == self._out:
                        self._receive()
                        continue
                    try:
                        written += os.write(self._in, view[written:])
                    except BlockingIOError:
                        pass
                    except OSError as exc:  # BrokenPipeError: the server is gone
                        raise SessionClosed(f"writing to the server failed: {exc!r}") from exc
        except BaseException as exc:
            if written:  # half a message may be on the pipe: the stream is unusable
                self.connection.send_failed()
            if isinstance(exc, SessionClosed):
                self._close(str(exc))
            raise
        finally:
            self._selector.unregister(self._in)

    def _process_events(self) -> None:
        conn = self.connection
        while True:
            try:
                event = conn.next_event()
            except RemoteProtocolError as exc:
                if exc.event_hint is not None and conn.state is not State.CLOSED:
                    self._write(conn.send(exc.event_hint))
                if conn.state is State.CLOSED:
                    self._close(exc.message)
                    return
                continue
            if event is NEED_DATA:
                return
            assert isinstance(event, Event)
            self._dispatch(event)

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, Response | ErrorResponse | RequestTimedOut):
            if self._waiting is None or event.id != self._waiting:
                return  # the core already dropped late answers; nothing else can match
            if isinstance(event, RequestTimedOut):
                # Spec: 2025-06-18/basic/lifecycle#timeouts.2
                # "... stop waiting for a response" (the core wrote the cancellation)
                self._answer = NoAnswerError(event.method, event.elapsed)
            else:
                self._answer = event
        elif isinstance(event, Request):
            reply: Event
            if event.method == "ping":
                # Spec: 2025-06-18/basic/utilities/ping#behavior-requirements.1
                # "The receiver MUST respond promptly with an empty response:"
                reply = Response(id=event.id, result=t.EmptyResult())
            else:
                reply = ErrorResponse(
                    id=event.id, code=METHOD_NOT_FOUND, message=f"not handled: {event.method}"
                )
            self._write(self.connection.send(reply))
        elif isinstance(event, Progress):
            if event.request_id == self._waiting and self._on_progress is not None:
                self._on_progress(event)
        elif isinstance(event, Notification):
            if self.on_notification is not None:
                self.on_notification(event)
        elif isinstance(event, ConnectionClosed):
            self._close("the server closed the connection")

    # -- the end -------------------------------------------------------------------

    def _close(self, reason: str) -> None:
        if self._closed is None:
            self._closed = reason
        if self._waiting is not None and self._answer is None:
            self._answer = SessionClosed(reason)

    def _check_open(self) -> None:
        if self._closed is not None:
            raise SessionClosed(self._closed)

    @property
    def closed(self) -> bool:
        """Whether the session has ended."""
        return self._closed is not None

    def close(self) -> None:
        """Stop using the session (the process is shut down by :func:`connect_stdio`)."""
        self._close("the client was closed")
        self._selector.close()


def _typed(method: str, params: Any) -> Any:
    spec = METHODS.get(method)
    if spec is None or not isinstance(params, dict):
        return params
    try:
        return structure(params, spec.params_type)
    except ConversionError as exc:
        raise LocalProtocolError(f"bad params for {method}: {exc}", code=INVALID_PARAMS) from None


@contextlib.contextmanager
def connect_stdio(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stderr: int | None = None,
    timeout: float | None = 60.0,
    client_info: t.Implementation = DEFAULT_CLIENT_INFO,
    protocol_version: str = LATEST_PROTOCOL_VERSION,
    on_notification: Callable[[Notification], object] | None = None,
    shutdown_grace: float = 2.0,
) -> Iterator[Client]:
    """Start an MCP server process; yield an initialized blocking :class:`Client`.

    Args:
        command: program and arguments (no shell).
        env, cwd: for the child (default: ours).
        stderr: where the child's stderr goes: None inherits ours, or
            ``subprocess.DEVNULL`` or a file descriptor.
        timeout: default per-request timeout in seconds, also the bound on one write
            (None: none).
        client_info: the ``clientInfo`` of ``initialize``.
        protocol_version: the revision to ask for (default the latest); the server may
            answer another supported one (``client.initialize_result``).
        on_notification: called with each Notification the server sends.
        shutdown_grace: seconds to wait at each step of the shutdown.

    Raises:
        ValueError: ``protocol_version`` is not supported (nothing is started).
        OSError: the command could not be started.
        NoAnswerError: no answer to ``initialize`` within ``timeout`` (not an MCP
            server, or a slow one).
        McpError, SessionClosed: initialization failed.

    Source: 2025-06-18/basic/transports#stdio; 2025-06-18/basic/lifecycle#stdio.1.
    """
    import subprocess

    check_version(protocol_version)
    process = subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=cwd,
        bufsize=0,
    )
    try:
        default = RequestTimeout(seconds=timeout) if timeout is not None else None
        client = Client(
            process,
            Connection(CLIENT, default_timeout=default),
            on_notification=on_notification,
            write_timeout=timeout,
        )
        try:
            client.initialize(client_info=client_info, protocol_version=protocol_version)
            yield client
        finally:
            client.close()
    finally:
        _shutdown(process, shutdown_grace)


def _shutdown(process: subprocess.Popen[bytes], grace: float) -> None:
    """Close the child's stdin, wait; SIGTERM, wait; SIGKILL, wait.  Never a zombie."""
    import subprocess

    assert process.stdin is not None and process.stdout is not None
    try:
        # Spec: 2025-06-18/basic/lifecycle#stdio.1
        # "For the stdio transport, the client SHOULD initiate shutdown by:"
        with contextlib.suppress(OSError):
            process.stdin.close()
        for step in (None, process.terminate, process.kill):
            if step is not None:
                step()
            try:
                process.wait(timeout=None if step is process.kill else grace)
                return
            except subprocess.TimeoutExpired:
                continue
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
        process.stdout.close()
