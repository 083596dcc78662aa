"""Where the MCP sessions of the ASGI application run: on trio, whichever loop the ASGI
server runs.

Theory of operation
-------------------
A :class:`Runtime` is the trio side of one application: the session table's
supervisor (whose tasks own the sessions) and its reaper, in a nursery that lives from
the first request (or the ASGI ``lifespan`` startup) until the lifespan shutdown (or
the end of the loop).  A *host* is the ASGI server's loop as the application sees it:

* :class:`TrioHost` (Hypercorn ``--worker-class trio``): the runtime is a trio system
  task of the server's own run; a request's answer runs in the request's own task, and
  every ASGI callable is trio-awaitable as it is.
* :class:`AsyncioHost` (Uvicorn, Hypercorn's asyncio worker, anything asyncio): the
  runtime is a trio *guest run* (:func:`trio.lowlevel.start_guest_run`) on the asyncio
  loop.  A request's answer is a trio task started in the runtime's nursery
  (:meth:`AsyncioHost.call`); what it sends goes through :meth:`AsyncioHost.bridge`,
  which runs the ASGI ``send`` as an asyncio task and waits for it on trio.

Why guest mode, and what it costs.  Guest mode runs trio's scheduler *on the asyncio
thread*, as callbacks of the asyncio loop; only trio's wait for I/O runs in a helper
thread (our sessions do no I/O of their own: timers and memory channels only).  So
every trio object (the sessions, the sans-IO state, the events) is touched by one
thread, as under ``trio.run``, and an object crosses between the loops only as a
callback scheduled on the other loop (``TrioToken.run_sync_soon`` into trio,
``loop.call_soon_threadsafe`` into asyncio), never shared under a lock: that is why it
is correct.  The cost: one helper thread per application, and each crossing is one
scheduled callback (a few microseconds), two per message sent (the ``send`` and its
completion) and two per request (start, end).  The alternative, a trio run in a
thread of its own reached with ``trio.from_thread``, would put the handlers on another
thread than the ASGI server's, take a lock per crossing and outlive the loop unless
stopped by hand; it buys nothing here.  Handlers of the high-level server thus always
run on trio: natively under a trio server, as guests under an asyncio one.

The ``sniffio`` library (a dependency of trio) tells which loop runs the ASGI server.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import outcome
import trio

from ..trio.http.sessions import SessionTable
from ._request import Message, Send

__all__ = ["AsyncioHost", "Host", "Runtime", "TrioHost"]

log = logging.getLogger("mcp_ref.asgi")

_SHUTDOWN_REASON: Final = "the server is shutting down"


class Runtime:
    """The trio side of one application: the session table's tasks (module docstring).

    Args:
        table: the application's sessions.
        grace_seconds: at the stop, seconds the requests in progress get before they are
            cancelled (each then answered with an error, -32603).
    """

    def __init__(self, table: SessionTable, grace_seconds: float) -> None:
        self.table = table
        self.grace_seconds = grace_seconds
        self.nursery: trio.Nursery | None = None
        self.stop = trio.Event()

    async def main(self, started: Callable[[], None]) -> None:
        """Run the supervisor and the reaper until :attr:`stop` is set, then stop
        gracefully: the requests in progress get ``grace_seconds``, every session ends
        (its SSE responses end whole), the tasks left are cancelled.  Calls ``started``
        once running."""
        table = self.table
        async with trio.open_nursery() as nursery:
            await nursery.start(table.supervisor.run)
            nursery.start_soon(table.reaper)
            self.nursery = nursery
            started()
            await self.stop.wait()
            await table.finish(self.grace_seconds, _SHUTDOWN_REASON)
            with trio.move_on_after(1.0):  # the sessions' owner tasks end by themselves
                for sess in list(table.book.seats):
                    await sess.done.wait()
            nursery.cancel_scope.cancel()


class Host:
    """The ASGI server's loop as the application sees it (module docstring)."""

    runtime: Runtime

    async def start(self) -> None:
        """Start the runtime if it is not running (idempotent; concurrent callers all
        wait for it).

        Raises:
            RuntimeError: the runtime has already stopped.
        """
        raise NotImplementedError

    async def stop(self) -> None:
        """Stop the runtime gracefully and wait for it (see :meth:`Runtime.main`)."""
        raise NotImplementedError

    async def call(self, fn: Callable[[Send], Awaitable[None]], send: Send) -> None:
        """Run ``fn(trio_send)`` on trio and wait for it; ``trio_send`` is ``send`` made
        trio-awaitable."""
        raise NotImplementedError

    def signal(self, event: trio.Event) -> None:
        """Set a trio event from the host loop."""
        raise NotImplementedError


