"""The client's side of MCP, sans-IO: what every client does, whatever loop runs it.

Theory of operation
-------------------
mcp-ref has three clients: :mod:`mcp_ref.client` on trio, :mod:`mcp_ref.asyncio` and
:mod:`mcp_ref.blocking`.  They differ only in how they wait.  Everything they decide is
here, once, with no I/O and no clock (time is an argument, as in the
:class:`~mcp_ref.Connection` itself):

1. **Options and their defaults** (:class:`ClientCore`'s arguments): ``client_info``,
   ``protocol_version``, the handlers for the server's requests, ``roots``, the rate
   limits, and :data:`DEFAULT_TIMEOUT`.  Each capability follows from what is given: a
   ``sampling_handler`` declares ``sampling``, and so on.
2. **The opening, in its era** (:data:`EraArg`; :meth:`ClientCore.opening`, one
   generator every loop runs): the handshake -- :meth:`ClientCore.initialize_params`
   is the ``initialize`` request's params, with a version we speak (checked when the
   core is made); :meth:`ClientCore.initialized` takes the server's answer and
   returns the ``notifications/initialized`` to send (the Connection itself refuses
   an answer with a version we do not speak, and closes: version-negotiation.6) --
   or the modern era of 2026-07-28 (:func:`choose_era` puts the connection in it: no
   handshake, ``_meta`` on every request), or the ``server/discover`` probe that
   picks one of the two (:func:`probe_era`).  In the modern era an
   ``input_required`` result is answered through the handlers of step 5 and the
   request retried (:class:`InputRounds`, bounded by :data:`MAX_INPUT_ROUNDS`).
3. **Requests**: :func:`typed_params` turns wire-form dicts into the method's class;
   :func:`with_progress_token` adds a progress token with ONE rule: a token the caller
   put in ``_meta`` is kept, otherwise the fresh one (the request id) is used;
   :func:`as_timeout` reads a ``timeout=`` (seconds, RequestTimeout, None, DEFAULT).
4. **Results**: :meth:`ClientCore.check_result` remembers the ``outputSchema`` of
   listed tools and checks a tool's ``structuredContent`` against it
   (:mod:`mcp_ref._output_schema`); :func:`result_of` turns the answer event into the
   result or the error; :class:`ListWalk` walks a paginated list.  The typed methods
   built on ``request`` (``list_tools``, ``call_tool``, ...) are written once for the
   two async clients in :mod:`mcp_ref._client_methods`.
5. **The server's requests**: :meth:`ClientCore.handle` applies the rate limit and
   calls the handler (its value may be awaitable: the loop awaits it), then
   :meth:`ClientCore.finish` checks what came back (roots).
6. **Roots**: :meth:`ClientCore.set_roots` replaces them and returns the
   ``notifications/roots/list_changed`` to send.

The asyncio and blocking clients drive a :class:`~mcp_ref.Connection` themselves;
:class:`ClientWire` (the core plus that connection) gives them the rest: the bytes of a
request, of its cancellation (never ``initialize``'s) and of the reply to a server
request; and the events to act on, after it has done its share (protocol errors'
replies queued, progress and notifications handed to their callbacks, end of input
noticed).  (A transport that must replay the handshake, as Streamable HTTP does after a
404, keeps its bytes itself: :mod:`mcp_ref._http_client`.)  The trio client
leaves the connection to :class:`mcp_ref.trio.Session` and uses the core only.

Every client raises the one :class:`SessionClosed` defined here.
"""

from __future__ import annotations

import enum
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, Final, Literal

import attrs

from . import types as t
from ._client_modern import (
    DEFAULT_ERA,
    MAX_INPUT_ROUNDS,
    EraArg,
    InputRounds,
    TooManyInputRounds,
    choose_era,
    probe_era,
    set_log_level,
)
from ._connection import NEED_DATA, Connection
from ._convert import ConversionError, structure
from ._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    LocalProtocolError,
    McpError,
    NoAnswerError,
    RemoteProtocolError,
)
from ._inflight import RequestTimeout
from ._methods import METHODS
from ._modern import MODERN_VERSIONS, SERVER_INFO_KEY
from ._output_schema import OutputSchemas
from ._pagination import PageWalker
from ._ratelimit import RateLimit, TokenBucket, take_or_refuse
from ._roots import check_roots
from ._sampling import check_sampling_messages
from ._state import State
from ._versions import LATEST_PROTOCOL_VERSION, check_version
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

__all__ = [
    "DEFAULT",
    "DEFAULT_CLIENT_INFO",
    "DEFAULT_ELICITATION_RATE_LIMIT",
    "DEFAULT_ERA",
    "DEFAULT_SAMPLING_RATE_LIMIT",
    "DEFAULT_SHUTDOWN_GRACE",
    "DEFAULT_TIMEOUT",
    "MAX_INPUT_ROUNDS",
    "MAX_URL_ELICITATIONS",
    "ClientCore",
    "ClientWire",
    "ElicitationHandler",
    "EraArg",
    "InputRounds",
    "ListWalk",
    "Outcome",
    "RootsArg",
    "SamplingHandler",
    "SessionClosed",
    "Timeout",
    "TooManyInputRounds",
    "as_timeout",
    "choose_era",
    "page_params",
    "probe_era",
    "result_of",
    "set_log_level",
    "typed_params",
    "with_progress_token",
]

