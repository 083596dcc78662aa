"""What a connection accepts from its peer: each received message, checked in order.

Theory of operation
-------------------
``next_event`` (in :mod:`._connection`) hands every decoded message to
:meth:`ReceivePaths._handle`, which classifies its envelope and sends it down one path:
a request (method table, lifecycle, params, duplicate ids, progress token), a
notification (the same, plus cancellation and progress), or a response (matched to our
request, lifecycle, typed result; ``initialize``'s result fixes the version and the
capabilities).  A refusal raises :class:`RemoteProtocolError` with the reply to send,
and leaves the connection as it was.  An over-long message is still answered by the id
its first bytes show; a batch (2025-03-26) is handled item by item at once.
"""

from __future__ import annotations

from typing import Any

from . import _jsonrpc as rpc
from ._batch import BatchReplies
from ._conn_state import (
    _CANCELLED,
    _ERROR,
    _K_INITIALIZE,
    _K_RESPONSE,
    _NOTIFICATION,
    _PROGRESS,
    _REQUEST,
    ConnectionState,
    _structurer,
)
from ._convert import ConversionError
from ._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RemoteProtocolError,
)
from ._inflight import Incoming
from ._methods import BATCH_VERSIONS, NOTIFICATION, SUPPORTED_VERSIONS, MethodSpec
from ._state import CLIENT, RECEIVE, SERVER, Kind, State, describe_refusal, kind_of
from .events import (
    ErrorResponse,
    Event,
    Notification,
    Progress,
    ProgressDropped,
    Request,
    RequestCancelled,
    Response,
    UnexpectedResponse,
)

__all__ = ["ReceivePaths"]


