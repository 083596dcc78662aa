"""The blocking stdio client: subprocess pipes and a selector, nothing else.

No threads and no event loop: every call does its own waiting, on the caller's thread,
one request at a time.

How it drives the core, step by step
------------------------------------
Everything a client decides (the handshake, params, progress tokens, result checks,
the answers to the server's requests) is the sans-IO client core's
(:class:`mcp_ref._client.ClientWire`, around ``Connection(CLIENT)``); this module only
waits.

1. ``wire = ClientWire(Connection(CLIENT, default_timeout=DEFAULT_TIMEOUT), ...)``.
2. ``request()``: ``rid, params, data = wire.send_request(..., now=time.monotonic())``;
   write ``data`` to the server's stdin.  With ``on_progress``, the params carry a
   progress token (the caller's own, or ``rid``).  The pipe is
   non-blocking and the write waits on a selector that also watches the server's
   stdout, reading what arrives meanwhile, so a server that writes while we write
   cannot deadlock us.
3. Then, until the answer to ``rid`` is in:

   a. wait on the selector for the server's stdout, no later than
      ``conn.next_deadline()``;
   b. read what is there (``os.read``) and ``conn.receive_data(chunk)``;
   c. write what ``conn.handle_timeout(time.monotonic())`` returns (the
      ``notifications/cancelled`` of an expired request);
   d. write what ``wire.drain(self._dispatch)`` returns: the wire hands a Progress for
      ``rid`` to ``on_progress`` and each notification to ``on_notification`` itself;
      the ``Outcome`` (Response, ErrorResponse or RequestTimedOut) for ``rid`` ends the wait
      (``result_of`` turns it into the result, McpError or
      :class:`~mcp_ref.NoAnswerError`); a request from the server is
      answered on the spot (``wire.handle``, ``wire.finish``, ``wire.reply``): a
      ``ping``, and those of the handlers given (sync functions here).  Requests that
      need a capability we did not declare never get that far: the core refuses them.
4. If the wait is interrupted (KeyboardInterrupt, or any exception), the request is
   cancelled with ``wire.cancel(rid)`` before the exception goes on.
5. Closing: close the server's stdin, wait; SIGTERM, wait; SIGKILL.

``subprocess`` and ``selectors`` are imported when a client is made, not when this
module is imported: ``import mcp_ref.blocking`` loads no I/O module.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from .. import types as t
from .._client import (
    DEFAULT,
    DEFAULT_SHUTDOWN_GRACE,
    DEFAULT_TIMEOUT,
    ClientWire,
    InputRounds,
    ListWalk,
    Outcome,
    SessionClosed,
    Timeout,
    as_timeout,
    result_of,
    typed_params,
)
from .._connection import Connection
from .._errors import McpError
from .._inflight import RequestTimeout
from .._state import CLIENT
from ..events import ConnectionClosed, Event, Notification, Progress, Request, RequestId

if TYPE_CHECKING:
    import selectors
    import subprocess

__all__ = ["Client", "connect_stdio"]

_CHUNK: Final = 65536


class Client:
    """A blocking MCP client over a server process's stdin/stdout.

    Made by :func:`connect_stdio`, which initializes it.  One request at a time: do not
    call it from ``on_notification`` or a handler.  An exception raised by
    ``on_notification`` propagates from the call that was waiting, which first cancels
    its request.

    Attributes:
        process: the server process (``subprocess.Popen``).
        wire: the client core with its connection (:class:`mcp_ref._client.ClientWire`;
            ``wire.on_notification`` is the callback :func:`connect_stdio` was given).
        connection: the core's ``Connection(CLIENT)``.

    Source: 2025-06-18/basic/transports#stdio; 2025-06-18/basic/lifecycle.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        wire: ClientWire,
        *,
        write_timeout: float | None = DEFAULT_TIMEOUT.seconds,
    ) -> None:
        import selectors

        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.wire = wire
        self.connection = wire.connection
        self._in = process.stdin.fileno()
        self._out = process.stdout.fileno()
        os.set_blocking(self._in, False)  # every write waits on the selector instead
        self._selector: selectors.BaseSelector = selectors.DefaultSelector()
        self._selector.register(self._out, selectors.EVENT_READ)
        self._write_timeout = write_timeout
        self._waiting: RequestId | None = None
        self._answer: Event | Exception | None = None

    @property
    def initialize_result(self) -> t.InitializeResult | None:
        """The server's ``InitializeResult`` (None before it)."""
        return self.wire.initialize_result

    # -- requests ------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout = DEFAULT,
        on_progress: Callable[[Progress], object] | None = None,
    ) -> Any:
        """Send a request, wait for the answer, return its typed result: the arguments,
        errors and ``input_required`` rounds of :meth:`mcp_ref.client.Client.request`,
        answered by this client's sync handlers.

        ``timeout`` defaults to the client's.  ``on_progress`` is called on this thread
        while the call waits; like ``on_notification`` it must not make requests, and
        an exception it raises cancels the request and propagates.

        Raises:
            RuntimeError: called while another request waits (from on_notification).

        Source: 2025-06-18/basic/lifecycle#timeouts;
        2025-06-18/basic/utilities/cancellation#cancellation-flow;
        2025-06-18/basic/utilities/progress#progress-flow;
        2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.
        """
        rounds = InputRounds(method, typed_params(method, params))
        params = rounds.params
        while True:  # (more than once only for input_required, in the modern era)
            result = self._request(method, params, timeout, on_progress)
            if not isinstance(result, t.InputRequiredResult):
                return self.wire.check_result(method, rounds.params, result)
            answers = {
                key: self._answer_input(asked, asked_params)
                for key, (asked, asked_params) in rounds.asked(result)
            }
            params = rounds.retry(answers)

    def _answer_input(self, method: str, params: Any) -> Any:
        """The answer to one input request of an ``input_required`` result."""
        value = self.wire.handle(method, params, time.monotonic())
        if inspect.isawaitable(value):
            raise TypeError("the blocking client takes sync handlers only")
        return self.wire.finish(method, value)

    def _request(
        self,
        method: str,
        params: Any,
        timeout: Timeout,
        on_progress: Callable[[Progress], object] | None,
    ) -> Any:
        """One request on the wire: its result (an InputRequiredResult too), unchecked."""
        self.wire.check_open()
        if self._waiting is not None:
            raise RuntimeError("the blocking client makes one request at a time")
        rid, params, data = self.wire.send_request(
            method, params, now=time.monotonic(), timeout=timeout, on_progress=on_progress
        )
        self._waiting, self._answer = rid, None
        try:
            self._write(data)
            while self._answer is None:
                self._step()
        except BaseException:
            if self._answer is None:
                with contextlib.suppress(SessionClosed):
                    self._write(self.wire.cancel(rid, method))
            raise
        finally:
            answer, self._waiting, self._answer = self._answer, None, None
        if isinstance(answer, Exception):
            raise answer
        assert answer is not None
        return result_of(answer)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (typed params, a wire-form dict, or None).

        Raises:
            LocalProtocolError: it breaks the protocol; SessionClosed: the session ended.
        """
        self._write(self.wire.send_notification(method, params))

    def open(self) -> None:
        """Open the session in the era asked for (``era=``; done by
        :func:`connect_stdio`): ``initialize`` then ``notifications/initialized``
        (legacy), nothing (modern), or the ``server/discover`` probe and its fallback
        (auto); see :meth:`mcp_ref._client.ClientCore.opening`.  Raises as
        :meth:`request`.
        """
        steps = self.wire.opening(self.connection)
        answer: Any = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration:
                return
            if isinstance(step, Notification):
                self.notify(step.method, step.params)
                answer = None
                continue
            try:
                answer = self.request(*step)
            except McpError as exc:
                answer = exc

    @property
    def era(self) -> str | None:
        """The era the session speaks (``"legacy"`` or ``"modern"``)."""
        return self.wire.spoken

    def discover(self) -> t.DiscoverResult:
        """``server/discover`` (modern era).  Source: 2026-07-28/server/discover."""
        result: t.DiscoverResult = self.request("server/discover")
        self.wire.discovered(result)
        return result

    def initialize(self) -> t.InitializeResult:
        """``initialize``, then ``notifications/initialized`` (done by
        :func:`connect_stdio`).  Raises as :meth:`request`.

        Source: 2025-06-18/basic/lifecycle#initialization.
        """
        result: t.InitializeResult = self.request("initialize", self.wire.initialize_params())
        note = self.wire.initialized(result)
        self.notify(note.method, note.params)
        return result

    def ping(self, *, timeout: Timeout = DEFAULT) -> None:
        """Send ``ping`` and wait for the answer.  Raises as :meth:`request`.

        Source: 2025-06-18/basic/utilities/ping#behavior-requirements.1.
        """
        self.request("ping", timeout=timeout)

    def list_tools(self) -> list[t.Tool]:
        """All the server's tools, following ``nextCursor``; remembers their output
        schemas.  Raises as :meth:`request`, and RemoteProtocolError when the server
        repeats a cursor.

        Source: 2025-06-18/server/tools#listing-tools.
        """
        walk = ListWalk("tools/list")
        while (params := walk.next_params()) is not ListWalk.DONE:
            walk.add(self.request(walk.method, params))
        return walk.items

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
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

        if not data:
            return
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
                self._close(exc.reason)
            raise
        finally:
            self._selector.unregister(self._in)

    def _process_events(self) -> None:
        self._write(self.wire.drain(self._dispatch))

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, Outcome):
            if self._waiting is not None and event.id == self._waiting:
                self._answer = event  # (the core already dropped late answers)
        elif isinstance(event, Request):
            self._write(self.wire.reply(event, self._answer_server(event)))
        elif isinstance(event, ConnectionClosed):
            self._close(self.wire.closed or "the server closed the connection")

    def _answer_server(self, request: Request) -> Any:
        """The result of a server request (or the exception raised on the way)."""
        try:
            value = self.wire.handle(request.method, request.params, time.monotonic())
            if inspect.isawaitable(value):
                raise TypeError("the blocking client takes sync handlers only")
            return self.wire.finish(request.method, value)
        except Exception as exc:
            return exc

    # -- the end -------------------------------------------------------------------

    def _close(self, reason: str) -> None:
        self.wire.close(reason)
        if self._waiting is not None and self._answer is None:
            self._answer = SessionClosed(self.wire.closed or reason)

    @property
    def closed(self) -> bool:
        """Whether the session has ended."""
        return self.wire.closed is not None

    def close(self) -> None:
        """Stop using the session (the process is shut down by :func:`connect_stdio`)."""
        self._close("the client was closed")
        self._selector.close()


@contextlib.contextmanager
def connect_stdio(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stderr: int | None = None,
    timeout: float | RequestTimeout | None = DEFAULT_TIMEOUT,
    on_notification: Callable[[Notification], object] | None = None,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    **options: Any,
) -> Iterator[Client]:
    """Start an MCP server process; yield an initialized blocking :class:`Client`.

    Args:
        command: program and arguments (no shell).
        env, cwd: for the child (default: ours).
        stderr: where the child's stderr goes: None inherits ours, or
            ``subprocess.DEVNULL`` or a file descriptor.
        timeout: default per-request timeout (seconds or a RequestTimeout; default
            :data:`mcp_ref._client.DEFAULT_TIMEOUT`); its seconds also bound one write
            (None: no bound).
        on_notification: called with each Notification the server sends.
        shutdown_grace: seconds to wait at each step of the shutdown (default 2).
        **options: the client core's (:class:`mcp_ref._client.ClientCore`):
            ``client_info``, ``era`` (``"legacy"``, ``"modern"``, ``"auto"``: see
            :data:`mcp_ref._client.EraArg`), ``protocol_version`` (the server may
            answer another supported one: ``client.initialize_result``),
            ``sampling_handler``, ``elicitation_handler`` (sync functions; they answer
            the modern era's ``input_required`` too), ``roots``, the rate limits.

    Raises:
        ValueError: ``protocol_version`` is not supported, or a root is not an
            absolute ``file://`` URI (nothing is started).
        OSError: the command could not be started.
        NoAnswerError: no answer to ``initialize`` within ``timeout`` (not an MCP
            server, or a slow one).
        McpError, SessionClosed: initialization failed.

    Source: 2025-06-18/basic/transports#stdio; 2025-06-18/basic/lifecycle#stdio.1.
    """
    import subprocess

    default = as_timeout(timeout)
    wire = ClientWire(
        Connection(CLIENT, default_timeout=default), on_notification=on_notification, **options
    )
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
        client = Client(process, wire, write_timeout=None if default is None else default.seconds)
        try:
            client.open()
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
