"""The modern era's steps of a :class:`~mcp_ref.Connection` (2026-07-28).

Theory of operation
-------------------
A connection speaks one era with its peer, decided once (2026-07-28/basic/versioning):
the handshake era of the four revisions negotiated by ``initialize``, or the modern
era, in which every request names its version, client and capabilities in
``params._meta`` and the server judges each request alone.  The connection keeps its
handshake steps on its hot path and hands what differs in the modern era to one
:class:`ModernEra` object:

* **a server reading a request** (:meth:`ModernEra.read_request`), in order: the
  modern lifecycle table (:mod:`mcp_ref._state_modern`; ``initialize`` and ``ping`` are
  refused by kind, -32600), the request's ``_meta`` (:func:`mcp_ref._modern.read_request_meta`:
  -32602 when malformed, -32022 with the supported versions), the method table in the
  request's own version (-32601), then its params, converted as that revision reads
  them (-32602).  The request's :class:`~mcp_ref._modern.RequestContext` travels on the
  :class:`~mcp_ref.events.Request` event as ``context``;
* **a server writing a result** (:meth:`ModernEra.result_json`): every result carries
  ``resultType``.  The connection writes ``"complete"`` when the application left it
  unset (it is a rule of every result, so it lives here, not in each handler), refuses
  another value on a complete result, and checks an
  :class:`~mcp_ref.types.InputRequiredResult`: only on ``tools/call``, ``prompts/get``
  and ``resources/read``, with ``inputRequests`` or ``requestState``, and asking only
  for what the request's client capabilities declare.  Fields 2026-07-28 requires
  (``ttlMs`` and ``cacheScope`` on the cacheable results) must be set;
* **a client writing a request** (:meth:`ModernEra.request_params`): the ``_meta``
  keys of :func:`mcp_ref._modern.request_meta`, built once when the connection is
  opened; a key the application put in the params' own ``_meta`` wins (a per-request
  ``logLevel`` or narrower capabilities);
* **a client reading a result** (:meth:`ModernEra.result_reader`): by its
  ``resultType``, an absent one read as ``"complete"``; ``"input_required"`` (on the
  three methods that allow it) gives an :class:`~mcp_ref.types.InputRequiredResult`
  in the :class:`~mcp_ref.events.Response`, for the client core to answer and retry;
  anything else is an invalid result (the connection answers it like any unusable
  result: an ``ErrorResponse`` -32603 for the request).

Nothing here does I/O or keeps a clock.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from . import _jsonrpc as rpc
from . import types as t
from ._convert import ConversionError, structure_fn, unstructure_fn
from ._errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN_ERROR_CODES,
    RESOURCE_NOT_FOUND,
    URL_ELICITATION_REQUIRED,
    LocalProtocolError,
    RemoteProtocolError,
)
from ._methods import REQUEST, MethodSpec, lookup
from ._modern import (
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SUBSCRIPTION_ID_KEY,
    RequestContext,
    read_request_meta,
    request_meta,
    require_capabilities,
)
from ._revisions import fields_in, required_in
from ._state import CLIENT, RECEIVE, TRANSITIONS, Direction, Kind, Role, State, kind_of
from ._state_modern import MODERN_TRANSITIONS, describe_modern_refusal
from ._versions import SUPPORTED_VERSIONS
from .events import ErrorResponse

_Transitions = dict[tuple[State, Direction, Kind], State]  # a lifecycle table

__all__ = [
    "INPUT_REQUIRED_METHODS",
    "LEGACY",
    "MODERN",
    "ModernEra",
    "is_modern_request",
    "opening",
]

MODERN: Final = "modern"
"""The era of per-request ``_meta`` (2026-07-28 on)."""
LEGACY: Final = "legacy"
"""The handshake era (``initialize``; 2024-11-05 to 2025-11-25)."""

INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The requests a server may answer with ``input_required`` (2026-07-28/basic/patterns/mrtr)."""