class ReceivePaths(ConnectionState):
    """The receive half of :class:`~mcp_ref.Connection`."""

    def _too_long(self) -> Event | None:
        """A message over ``max_message_bytes`` was skipped: answer it by its id when its
        first bytes show one (a request gets -32600 with its id; a response to one of
        our requests fails that request now rather than at its timeout).

        Raises:
            RemoteProtocolError: for a request, or when no id can be read (id null).
        """
        message = f"message longer than {self.max_message_bytes} bytes"
        rid, is_request = rpc.peek(self._lines.too_long_prefix)
        if rid is not None and is_request:
            raise self._refuse(rid, INVALID_REQUEST, message)
        if rid is not None:
            out = self._inflight.get_outgoing(rid)
            if out is not None and out.method != "initialize":
                self._inflight.pop_outgoing(rid, "answered")
                return ErrorResponse(
                    id=rid,
                    code=INTERNAL_ERROR,
                    message=f"the response was dropped: {message}",
                    method=out.method,
                )
            return None  # a response we are not waiting for: nothing to do
        raise RemoteProtocolError(
            message,
            code=INVALID_REQUEST,
            event_hint=rpc.error_reply(None, INVALID_REQUEST, message),
        )

    def _split_batch(self, items: list[Any]) -> None:
        # Spec: 2025-06-18/basic#messages.1 (no batches from 2025-06-18 on)
        # "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification."
        if self.protocol_version not in BATCH_VERSIONS:
            raise RemoteProtocolError(
                f"JSON-RPC batches are not allowed in protocol version {self.protocol_version}",
                code=INVALID_REQUEST,
                event_hint=rpc.error_reply(None, INVALID_REQUEST, "batches are not supported"),
            )
        if not items:
            raise RemoteProtocolError(
                "empty batch",
                code=INVALID_REQUEST,
                event_hint=rpc.error_reply(None, INVALID_REQUEST, "empty batch"),
            )
        if len(items) > self._inflight.max_incoming:
            raise RemoteProtocolError(
                "batch too large",
                code=INVALID_REQUEST,
                event_hint=rpc.error_reply(None, INVALID_REQUEST, "batch too large"),
            )
        # Every item is handled now, in order; their events (and refusals, raised in
        # their turn) queue for next_event.  On a byte stream the replies they are owed
        # are counted, to go back as one array (see _batch); a message transport
        # (Streamable HTTP) assembles the replies to a batch body itself.
        replies = BatchReplies() if self.newline_framing else None
        for item in items:
            try:
                event = self._handle(item)
            except RemoteProtocolError as exc:
                if exc.event_hint is not None and replies is not None:
                    replies.owed += 1
                    self._note_refusal(exc.event_hint, replies)
                self._events.append(exc)
                continue
            if event is None:
                continue
            if type(event) is Request and replies is not None:
                replies.owed += 1
                self._batch_of[event.id] = replies
            self._events.append(event)

    def _handle(self, obj: Any) -> Event | None:
        try:
            kind, rid, method, payload = rpc.classify(obj)
        except RemoteProtocolError as exc:
            if exc.event_hint is not None:
                # Its reply may carry the id of a request of ours in flight: a refusal.
                self._note_refusal(exc.event_hint, None)
            raise
        if kind == _REQUEST:
            return self._receive_request(rid, method, payload)
        if kind == _NOTIFICATION:
            return self._receive_notification(method, payload)
        return self._receive_response(kind, rid, payload, obj)

    def _refuse(self, rid: Any, code: int, message: str) -> RemoteProtocolError:
        hint = rpc.error_reply(rid, code, message)
        self._note_refusal(hint, None)
        return RemoteProtocolError(message, code=code, event_hint=hint, request_id=rid)

    def _plan_request(self, rid: Any, method: str) -> tuple[MethodSpec, Kind]:
        """Decide, once per method until the version or capabilities change, whether the
        peer may send us this request: the method table, then the capabilities."""
        spec = self._lookup(method, sender=self.their_role)
        if spec is None or spec.kind == NOTIFICATION:
            raise self._refuse(rid, METHOD_NOT_FOUND, f"method not found: {method}")
        k = kind_of(method, is_request=True)
        if self._table.get((self.state, RECEIVE, k)) is None:
            raise self._refuse(
                rid, INVALID_REQUEST, describe_refusal(self.our_role, self.state, RECEIVE, k)
            )
        # Spec: 2025-06-18/basic/lifecycle#error-handling.1 (capability not negotiated)
        # "Implementations SHOULD be prepared to handle these error cases:"
        # Spec: 2025-06-18/client/roots#error-handling.1 (a client without roots: -32601)
        # "Clients SHOULD return standard JSON-RPC errors for common failure cases:"
        if not self._capability_ok(spec):
            raise self._refuse(
                rid,
                METHOD_NOT_FOUND,
                f"method not available: {method} needs the "
                f"{spec.capability_of.value if spec.capability_of else ''} capability "
                f"{'.'.join(spec.capability)}, which was not negotiated",
            )
        plan = self._request_plans[method] = (spec, k)
        return plan

    def _receive_request(self, rid: Any, method: str, payload: Any) -> Event:
        plan = self._request_plans.get(method)
        spec, k = plan if plan is not None else self._plan_request(rid, method)
        new_state = self._table.get((self.state, RECEIVE, k))
        if new_state is None:
            raise self._refuse(
                rid, INVALID_REQUEST, describe_refusal(self.our_role, self.state, RECEIVE, k)
            )
        inflight = self._inflight
        if inflight.is_incoming_known(rid):
            raise self._refuse(rid, INVALID_REQUEST, f"request id {rid!r} was already used")
        if len(inflight.incoming) >= inflight.max_incoming:
            raise self._refuse(rid, INTERNAL_ERROR, "too many requests in flight")
        try:
            # Spec: 2025-06-18/client/sampling#security-considerations.2
            # "Both parties SHOULD validate message content"
            # Params are checked against the schema; sampling messages (role, content
            # blocks) included.  A malformed one is refused with -32602.
            params = self._structure_params(spec, payload)
        except ConversionError as exc:
            raise self._refuse(rid, INVALID_PARAMS, f"invalid params for {method}: {exc}") from None
        token = None
        meta = getattr(params, "meta", None)
        if meta is not None:
            token = meta.get("progressToken")
            if token is not None:
                # Spec: 2025-06-18/basic/utilities/progress#progress-flow.1
                # "Progress tokens MUST be a string or integer value"
                if not rpc.valid_id(token):
                    raise self._refuse(
                        rid, INVALID_PARAMS, "progressToken must be a string or an integer"
                    )
                # Spec: 2025-06-18/basic/utilities/progress#progress-flow.2
                # "Progress tokens can be chosen by the sender using any means, but MUST be unique
                # across all active requests."
                if inflight.incoming_token_in_use(token):
                    raise self._refuse(
                        rid, INVALID_PARAMS, f"progress token {token!r} is already in use"
                    )
        if k is _K_INITIALIZE:
            self._init_id = rid
            self.requested_version = params.protocol_version
            self.capabilities[CLIENT] = params.capabilities
            self.peer_info = params.client_info
            self._forget_plans()
        inflight.add_incoming(Incoming(id=rid, method=method, progress_token=token))
        self.state = new_state
        return Request(id=rid, method=method, params=params)

    def _receive_notification(self, method: str, payload: Any) -> Event | None:
        # Spec: 2025-06-18/basic#notifications.1
        # "The receiver MUST NOT send a response."
        # Every failure below raises without an event_hint: no response to a notification.
        plan = self._notification_plans.get(method)
        if plan is None:
            spec = self._lookup(method, sender=self.their_role)
            if spec is None or spec.kind != NOTIFICATION:
                raise RemoteProtocolError(f"unknown notification: {method}", code=METHOD_NOT_FOUND)
            k = kind_of(method, is_request=False)
            plan = self._notification_plans[method] = (spec, k, _structurer(spec.params_type))
        spec, k, structure_params = plan
        new_state = self._table.get((self.state, RECEIVE, k))
        if new_state is None:
            raise RemoteProtocolError(
                describe_refusal(self.our_role, self.state, RECEIVE, k), code=INVALID_REQUEST
            )
        # A notification of a capability the peer did not declare breaks
        # 2025-06-18/basic/lifecycle#operation.1 on the peer's side, but it asks nothing
        # of us: it is delivered (dropping a log line helps no one).  We never send one
        # (see _send_notification), and requests of such capabilities are refused.
        try:
            if payload is None:
                params = self._structure_params(spec, None)  # None, or raises
            else:
                params = structure_params(payload)
        except ConversionError as exc:
            raise RemoteProtocolError(
                f"invalid params for {method}: {exc}", code=INVALID_PARAMS
            ) from None
        self.state = new_state
        if method == _CANCELLED:
            return self._receive_cancel(params)
        if method == _PROGRESS:
            return self._receive_progress(params)
        return Notification(method=method, params=params)

    def _receive_cancel(self, params: Any) -> Event | None:
        # Spec: 2025-06-18/basic/utilities/cancellation#error-handling.1
        # "Invalid cancellation notifications SHOULD be ignored:"
        # Unknown, finished or absent ids are ignored below; one with params of the
        # wrong shape never gets here (RemoteProtocolError without a reply, above).
        rid = params.request_id
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        # Only a server receives the client's initialize; ids of requests going the
        # other way may equal it and are cancellable.
        if self.our_role is SERVER and rid == self._init_id and type(rid) is type(self._init_id):
            return None
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.4
        # "Receivers MAY ignore cancellation notifications if:"
        # Unknown or already answered requests: ignore the notification.
        req = self._inflight.pop_incoming(rid, "cancelled")
        if req is None:
            return None
        replies = self._batch_of.pop(rid, None)
        if replies is not None:
            array = replies.drop()  # no reply is owed for it any more
            if array:
                self._outbox.append(array)
        return RequestCancelled(id=rid, reason=params.reason)

    def _receive_progress(self, params: Any) -> Event:
        token = params.progress_token
        out = self._inflight.outgoing_for_token(token)
        # Spec: 2025-06-18/basic/utilities/progress#behavior-requirements.1
        # "Progress notifications MUST only reference tokens that:"
        if out is None:
            return ProgressDropped(progress_token=token, reason="no active request has this token")
        # Spec: 2025-06-18/basic/utilities/progress#progress-flow.4
        # "The `progress` value MUST increase with each notification, even if the total is unknown."
        if out.last_progress is not None and not params.progress > out.last_progress:
            return ProgressDropped(
                progress_token=token,
                reason=f"progress {params.progress} does not increase past {out.last_progress}",
            )
        out.last_progress = params.progress
        out.progressed = True
        return Progress(
            request_id=out.id,
            progress_token=token,
            progress=params.progress,
            total=params.total,
            message=params.message,
        )

    def _receive_response(self, kind: int, rid: Any, payload: Any, obj: Any) -> Event | None:
        inflight = self._inflight
        is_error = kind == _ERROR
        if rid is None:
            # The peer could not read one of our messages.
            return ErrorResponse(
                id=None, code=payload["code"], message=payload["message"], data=payload.get("data")
            )
        out = inflight.outgoing.get(rid)
        if out is None:
            if inflight.outgoing_finished(rid) in ("cancelled", "timed out"):
                # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.5
                # "The sender of the cancellation notification SHOULD ignore any response to the
                # request that arrives afterward"
                # Spec: 2025-06-18/basic/utilities/cancellation#timing-considerations.1
                # "Both parties MUST handle these race conditions gracefully:"
                return None  # a late answer to a request we gave up on: dropped
            return UnexpectedResponse(id=rid, message=obj)
        method = out.method
        answers_init = method == "initialize"
        k = (
            kind_of(None, is_request=False, answers_initialize=True, is_error=is_error)
            if answers_init
            else _K_RESPONSE
        )
        new_state = self._table.get((self.state, RECEIVE, k))
        if new_state is None:
            raise RemoteProtocolError(
                describe_refusal(self.our_role, self.state, RECEIVE, k), code=INVALID_REQUEST
            )
        inflight.pop_outgoing(rid, "answered")
        if is_error:
            self.state = new_state
            return ErrorResponse(
                id=rid,
                code=payload["code"],
                message=payload["message"],
                data=payload.get("data"),
                method=method,
            )
        try:
            # Spec: 2025-06-18/client/sampling#security-considerations.2 (results too)
            # "Both parties SHOULD validate message content"
            result = out.structure_result(payload)
        except ConversionError as exc:
            self.state = new_state if not answers_init else State.PRE_INIT
            return ErrorResponse(
                id=rid,
                code=INTERNAL_ERROR,
                message=f"invalid result from peer for {method}: {exc}",
                data={"result": payload},
                method=method,
            )
        if answers_init:
            version = result.protocol_version
            if version not in SUPPORTED_VERSIONS:
                # Spec: 2025-06-18/basic/lifecycle#version-negotiation.6
                # "If the client does not support the version in the server's response, it SHOULD
                # disconnect."
                # Spec: 2025-06-18/basic/lifecycle#error-handling.1 (version mismatch)
                # "Implementations SHOULD be prepared to handle these error cases:"
                self.state = State.CLOSED
                raise RemoteProtocolError(
                    f"server answered protocol version {version!r}, which mcp-ref does not "
                    f"support ({', '.join(SUPPORTED_VERSIONS)}); disconnect",
                    code=INVALID_PARAMS,
                )
            self.protocol_version = version
            self.capabilities[SERVER] = result.capabilities
            self.peer_info = result.server_info
            self.instructions = result.instructions
            self._forget_plans()
        self.state = new_state
        return Response(id=rid, result=result, method=method)