log = logging.getLogger("mcp_ref.client")

_VERSION: Final = "0.1.0"
"""pyproject.toml's version (a test checks they agree; ``importlib.metadata`` would
load ``socket``, which no core module may import)."""

# -- the options every client takes, and their defaults ------------------------------

DEFAULT_CLIENT_INFO: Final = t.Implementation(name="mcp-ref", version=_VERSION)
"""The ``clientInfo`` sent in ``initialize`` when none is given (every client)."""

DEFAULT_TIMEOUT: Final = RequestTimeout(seconds=60, reset_on_progress=True, maximum=600)
"""Every client's default per-request timeout: 60 s, restarted by progress, at most
600 s in all.  Source: 2025-06-18/basic/lifecycle#timeouts.1, .4 and .5."""


class _Default(enum.Enum):
    TOKEN = 0

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default.TOKEN
"""``timeout=DEFAULT``: the client's default timeout (the one it was opened with)."""

Timeout = float | RequestTimeout | None | Literal[_Default.TOKEN]
"""What a client's ``timeout=`` takes: seconds, a :class:`~mcp_ref.RequestTimeout`,
None (no timeout) or :data:`DEFAULT`."""

DEFAULT_SAMPLING_RATE_LIMIT: Final = RateLimit(per_second=2.0, burst=20)
"""At most 20 ``sampling/createMessage`` requests at once, then 2 per second, per
session (2025-06-18/client/sampling#security-considerations.4)."""

DEFAULT_ELICITATION_RATE_LIMIT: Final = RateLimit(per_second=1.0, burst=10)
"""At most 10 ``elicitation/create`` requests at once, then 1 per second, per session
(2025-06-18/client/elicitation#security-considerations.6)."""

MAX_URL_ELICITATIONS: Final = 64
"""How many URL-mode elicitations a client remembers until their
``notifications/elicitation/complete`` comes (the oldest is forgotten first)."""

DEFAULT_SHUTDOWN_GRACE: Final = 2.0
"""Seconds a stdio client waits at each step of a child's shutdown (stdin closed,
SIGTERM) before the next one.  Source: 2025-06-18/basic/lifecycle#stdio.1."""

SamplingHandler = Callable[
    [t.CreateMessageRequestParams], "t.CreateMessageResult | Awaitable[t.CreateMessageResult]"
]
"""Answers ``sampling/createMessage``: ``(params) -> t.CreateMessageResult``, sync or
async (the blocking client takes sync ones only)."""

ElicitationHandler = Callable[[Any], "t.ElicitResult | Awaitable[t.ElicitResult]"]
"""Answers ``elicitation/create``: ``(params) -> t.ElicitResult``, sync or async; params
are ``t.ElicitRequestFormParams`` or (2025-11-25) ``t.ElicitRequestURLParams``."""

RootsArg = Sequence[t.Root] | Callable[[], "Sequence[t.Root] | Awaitable[Sequence[t.Root]]"] | None
"""The client's roots: a list of ``t.Root``, a (sync or async) callable returning one, or
None for no ``roots`` capability."""