class TrioHost(Host):
    """The ASGI server runs trio: everything runs natively (module docstring)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._started: trio.Event | None = None
        self._done = trio.Event()

    async def start(self) -> None:
        """See :meth:`Host.start`."""
        if self._done.is_set():
            raise RuntimeError("the MCP application has stopped")
        if self._started is None:
            self._started = trio.Event()
            trio.lowlevel.spawn_system_task(self._main, self._started)
        await self._started.wait()

    async def _main(self, started: trio.Event) -> None:
        try:
            await self.runtime.main(started.set)
        except Exception:  # a system task's error would end the whole trio run
            log.exception("the MCP application's runtime failed")
        finally:
            started.set()
            self._done.set()

    async def stop(self) -> None:
        """See :meth:`Host.stop`."""
        if self._started is None:
            self._done.set()
            return
        self.runtime.stop.set()
        await self._done.wait()

    async def call(self, fn: Callable[[Send], Awaitable[None]], send: Send) -> None:
        """See :meth:`Host.call`."""
        await fn(send)

    def signal(self, event: trio.Event) -> None:
        """See :meth:`Host.signal`."""
        event.set()


class AsyncioHost(Host):
    """The ASGI server runs asyncio: trio runs as a guest of its loop (module
    docstring)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._loop: asyncio.AbstractEventLoop | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._started: asyncio.Future[None] | None = None
        self._done: asyncio.Future[None] | None = None

    async def start(self) -> None:
        """See :meth:`Host.start`."""
        if self._done is not None and self._done.done():
            raise RuntimeError("the MCP application has stopped")
        if self._started is None:
            loop = self._loop = asyncio.get_running_loop()
            started = self._started = loop.create_future()
            done = self._done = loop.create_future()

            def on_started() -> None:
                self._token = trio.lowlevel.current_trio_token()
                loop.call_soon_threadsafe(_settle, started, None)

            def on_done(result: outcome.Outcome[None]) -> None:
                if isinstance(result, outcome.Error):
                    log.error("the MCP application's runtime failed", exc_info=result.error)
                _settle(started, None)
                _settle(done, None)

            trio.lowlevel.start_guest_run(
                self.runtime.main,
                on_started,
                run_sync_soon_threadsafe=loop.call_soon_threadsafe,
                done_callback=on_done,
                host_uses_signal_set_wakeup_fd=True,
            )
        await asyncio.shield(self._started)
        if self._token is None:
            raise RuntimeError("the MCP application's runtime failed to start")

    async def stop(self) -> None:
        """See :meth:`Host.stop`."""
        if self._token is None or self._done is None:
            return
        try:
            self._token.run_sync_soon(self.runtime.stop.set)
        except trio.RunFinishedError:
            return
        await asyncio.shield(self._done)

    def signal(self, event: trio.Event) -> None:
        """See :meth:`Host.signal`."""
        assert self._token is not None
        try:
            self._token.run_sync_soon(event.set)
        except trio.RunFinishedError:
            pass

    async def call(self, fn: Callable[[Send], Awaitable[None]], send: Send) -> None:
        """See :meth:`Host.call`.  Cancelling the caller cancels the trio task.

        Raises:
            RuntimeError: the runtime is not running.
        """
        loop, token, nursery = self._loop, self._token, self.runtime.nursery
        if loop is None or token is None or nursery is None:
            raise RuntimeError("the MCP application's runtime is not running")
        done: asyncio.Future[None] = loop.create_future()
        scope = trio.CancelScope()
        context = contextvars.copy_context()  # the ASGI server's, for its send

        async def job() -> None:
            try:
                with scope:
                    await fn(self.bridge(send, loop, context))
            except Exception as exc:
                loop.call_soon_threadsafe(_settle, done, exc)
            finally:  # also when the runtime's stop cancels it
                loop.call_soon_threadsafe(_settle, done, None)

        try:
            token.run_sync_soon(nursery.start_soon, job)
        except trio.RunFinishedError:
            raise RuntimeError("the MCP application's runtime has stopped") from None
        try:
            await done
        except asyncio.CancelledError:
            try:
                token.run_sync_soon(scope.cancel)
            except trio.RunFinishedError:
                pass
            raise

    @staticmethod
    def bridge(send: Send, loop: asyncio.AbstractEventLoop, context: contextvars.Context) -> Send:
        """``send`` (an asyncio coroutine function) made awaitable from trio: each call
        runs it as an asyncio task (in a copy of ``context``) and waits for its end;
        cancelling the trio side cancels the task."""

        async def trio_send(message: Message) -> None:
            token = trio.lowlevel.current_trio_token()
            finished = trio.Event()
            task = loop.create_task(_call(send, message), context=context.copy())
            task.add_done_callback(lambda _: _run_soon(token, finished.set))
            try:
                await finished.wait()
            except BaseException:
                task.cancel()
                raise
            if task.cancelled():
                raise OSError("the ASGI send was cancelled")
            exc = task.exception()
            if exc is not None:
                raise exc

        return trio_send


async def _call(send: Send, message: Message) -> None:
    await send(message)


def _run_soon(token: trio.lowlevel.TrioToken, fn: Callable[[], object]) -> None:
    try:
        token.run_sync_soon(fn)
    except trio.RunFinishedError:
        pass


def _settle(future: asyncio.Future[None], result: BaseException | None) -> None:
    """Resolve ``future`` unless it is done already."""
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(None)