_RETIRED: Final = frozenset({RESOURCE_NOT_FOUND, URL_ELICITATION_REQUIRED})
"""Codes of earlier revisions that 2026-07-28 implementations must not emit."""
_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The log levels, least severe first (2026-07-28/server/utilities/logging#log-levels)."""

_NEEDS: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
"""The client capability each kind of input request needs."""


def input_capabilities(requests: Iterable[Any]) -> dict[str, Any]:
    """The client capabilities (a ``ClientCapabilities``-shaped JSON object, as
    :func:`~mcp_ref._modern.require_capabilities` takes) that typed input requests
    need: ``elicitation`` (``elicitation.url`` for a URL-mode one), ``sampling``
    (``sampling.tools`` for one offering tools), ``roots``.

    Raises:
        KeyError: a request that is not an input request.

    Source: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.12;
    2026-07-28/client/elicitation#capabilities.3; client/sampling#tools-in-sampling.2.
    """
    needed: dict[str, Any] = {}
    for request in requests:
        need = needed.setdefault(_NEEDS[request.method], {})
        # Spec: 2026-07-28/client/elicitation#capabilities.3
        # "Servers MUST NOT send elicitation requests with modes that are not supported by
        # the client."
        if isinstance(request.params, t.ElicitRequestURLParams):
            need["url"] = {}
        # Spec: 2026-07-28/client/sampling#tools-in-sampling.2
        # "Servers MUST NOT send tool-enabled sampling requests to Clients that have not
        # declared support for tool use via the `sampling.tools` capability."
        if isinstance(request.params, t.CreateMessageRequestParams) and request.params.tools:
            need["tools"] = {}
    return needed


def is_modern_request(method: str, params: Any) -> bool:
    """Whether a request opens the modern era: not ``initialize``, and its
    ``params._meta`` names a protocol version (whatever its value: a bad one is
    answered in the modern era's words, -32602 or -32022).

    Source: 2026-07-28/basic/versioning (a dual-era server "selects its behavior from
    how the client opens").
    """
    if method == "initialize" or type(params) is not dict:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and PROTOCOL_VERSION_KEY in meta


@functools.cache
def _required_fields(cls: Any, revision: str) -> tuple[str, ...]:
    """The fields of ``cls`` that ``revision`` requires, ``result_type`` aside (the
    connection writes it)."""
    return tuple(
        f.name
        for f in fields_in(cls, revision)
        if f.name != "result_type" and required_in(f, revision)
    )


class ModernEra:
    """The modern era's part of one connection.

    Args:
        role: our role.
        protocol_version: a client's version for every request it sends (one of
            :data:`~mcp_ref._modern.MODERN_VERSIONS`, else ValueError; None: the newest).
        client_info: a client's ``Implementation`` for every request's ``_meta`` (None:
            not sent, which the spec allows but advises against).
        capabilities: a client's ``ClientCapabilities`` (None: declares none).

    Attributes:
        transitions: the modern lifecycle table of ``role``.
        supported: the modern versions a server serves.
        advertised: what a server lists in -32022's ``data.supported``: its modern
            versions, then the handshake ones (a dual-era server).
    """

    def __init__(
        self,
        role: Role,
        protocol_version: str | None = None,
        client_info: t.Implementation | None = None,
        capabilities: t.ClientCapabilities | None = None,
    ) -> None:
        protocol_version = protocol_version or MODERN_VERSIONS[0]
        if protocol_version not in MODERN_VERSIONS:
            raise ValueError(
                f"{protocol_version!r} is not a modern protocol version; "
                f"use one of {', '.join(MODERN_VERSIONS)}"
            )
        self.role: Final = role
        self.protocol_version: Final = protocol_version
        self.transitions: Final = MODERN_TRANSITIONS[role]
        self.supported: Sequence[str] = MODERN_VERSIONS
        self.advertised: Sequence[str] = MODERN_VERSIONS + SUPPORTED_VERSIONS
        self._meta: Final = request_meta(
            capabilities=capabilities or t.ClientCapabilities(),
            client_info=client_info,
            protocol_version=protocol_version,
        )

    # -- a server reading a request --------------------------------------------------

    def structurer(self, tp: Any) -> Callable[[Any], Any]:
        """The structure function of ``tp`` as this era's revision reads it (the
        notifications a modern peer sends)."""
        return structure_fn(tp, self.protocol_version)

    def read_request(
        self, state: State, rid: Any, method: str, payload: Any
    ) -> tuple[MethodSpec, State, Any, RequestContext]:
        """Judge one received request: ``(its row, the next state, typed params, its
        context)``.

        Raises:
            RemoteProtocolError: with the ready reply in ``event_hint``: -32600 (the
                table: ``initialize``, ``ping``, or a request a client received), -32602
                (``_meta`` malformed; params invalid), -32022 (version not served),
                -32601 (no such method in the request's version).
        """
        kind = kind_of(method, is_request=True)
        new_state = self.transitions.get((state, RECEIVE, kind))
        if new_state is None:
            why = describe_modern_refusal(self.role, state, RECEIVE, kind)
            raise rpc.refuse(why, INVALID_REQUEST, rid)
        # Spec: 2026-07-28/basic/index#_meta.3
        # "A request missing any required field is malformed; the server MUST reject it
        # with JSON-RPC error code `-32602` (Invalid params)."
        context = read_request_meta(
            payload, request_id=rid, supported=self.supported, advertised=self.advertised
        )
        if type(context) is ErrorResponse:
            raise RemoteProtocolError(
                context.message, code=context.code, event_hint=context, request_id=rid
            )
        assert isinstance(context, RequestContext)
        version = context.protocol_version
        spec = lookup(method, CLIENT, REQUEST, version)
        if spec is None:
            raise rpc.refuse(f"method not found in {version}: {method}", METHOD_NOT_FOUND, rid)
        try:
            params = structure_fn(spec.params_type, version)(payload)
        except ConversionError as exc:
            raise rpc.refuse(f"invalid params for {method}: {exc}", INVALID_PARAMS, rid) from None
        return spec, new_state, params, context

    # -- a server writing a result ---------------------------------------------------

    def result_json(
        self, spec: MethodSpec, result: Any, context: RequestContext, rid: Any
    ) -> dict[str, Any]:
        """The JSON of a result to the modern request ``rid`` (of ``spec``, sent with
        ``context``), with its ``resultType``.

        Raises:
            LocalProtocolError: a result of the wrong class, a ``resultType`` that
                disagrees with the class, an ``input_required`` result the method or
                the client's capabilities do not allow, or one asking for nothing;
                a field 2026-07-28 requires left unset.
        """
        method = spec.method
        if type(result) is t.InputRequiredResult:
            self._check_input_required(method, result, context, rid)
            body: dict[str, Any] = unstructure_fn(t.InputRequiredResult)(result)
            return body
        if not isinstance(result, spec.result_type):
            raise LocalProtocolError(
                f"the result of {method} must be {spec.result_type.__name__} or, where "
                f"allowed, InputRequiredResult; not {type(result).__name__}"
            )
        # Spec: 2026-07-28/basic/index#result-responses.4
        # "The `result` MUST include a `resultType` field to indicate the type of the result."
        if result.result_type not in (None, "complete"):
            raise LocalProtocolError(
                f"a {type(result).__name__} is complete: resultType must be 'complete', "
                f"not {result.result_type!r}"
            )
        cls: Any = type(result)
        unset = [
            name
            for name in _required_fields(cls, context.protocol_version)
            if getattr(result, name) is None
        ]
        if unset:
            raise LocalProtocolError(
                f"{context.protocol_version} requires {', '.join(unset)} in the result of {method}"
            )
        body = unstructure_fn(cls)(result)
        body["resultType"] = "complete"
        return body

    def _check_input_required(
        self, method: str, result: t.InputRequiredResult, context: RequestContext, rid: Any
    ) -> None:
        # Spec: 2026-07-28/basic/patterns/mrtr#supported-requests.2
        # "Servers MUST NOT send `InputRequiredResult` responses on any other client requests."
        if method not in INPUT_REQUIRED_METHODS:
            raise LocalProtocolError(f"{method} cannot be answered with input_required")
        if result.result_type != "input_required":
            raise LocalProtocolError(
                f"an InputRequiredResult's resultType is 'input_required', not {result.result_type!r}"
            )
        # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.11
        # "Servers MUST include at least one of `inputRequests` or `requestState` in every
        # `InputRequiredResult` response."
        if not result.input_requests and result.request_state is None:
            raise LocalProtocolError("an InputRequiredResult needs inputRequests or requestState")
        # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.12
        # "Servers MUST NOT send an `inputRequests` that the client has not declared support
        # for in its capabilities."
        needed = input_capabilities((result.input_requests or {}).values())
        refusal = require_capabilities(context, needed, request_id=rid)
        if refusal is not None:
            raise LocalProtocolError(
                f"input_required asks for what the client did not declare: {refusal.message}"
            )

    def check_server_notification(
        self, method: str, params: Any, incoming: Mapping[Any, Any]
    ) -> None:
        """Refuse a notification a modern server may not send now: a cancellation that
        names no ``subscriptions/listen`` in flight, a log message no request in flight
        asked for at that level.  ``incoming`` maps the ids of the requests in flight to
        their records (``method``, ``context``).

        Raises:
            LocalProtocolError: naming the rule.
        """
        if method == "notifications/cancelled":
            # Spec: 2026-07-28/basic/patterns/cancellation#behavior-requirements.2
            # "Server-sent cancellation notifications MUST reference a `subscriptions/listen`
            # request, to terminate that subscription stream"
            # Spec: 2026-07-28/basic/patterns/cancellation#cancellation.3
            # "Servers MUST NOT send `notifications/cancelled` for any other purpose."
            req = incoming.get(params.request_id)
            if req is None or req.method != "subscriptions/listen":
                raise LocalProtocolError(
                    "a server cancels only a subscriptions/listen in flight, "
                    f"not {params.request_id!r}"
                )
        elif method == "notifications/message":
            # Spec: 2026-07-28/server/utilities/logging#per-request-log-level.1
            # "The server MUST NOT emit `notifications/message` for a request that does not
            # include this field."
            rank = _LEVELS.index(params.level)
            if not any(
                r.context is not None
                and r.context.log_level is not None
                and rank >= _LEVELS.index(r.context.log_level)
                for r in incoming.values()
            ):
                raise LocalProtocolError(
                    f"no request in flight asked for {params.level} log messages "
                    "(io.modelcontextprotocol/logLevel in its _meta)"
                )

    @staticmethod
    def of_ended_subscription(params: Any, outgoing: Mapping[Any, Any]) -> bool:
        """Whether a notification the server sent belongs to a subscription of ours that
        is not open: its ``_meta`` names a subscription id, and no
        ``subscriptions/listen`` of ours with that id (same type, same value) is in
        flight in ``outgoing`` (we cancelled it, or it was answered).  The connection
        drops such a notification: it is a late one of a stream that ended.

        Source: 2026-07-28/basic/patterns/subscriptions#receiving-notifications.
        """
        meta = getattr(params, "meta", None)
        if not meta or SUBSCRIPTION_ID_KEY not in meta:
            return False  # not a subscription's notification
        # Spec: 2026-07-28/basic/patterns/subscriptions#receiving-notifications.1
        # "On stdio, where all messages share a single channel, clients MUST use this field to
        # correlate notifications with their originating subscription."
        # Spec: 2026-07-28/basic/transports/stdio#receiving-messages.1
        # "Clients MUST correlate these using the `io.modelcontextprotocol/subscriptionId` field in
        # `_meta`; see [`SubscriptionsListenRequest`][subscriptions-listen-request]."
        sid = meta[SUBSCRIPTION_ID_KEY]
        listen = outgoing.get(sid) if isinstance(sid, str | int) else None
        if listen is None or listen.method != "subscriptions/listen":
            return True
        return type(listen.id) is not type(sid)

    @staticmethod
    def check_error_code(code: int) -> None:
        """Refuse an error code a modern peer may not send: the retired -32002 and
        -32042, and a code of the reserved -32020..-32099 that 2026-07-28 does not define.

        Raises:
            LocalProtocolError: naming the code.
        """
        # Spec: 2026-07-28/basic/index#error-codes.3
        # "Implementations MUST NOT emit any code from this sub-range that is not defined by
        # this specification"
        # Spec: 2026-07-28/basic/index#error-codes.4
        # "Implementations of this protocol version MUST NOT emit these codes:"
        if code in _RETIRED or (-32099 <= code <= -32020 and code not in MODERN_ERROR_CODES):
            hint = " (resource not found is -32602 now)" if code == RESOURCE_NOT_FOUND else ""
            raise LocalProtocolError(f"error code {code} is not for the modern era{hint}")

    # -- a client writing a request ---------------------------------------------------

    def request_params(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """A request's params JSON with the modern ``_meta`` keys added (a new dict;
        keys already in the params' ``_meta`` are kept).

        Source: 2026-07-28/basic/index#_meta.2 (the required fields on every request).
        """
        # Spec: 2026-07-28/basic/index#_meta.2
        # "fields marked as required MUST be included on every request."
        body = dict(params) if params else {}
        own = body.get("_meta")
        body["_meta"] = {**self._meta, **own} if own else dict(self._meta)
        return body

    # -- a client reading a result ----------------------------------------------------

    def result_reader(self, spec: MethodSpec) -> Callable[[Any], Any]:
        """The function that turns the ``result`` JSON of ``spec``'s request into a
        typed result: ``spec.result_type``, or an :class:`~mcp_ref.types.InputRequiredResult`.

        The function raises :class:`~mcp_ref._convert.ConversionError` for an invalid
        result: a shape the revision does not allow, an unknown ``resultType``,
        ``input_required`` on a method that does not allow it.
        """
        method, version = spec.method, self.protocol_version
        complete = structure_fn(spec.result_type, version)
        input_required = structure_fn(t.InputRequiredResult, version)
        may_ask = method in INPUT_REQUIRED_METHODS

        def read(payload: Any) -> Any:
            if type(payload) is not dict:
                return complete(payload)  # raises, naming what it expected
            kind = payload.get("resultType")
            if kind is None:
                # Spec: 2026-07-28/basic/index#resulttype.4
                # "clients MUST treat an absent `resultType` as `"complete"`."
                return complete({**payload, "resultType": "complete"})
            # Spec: 2026-07-28/basic/index#resulttype.2
            # "The set of supported `ResultType` values MUST be created from the set defined in the
            # core protocol and include any additional values of supported extensions that are
            # advertised via capabilities."
            # (the core's two values; mcp_ref supports no extension that adds one)
            if kind == "complete":
                return complete(payload)
            if kind == "input_required" and may_ask:
                # Spec: 2026-07-28/client/elicitation#elicitation-requests.2
                # "All elicitation requests MUST include the following parameters:"
                # Spec: 2026-07-28/client/elicitation#form-mode-elicitation-requests.1
                # "Form mode elicitation requests MUST either specify `mode: 'form'` or omit the
                # `mode` field, and include these additional parameters:"
                # Spec: 2026-07-28/client/elicitation#url-mode-elicitation-requests.1
                # "URL mode elicitation requests MUST specify `mode: 'url'`, a `message`, and
                # include these additional parameters:"
                # (each input request is read strictly by its schema: an elicitation/create
                # without its required parameters makes the result invalid)
                return input_required(payload)
            # Spec: 2026-07-28/basic/index#resulttype.3
            # "A `resultType` of any value unrecognized by the client MUST be considered invalid."
            raise ConversionError(f"not a resultType of {method} in {version}: {kind!r}")

        return read


def opening(role: Role, era: str | None) -> tuple[str | None, _Transitions, State]:
    """A new connection's era, lifecycle table and first state.

    ``era`` is ``"modern"``, ``"legacy"`` or None: a client's None is legacy (it opens
    the handshake unless told otherwise); a server's stays None, dual-era, until the
    peer's first request decides it.  A modern client is operating from the start;
    every other connection starts in PRE_INIT.  ValueError for any other ``era``.
    """
    if era is None and role is CLIENT:
        era = LEGACY
    if era == MODERN:
        start = State.OPERATING if role is CLIENT else State.PRE_INIT
        return MODERN, MODERN_TRANSITIONS[role], start
    if era is None or era == LEGACY:
        return (None if era is None else LEGACY), TRANSITIONS[role], State.PRE_INIT
    raise ValueError(f"era must be 'modern', 'legacy' or None, not {era!r}")