class SessionClosed(ConnectionError):
    """The session ended (end of input, a failed write, a fatal protocol error, or the
    client was closed) before the answer came, or a request was made after.

    The one class every client raises (trio, asyncio, blocking).

    Attributes:
        reason: a human-readable account of why it ended (for a stdio child process:
            its exit code and the last lines of its stderr, where the driver has them).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# -- requests: params, progress tokens, timeouts, results ----------------------------


def typed_params(method: str, params: Any) -> Any:
    """``params`` as the typed class ``METHODS[method]`` wants: a dict (camelCase wire
    names, as in JSON) is converted; None and typed instances pass unchanged.

    Raises:
        LocalProtocolError: the dict does not fit the method's params (-32602).
    """
    spec = METHODS.get(method)
    if spec is None or not isinstance(params, dict):
        return params
    try:
        return structure(params, spec.params_type)
    except ConversionError as exc:
        raise LocalProtocolError(f"bad params for {method}: {exc}", code=INVALID_PARAMS) from None


def with_progress_token(method: str, params: Any, fresh: RequestId) -> Any:
    """``params`` (typed, or None) carrying a progress token in ``_meta``: the caller's
    own ``progressToken`` when it put one there, else ``fresh`` (the request's id, so
    unique among active requests).

    Params that cannot carry ``_meta`` are returned as they are (the core refuses them,
    or the server sends no progress).

    Source: 2025-06-18/basic/utilities/progress#progress-flow.1 and .2.
    """
    if params is None:
        spec = METHODS.get(method)
        if spec is None or spec.params_type is None:
            return None
        try:
            params = spec.params_type()
        except TypeError:  # required fields: the core refuses the request anyway
            return None
    if not attrs.has(type(params)) or not hasattr(params, "meta"):
        return params
    meta = dict(params.meta or {})
    # Spec: 2025-06-18/basic/utilities/progress#progress-flow.2 (request ids are unique)
    # "Progress tokens can be chosen by the sender using any means, but MUST be unique across all
    # active requests."
    # Spec: 2026-07-28/basic/patterns/progress#progress-flow.2
    # "Progress tokens can be chosen by the client using any means, but MUST be unique across all
    # active requests."
    meta.setdefault("progressToken", fresh)
    return attrs.evolve(params, meta=meta)


def as_timeout(timeout: float | RequestTimeout | None) -> RequestTimeout | None:
    """A timeout given as seconds, a :class:`~mcp_ref.RequestTimeout` or None (no
    timeout), as the Connection takes it.

    Raises:
        ValueError: seconds that are not positive.
    """
    if timeout is None or isinstance(timeout, RequestTimeout):
        return timeout
    return RequestTimeout(seconds=timeout)


Outcome = Response | ErrorResponse | RequestTimedOut
"""The events that end a request we sent: the server's answer (a Response or an
ErrorResponse), or our giving up waiting (RequestTimedOut).  ``isinstance(event,
Outcome)`` is how a loop tells them from the rest."""


def result_of(event: Event) -> Any:
    """The typed result that ends a request: a Response's result.

    Raises:
        McpError: for an ErrorResponse (the server's error).
        NoAnswerError: for RequestTimedOut (an McpError with code ``REQUEST_TIMEOUT``
            that no server sent: we gave up waiting, and the core wrote the
            ``notifications/cancelled``).
    """
    if isinstance(event, ErrorResponse):
        # Spec: 2026-07-28/basic/index#error-codes.2
        # "Apart from `-32002` (see below), receivers MUST NOT assume any specific meaning for these
        # codes."
        # (the code as sent: a received -32001 is the server's, never our NoAnswerError)
        raise McpError(event.code, event.message, event.data)
    if isinstance(event, RequestTimedOut):
        # Spec: 2025-06-18/basic/lifecycle#timeouts.2
        # "When the request has not received a success or error response within the timeout period,
        # the sender SHOULD issue a cancellation notification for that request and stop waiting for
        # a response."
        raise NoAnswerError(event.method, event.elapsed)
    assert isinstance(event, Response)
    return event.result


_LIST_FIELDS: Final = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resource_templates",
    "prompts/list": "prompts",
}


class ListWalk:
    """Every page of one paginated list, walked by any loop::

        walk = ListWalk("tools/list")
        while (params := walk.next_params()) is not ListWalk.DONE:
            walk.add(await client.request(walk.method, params))
        return walk.items

    Raises (from :meth:`add`):
        RemoteProtocolError: the server repeated a cursor or sent too many pages.

    Source: 2025-06-18/server/utilities/pagination#implementation-guidelines.3.
    """

    DONE: Final[object] = PageWalker.DONE

    def __init__(self, method: str) -> None:
        self.method = method
        self._field = _LIST_FIELDS[method]
        self._walker = PageWalker()

    def next_params(self) -> t.PaginatedRequestParams | object | None:
        """The params of the next page's request (None for the first), or :data:`DONE`."""
        # Spec: 2025-06-18/server/utilities/pagination#implementation-guidelines.3
        # "Clients MUST treat cursors as opaque tokens:"
        cursor: str | None = self._walker.next_cursor()
        if cursor is PageWalker.DONE:
            return self.DONE
        return page_params(cursor)

    def add(self, page: Any) -> None:
        """Take one page (a ``t.List...Result``)."""
        # Spec: 2026-07-28/server/utilities/pagination#implementation-guidelines.3
        # "Clients MUST treat cursors as opaque tokens:"
        # Spec: 2026-07-28/server/utilities/pagination#implementation-guidelines.4
        # "Don't make any determination based on cursor value other than whether a non-null value
        # was provided (e.g. an empty string is a valid cursor and thus MUST NOT be treated as the
        # end of results)"
        # (the cursor goes to the walker as it came: only null ends the walk, and an empty
        # string is sent back like any other cursor)
        self._walker.add_page(getattr(page, self._field), page.next_cursor)

    @property
    def items(self) -> list[Any]:
        """What every page listed, in order."""
        return self._walker.items


def page_params(cursor: str | None) -> t.PaginatedRequestParams | None:
    """The params of a list request for the page at ``cursor`` (None: the first)."""
    return t.PaginatedRequestParams(cursor=cursor) if cursor is not None else None


# -- the core ------------------------------------------------------------------------


class ClientCore:
    """What a client knows and decides, with no I/O: options, handshake, result checks,
    the server's requests, roots.  See the module docstring for how a loop uses it.

    Args:
        client_info: our ``clientInfo``.
        era: ``"legacy"``, ``"modern"`` or ``"auto"`` (:data:`EraArg`; default
            :data:`DEFAULT_ERA`).
        protocol_version: the revision we ask for (default the latest we speak in the
            era); in the handshake era the server may answer another supported one.  A
            modern version (2026-07-28) pins the modern era, a handshake one the legacy
            era, unless ``era`` says otherwise (then ValueError).
        sampling_handler: answers ``sampling/createMessage``; declares ``sampling``.
        sampling_tools: the sampling handler takes tool-enabled requests (``tools``,
            ``toolChoice``; 2025-11-25 on): declares ``sampling.tools``.  Without it no
            server may send one.
        elicitation_handler: answers ``elicitation/create``; declares ``elicitation``
            (form mode: an empty object).
        elicitation_url: the elicitation handler takes URL-mode requests too (2025-11-25
            on): declares ``elicitation`` with ``form`` and ``url``.  Without it a
            URL-mode request is refused -32602 before the handler.
        roots: our roots (a list, or a callable returning one); declares ``roots`` with
            ``listChanged``.
        sampling_rate_limit, elicitation_rate_limit: how many of those requests the
            server may make (per session; None: no limit).  One beyond is answered
            -32603 with ``data.retryAfter`` (seconds) and never reaches the handler.

    Raises:
        ValueError: ``protocol_version`` is not one mcp-ref speaks (or not of ``era``),
            ``era`` is none of the three, a root is not an absolute ``file://`` URI, or
            ``sampling_tools`` without a ``sampling_handler`` (or ``elicitation_url``
            without an ``elicitation_handler``).

    Source: 2025-06-18/basic/lifecycle#initialization; 2025-06-18/client.
    """

    def __init__(
        self,
        *,
        client_info: t.Implementation = DEFAULT_CLIENT_INFO,
        protocol_version: str | None = None,
        era: EraArg | None = None,
        sampling_handler: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation_handler: ElicitationHandler | None = None,
        elicitation_url: bool = False,
        roots: RootsArg = None,
        sampling_rate_limit: RateLimit | None = DEFAULT_SAMPLING_RATE_LIMIT,
        elicitation_rate_limit: RateLimit | None = DEFAULT_ELICITATION_RATE_LIMIT,
    ) -> None:
        self.client_info = client_info
        modern = protocol_version in MODERN_VERSIONS
        if era is None:
            era = "modern" if modern else "legacy" if protocol_version else DEFAULT_ERA
        elif era == "auto" and protocol_version is not None:
            era = "modern" if modern else "legacy"  # a pinned version pins its era
        if era not in ("auto", "modern", "legacy"):
            raise ValueError(f"era must be 'auto', 'modern' or 'legacy', not {era!r}")
        if protocol_version is not None and modern != (era == "modern"):
            raise ValueError(f"protocol version {protocol_version!r} is not of the {era} era")
        self.era: EraArg = era
        """The era asked for; :attr:`spoken` is the one the server turned out to speak."""
        self.spoken: Literal["modern", "legacy"] | None = None
        """The era the session speaks once it is open (None before)."""
        self.modern_version: str = (
            protocol_version if protocol_version in MODERN_VERSIONS else MODERN_VERSIONS[0]
        )
        """The version every modern request names in its ``_meta``."""
        # Spec: 2025-06-18/basic/lifecycle#version-negotiation.1
        # "In the `initialize` request, the client MUST send a protocol version it supports."
        self.protocol_version = check_version(
            LATEST_PROTOCOL_VERSION if modern or protocol_version is None else protocol_version
        )
        self._handlers: dict[str, tuple[Callable[[Any], Any], RateLimit | None]] = {}
        if sampling_handler is not None:
            self._handlers["sampling/createMessage"] = (sampling_handler, sampling_rate_limit)
        elif sampling_tools:
            raise ValueError("sampling_tools needs a sampling_handler")
        self._sampling_tools = sampling_tools
        if elicitation_handler is not None:
            self._handlers["elicitation/create"] = (elicitation_handler, elicitation_rate_limit)
        elif elicitation_url:
            raise ValueError("elicitation_url needs an elicitation_handler")
        self._elicitation_url = elicitation_url
        self._url_elicitations: dict[str, None] = {}  # ids awaiting completion, oldest first
        self._roots = _kept_roots(roots)
        self._buckets: dict[str, TokenBucket] = {}
        self._output_schemas = OutputSchemas()
        self.initialize_result: t.InitializeResult | None = None
        """The server's answer to ``initialize`` (None before it)."""
        self.discover_result: t.DiscoverResult | None = None
        """The server's answer to ``server/discover`` (modern era; None before it)."""

    # -- the era -----------------------------------------------------------------------

    def opens_modern(self) -> bool:
        """Whether the session's first request is modern (``era`` modern or auto)."""
        return self.era != "legacy"

    def modern_options(self) -> dict[str, Any]:
        """The keywords of :func:`choose_era` (or of a new ``Connection(CLIENT, ...)``
        with ``era="modern"``): our version, ``clientInfo`` and capabilities."""
        return {
            "protocol_version": self.modern_version,
            "client_info": self.client_info,
            "capabilities": self.capabilities,
        }

    def opening(self, connection: Connection) -> Generator[Any, Any, None]:
        """The opening of a session on ``connection`` (which has sent nothing), in the
        era asked for, for any loop to run::

            steps = core.opening(connection)
            answer = None
            while (step := next_step(steps, answer)) is not None:   # StopIteration: open
                if isinstance(step, Notification): send it; answer = None
                else: method, params = step; answer = the result, or the McpError raised

        Legacy: ``initialize``, then ``notifications/initialized``.  Modern: nothing
        (the connection is put in the modern era).  Auto: ``server/discover``; its
        result opens the modern era, a -32022 listing a version we speak is retried
        once with it, another modern error is raised, and any other error (or no
        answer) falls back to the handshake.

        The generator raises what ends the opening: the McpError of ``initialize`` (or
        of a modern server's refusal), LocalProtocolError when the server does not list
        our version.

        Source: 2025-06-18/basic/lifecycle#initialization;
        2026-07-28/basic/transports/stdio#backward-compatibility.
        """
        if self.opens_modern():
            choose_era(connection, "modern", **self.modern_options())
            if self.era == "modern":
                self.spoken = "modern"
                return
            outcome = yield ("server/discover", None)
            if isinstance(outcome, McpError) and self.other_version(outcome) is not None:
                choose_era(connection, "modern", **self.modern_options())
                outcome = yield ("server/discover", None)
            if not isinstance(outcome, McpError):
                self.discovered(outcome)
                return
            if probe_era(outcome) == "modern":
                raise outcome
            log.info("server/discover failed (%s): falling back to initialize", outcome)
            choose_era(connection, "legacy")
        result = yield ("initialize", self.initialize_params())
        if isinstance(result, McpError):
            raise result
        yield self.initialized(result)

    def listen_params(self, uris: Sequence[str]) -> t.SubscriptionsListenRequestParams:
        """The params of the ``subscriptions/listen`` a modern client keeps open for
        :meth:`~mcp_ref._client_methods.TypedMethods.subscribe`: updates of ``uris``,
        and the three list changes (which the handshake era delivers unasked).

        Source: 2026-07-28/basic/patterns/subscriptions#notification-filter.
        """
        return t.SubscriptionsListenRequestParams(
            notifications=t.SubscriptionFilter(
                resource_subscriptions=list(uris),
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=True,
            ),
            meta={},
        )

    def other_version(self, error: McpError) -> str | None:
        """The modern version to retry with after ``error``: for -32022
        (UnsupportedProtocolVersionError), the first version of its ``data.supported``
        we speak (made :attr:`modern_version`); None for any other error, or when the
        server lists none of ours (the caller gives up).

        Source: 2026-07-28/basic/versioning#protocol-version-negotiation.
        """
        if error.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(error.data, dict):
            return None
        supported = error.data.get("supported")
        listed = supported if isinstance(supported, list) else []
        for version in MODERN_VERSIONS:
            if version in listed:
                self.modern_version = version
                return version
        return None

    def discovered(self, result: t.DiscoverResult) -> None:
        """Take the server's ``server/discover`` result: the session is modern.

        Raises:
            LocalProtocolError: the server does not list our version (we do not go on
                with a server that says it does not speak it).

        Source: 2026-07-28/server/discover; 2026-07-28/basic/versioning.
        """
        if self.modern_version not in result.supported_versions:
            raise LocalProtocolError(
                f"the server speaks {', '.join(result.supported_versions)}, "
                f"not {self.modern_version}"
            )
        self.discover_result = result
        self.spoken = "modern"

    @property
    def server_info(self) -> t.Implementation | None:
        """The server's ``serverInfo`` (``initialize``) or ``_meta`` serverInfo
        (``server/discover``); None when neither came."""
        if self.initialize_result is not None:
            return self.initialize_result.server_info
        if self.discover_result is not None:
            info = (self.discover_result.meta or {}).get(SERVER_INFO_KEY)
            try:
                read: t.Implementation = structure(info, t.Implementation, "2026-07-28")
            except ConversionError:  # absent or malformed: it is for display only
                return None
            return read
        return None

    @property
    def server_capabilities(self) -> t.ServerCapabilities | None:
        """The server's capabilities, from ``initialize`` or ``server/discover``."""
        if self.initialize_result is not None:
            return self.initialize_result.capabilities
        if self.discover_result is not None:
            return self.discover_result.capabilities
        return None

    @property
    def instructions(self) -> str | None:
        """The server's instructions, from ``initialize`` or ``server/discover``."""
        done = self.initialize_result or self.discover_result
        return done.instructions if done is not None else None

    @property
    def negotiated_version(self) -> str | None:
        """The version the session speaks: ``initialize``'s answer, or our modern one."""
        if self.initialize_result is not None:
            return self.initialize_result.protocol_version
        return self.modern_version if self.spoken == "modern" else None

    # -- the handshake ---------------------------------------------------------------

    @property
    def capabilities(self) -> t.ClientCapabilities:
        """The capabilities we declare: one for each handler given, ``roots`` (with
        ``listChanged``) when roots were given.

        Source: 2025-06-18/client/sampling#capabilities.1,
        2025-06-18/client/elicitation#capabilities.1, 2025-06-18/client/roots#capabilities.1.
        """
        # Spec: 2025-06-18/client/sampling#capabilities.1
        # "Clients that support sampling MUST declare the `sampling` capability during
        # initialization:"
        # Spec: 2026-07-28/client/sampling#capabilities.1
        # "Clients that support sampling MUST declare the `sampling` capability in
        # `_meta.io.modelcontextprotocol/clientCapabilities` on each request:"
        # Spec: 2026-07-28/client/sampling#tools-in-sampling.1
        # "Clients MUST declare support for tool use via the `sampling.tools` capability to receive
        # tool-enabled sampling requests."
        # Spec: 2025-11-25/client/sampling#tools-in-sampling.1
        # "Clients MUST declare support for tool use via the `sampling.tools` capability to receive
        # tool-enabled sampling requests."
        # (the modern era writes these capabilities in every request's _meta)
        tools: dict[str, Any] | None = {} if self._sampling_tools else None
        sampling = (
            t.ClientCapabilitiesSampling(tools=tools)
            if "sampling/createMessage" in self._handlers
            else None
        )
        # Spec: 2025-06-18/client/elicitation#capabilities.1
        # "Clients that support elicitation MUST declare the `elicitation` capability during
        # initialization:"
        # Spec: 2026-07-28/client/elicitation#capabilities.1
        # "Clients that support elicitation MUST declare the `elicitation` capability in
        # `_meta.io.modelcontextprotocol/clientCapabilities` on each request:"
        # Spec: 2026-07-28/client/elicitation#capabilities.2
        # "Clients declaring the `elicitation` capability MUST support at least one mode (`form` or
        # `url`)."
        # Spec: 2025-11-25/client/elicitation#capabilities.2
        # "Clients declaring the `elicitation` capability MUST support at least one mode (`form` or
        # `url`)."
        # (an empty object declares form mode, which every elicitation handler answers)
        modes: dict[str, Any] = {"form": {}, "url": {}} if self._elicitation_url else {}
        elicitation = (
            t.ClientCapabilitiesElicitation(**modes)
            if "elicitation/create" in self._handlers
            else None
        )
        # Spec: 2025-06-18/client/roots#capabilities.1
        # "Clients that support roots MUST declare the `roots` capability during
        # initialization:"
        # Spec: 2026-07-28/client/roots#capabilities.1
        # "Clients that support roots MUST declare the `roots` capability in
        # `_meta.io.modelcontextprotocol/clientCapabilities` on each request:"
        roots = t.ClientCapabilitiesRoots(list_changed=True) if self._roots is not None else None
        return t.ClientCapabilities(sampling=sampling, elicitation=elicitation, roots=roots)

    def initialize_params(self) -> t.InitializeRequestParams:
        """The params of our ``initialize`` request.

        Source: 2025-06-18/basic/lifecycle#initialization.2.
        """
        # Spec: 2025-06-18/basic/lifecycle#initialization.2
        # "The client MUST initiate this phase by sending an `initialize` request containing:"
        return t.InitializeRequestParams(
            protocol_version=self.protocol_version,
            capabilities=self.capabilities,
            client_info=self.client_info,
        )

    def initialized(self, result: t.InitializeResult) -> Notification:
        """Take the server's answer to ``initialize``; return the notification to send.

        Source: 2025-06-18/basic/lifecycle#initialization.4.
        """
        self.initialize_result = result
        self.spoken = "legacy"
        # Spec: 2025-06-18/basic/lifecycle#initialization.4
        # "After successful initialization, the client MUST send an `initialized` notification to
        # indicate it is ready to begin normal operations:"
        return Notification(method="notifications/initialized")

    # -- what comes back ---------------------------------------------------------------

    def check_result(self, method: str, params: Any, result: Any) -> Any:
        """Check the result of our request ``method``; return it.

        ``tools/list``: the output schemas of its tools are remembered.  ``tools/call``:
        the result's ``structuredContent`` is checked against the tool's remembered
        ``outputSchema`` (when ``jsonschema`` is installed).

        Raises:
            OutputSchemaError: the structured result does not match (-32603).

        Source: 2025-06-18/server/tools#output-schema.2.
        """
        if method == "tools/list":
            self._output_schemas.remember(result.tools)
        elif method == "tools/call":
            self._output_schemas.check(params.name, result)
        return result

    def notified(self, notification: Notification) -> bool:
        """Take a server notification (the tool list changed: forget its schemas);
        False when the loop should drop it: a ``notifications/elicitation/complete``
        naming no URL-mode elicitation this client's handler took, or one it already
        heard completed."""
        if notification.method == "notifications/tools/list_changed":
            self._output_schemas.clear()  # re-list before results are checked again
        elif notification.method == "notifications/elicitation/complete":
            # Spec: 2025-11-25/client/elicitation#completion-notifications-for-url-mode-elicitation.4
            # "MUST ignore notifications referencing unknown or already-completed IDs."
            eid = notification.params.elicitation_id
            return self._url_elicitations.pop(eid, False) is None
        return True

    # -- the server's requests -------------------------------------------------------

    def handle(self, method: str, params: Any, now: float) -> Any:
        """Start answering the server's request ``method`` at time ``now`` (seconds).

        Returns what the handler returned, which may be awaitable (the loop awaits it);
        pass it to :meth:`finish`.

        Raises:
            McpError: -32603 past the method's rate limit; -32601 for a method this
                client does not take (the Connection refuses most of those itself);
                -32602 for a ``sampling/createMessage`` whose conversation breaks the
                rules of :func:`mcp_ref._sampling.check_sampling_messages`, or a URL-mode
                ``elicitation/create`` when URL mode was not declared or its ``url`` is not
                an absolute URL (scheme and host); or whatever error the handler raised.
        """
        if method == "ping":
            # Spec: 2025-06-18/basic/utilities/ping#behavior-requirements.1
            # "The receiver MUST respond promptly with an empty response:"
            return t.EmptyResult()
        if method == "roots/list" and self._roots is not None:
            return self._roots() if callable(self._roots) else self._roots
        if method not in self._handlers:
            raise McpError(METHOD_NOT_FOUND, f"method not found: {method}")
        handler, limit = self._handlers[method]
        if isinstance(params, t.CreateMessageRequestParams):
            try:
                check_sampling_messages(params.messages)
            except ValueError as exc:
                raise McpError(INVALID_PARAMS, f"sampling/createMessage: {exc}") from None
        # Spec: 2026-07-28/client/elicitation#elicitation-requests.4
        # "Clients MUST treat requests without a `mode` field as form mode."
        # Spec: 2025-11-25/client/elicitation#elicitation-requests.3
        # "Clients MUST treat requests without a `mode` field as form mode."
        # (the converter reads a request without ``mode`` as ElicitRequestFormParams)
        if method == "elicitation/create" and isinstance(params, t.ElicitRequestURLParams):
            # Spec: 2025-11-25/client/elicitation#error-handling.2
            # "Clients MUST return standard JSON-RPC errors for common failure cases:"
            if not self._elicitation_url:
                raise McpError(INVALID_PARAMS, "elicitation/create: URL mode was not declared")
            # Spec: 2026-07-28/client/elicitation#url-mode-elicitation-requests.2
            # "The `url` parameter MUST contain a valid URL."
            # Spec: 2025-11-25/client/elicitation#url-mode-elicitation-requests.2
            # "The `url` parameter MUST contain a valid URL."
            parts = urllib.parse.urlsplit(params.url)
            if not (parts.scheme and parts.netloc) or not params.url.isprintable():
                raise McpError(INVALID_PARAMS, f"elicitation/create: not a URL: {params.url!r}")
        if limit is not None:
            # Spec: 2025-06-18/client/sampling#security-considerations.4
            # "Clients SHOULD implement rate limiting"
            # Spec: 2025-06-18/client/elicitation#security-considerations.6
            # "Clients SHOULD implement rate limiting"
            take_or_refuse(self._buckets, limit, method, now)
        # Spec: 2025-06-18/client/sampling#error-handling.1
        # "Clients SHOULD return errors for common failure cases:"
        # (an McpError from the handler goes back to the server as the error)
        if isinstance(params, t.ElicitRequestURLParams) and params.elicitation_id is not None:
            self._url_elicitations[params.elicitation_id] = None  # its completion may come
            if len(self._url_elicitations) > MAX_URL_ELICITATIONS:
                del self._url_elicitations[next(iter(self._url_elicitations))]
        return handler(params)

    def finish(self, method: str, value: Any) -> Any:
        """The result to answer ``method`` with, from :meth:`handle`'s (awaited) value.

        Raises:
            ValueError: a roots callable returned a root that is not an absolute
                ``file://`` URI (the loop answers -32603).
        """
        if method == "roots/list":
            return t.ListRootsResult(roots=check_roots(value))
        return value

    # -- roots -------------------------------------------------------------------------

    def set_roots(self, roots: RootsArg) -> Notification:
        """Replace our roots; return the ``notifications/roots/list_changed`` to send.

        Raises:
            LocalProtocolError: the client was made without ``roots`` (the capability
                cannot be added after initialization; make it with ``roots=[]``).
            ValueError: a root is not an absolute ``file://`` URI.

        Source: 2025-06-18/client/roots#root-list-changes.1.
        """
        if self._roots is None or roots is None:
            raise LocalProtocolError(
                "this client did not declare the roots capability; open it with roots=[...]"
            )
        self._roots = _kept_roots(roots)
        # Spec: 2025-06-18/client/roots#root-list-changes.1
        # "When roots change, clients that support `listChanged` MUST send a notification:"
        return Notification(method="notifications/roots/list_changed")


def _kept_roots(roots: RootsArg) -> RootsArg:
    """``roots`` as the client keeps it: a list checked now (ValueError), or a callable
    (its lists are checked on each call, in :meth:`ClientCore.finish`) or None."""
    return roots if roots is None or callable(roots) else check_roots(roots)


# -- for loops that drive the Connection themselves (asyncio, blocking) ------------------


class ClientWire(ClientCore):
    """A :class:`ClientCore` with the :class:`~mcp_ref.Connection` it drives: the bytes
    of each message, and the events a loop must act on.

    A loop: write :meth:`send_request`'s bytes; feed what it reads to
    ``connection.receive_data`` (or ``receive_message``); then :meth:`drain` the events
    into its own dispatch and write the bytes it returns.  The dispatch acts on what
    only the loop can: an :data:`Outcome` (Response, ErrorResponse or RequestTimedOut)
    ends a request (:func:`result_of`); a Request is the server's (:meth:`handle`, :meth:`finish`,
    :meth:`reply`); ConnectionClosed ends the session.  Progress and notifications have
    reached their callbacks already.

    Args:
        connection: ``Connection(CLIENT, ...)``.
        on_notification: called (synchronously, while the loop drains) with each
            Notification the server sends; what it raises propagates from
            :meth:`next_event`.
        **options: as :class:`ClientCore`.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        on_notification: Callable[[Notification], object] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.connection = connection
        self.on_notification = on_notification
        self.closed: str | None = None
        """Why the session ended, or None while it is open."""
        self._out: list[bytes] = []
        self._on_progress: dict[RequestId, Callable[[Progress], object]] = {}
        """The progress callback of each request waiting for its answer."""

    def send_request(
        self,
        method: str,
        params: Any,
        *,
        now: float,
        timeout: Timeout,
        on_progress: Callable[[Progress], object] | None = None,
    ) -> tuple[RequestId, Any, bytes]:
        """Make request ``method``: returns (its id, its typed params, its bytes).

        Args:
            params: typed, a wire-form dict, or None.
            now: the loop's clock, in seconds (the one given to ``handle_timeout``).
            timeout: seconds, a RequestTimeout, None for none, or :data:`DEFAULT`
                (the connection's default).
            on_progress: called (synchronously, from :meth:`next_event`) with each
                Progress for this request, whose params then carry a progress token
                (:func:`with_progress_token`); what it raises propagates.

        Raises:
            SessionClosed: the session has ended.
            LocalProtocolError: the request breaks the protocol (nothing to write).
        """
        self.check_open()
        conn = self.connection
        rid = conn.next_request_id()
        params = typed_params(method, params)
        if on_progress is not None:
            params = with_progress_token(method, params, rid)
        kw: dict[str, Any] = {}
        if timeout is not DEFAULT:
            kw["timeout"] = as_timeout(timeout)
        data = conn.send(Request(id=rid, method=method, params=params), now=now, **kw)
        if on_progress is not None:
            self._on_progress[rid] = on_progress
        return rid, params, data

    def send_notification(self, method: str, params: Any = None) -> bytes:
        """The bytes of a notification (typed params, a wire-form dict, or None).

        Raises:
            SessionClosed: the session has ended.
            LocalProtocolError: it breaks the protocol.
        """
        self.check_open()
        note = Notification(method=method, params=typed_params(method, params))
        return self.connection.send(note)

    def cancel(self, rid: RequestId, method: str) -> bytes:
        """Stop waiting for request ``rid``: the ``notifications/cancelled`` to write
        (``b""``: nothing, as the answer already came, it was ``initialize`` or the
        session has ended).  The core forgets the request either way."""
        self._on_progress.pop(rid, None)
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        if method == "initialize" or self.connection.state is State.CLOSED:
            return b""
        note = Notification(
            method="notifications/cancelled",
            params=t.CancelledNotificationParams(request_id=rid, reason="cancelled by the client"),
        )
        try:
            return self.connection.send(note)
        except LocalProtocolError as exc:
            log.debug("could not cancel request %r: %s", rid, exc)
            return b""

    def next_event(self) -> Event | None:
        """The next event for the loop, or None when the connection needs more data.

        Done here: a protocol error's reply is queued (:meth:`data_to_send`); a fatal
        one, or end of input, sets :attr:`closed` and gives ConnectionClosed; a
        Progress goes to its request's callback, a Notification to
        :meth:`ClientCore.notified` and ``on_notification`` (one ``notified`` refuses
        is dropped).  Every other event comes out as the Connection made it.
        """
        conn = self.connection
        while True:
            try:
                event = conn.next_event()
            except RemoteProtocolError as exc:
                log.warning("protocol error from the server: %s", exc.message)
                if exc.event_hint is not None and conn.state is not State.CLOSED:
                    self._out.append(conn.send(exc.event_hint))
                if conn.state is State.CLOSED:
                    self.close(exc.message)
                    return ConnectionClosed()
                continue
            if conn.has_data_to_send:  # a batch's replies, after a RequestCancelled
                self._out.append(conn.data_to_send())
            if event is NEED_DATA:
                return None
            assert isinstance(event, Event)
            if isinstance(event, Outcome):
                if event.id is not None:  # (None: an error about no request of ours)
                    self._on_progress.pop(event.id, None)
            elif isinstance(event, Progress) and event.request_id in self._on_progress:
                self._on_progress[event.request_id](event)
            elif isinstance(event, Notification):
                if not self.notified(event):
                    continue  # (a completion of no elicitation of ours)
                if self.on_notification is not None:
                    self.on_notification(event)
            elif isinstance(event, ConnectionClosed):
                self.close("the server closed the connection")
            return event

    def drain(self, dispatch: Callable[[Event], object]) -> bytes:
        """Hand each event :meth:`next_event` has to ``dispatch``, in order; return the
        bytes to write then (:meth:`data_to_send`)."""
        while (event := self.next_event()) is not None:
            dispatch(event)
        return self.data_to_send()

    def data_to_send(self) -> bytes:
        """The bytes :meth:`next_event` queued (``b""``: none)."""
        data, self._out = b"".join(self._out), []
        return data

    def reply(self, request: Request, outcome: Any) -> bytes:
        """The bytes answering the server's ``request`` with ``outcome``: a result
        (from :meth:`finish`) or the exception raised on the way (McpError: that
        error; any other: -32603).  ``b""`` once the server cancelled it."""
        reply: Event
        if isinstance(outcome, McpError):
            reply = ErrorResponse(
                id=request.id, code=outcome.code, message=outcome.message, data=outcome.data
            )
        elif isinstance(outcome, BaseException):
            log.error("the %s handler failed", request.method, exc_info=outcome)
            reply = ErrorResponse(id=request.id, code=INTERNAL_ERROR, message="handler failed")
        else:
            reply = Response(id=request.id, result=outcome)
        try:
            return self.connection.send(reply)
        except LocalProtocolError as exc:
            log.error("invalid answer to %s: %s", request.method, exc)
            failed = ErrorResponse(id=request.id, code=INTERNAL_ERROR, message="invalid result")
            return self.connection.send(failed)

    def close(self, reason: str) -> None:
        """Mark the session ended (the first reason stays)."""
        if self.closed is None:
            self.closed = reason
        self._on_progress.clear()

    def check_open(self) -> None:
        """Raise :class:`SessionClosed` once the session has ended."""
        if self.closed is not None:
            raise SessionClosed(self.closed)
