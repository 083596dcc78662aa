"""What a connection lets us send: each outgoing event, checked as strictly as a
received one, then serialized.

Theory of operation
-------------------
``send`` (in :mod:`._connection`) hands each event to its path here: a request (method
table, our capability to ask it, lifecycle, typed params, id and progress token not in
use, timeout), a notification (the same; cancelling and progress have their own rules),
a response or an error response (it must answer a request we received and have not
answered; the peer may have cancelled it, and then nothing is sent).  Each path checks
everything and serializes before it changes any state, so a refusal
(:class:`LocalProtocolError`) leaves the connection as it was.  Replies that belong to a
batch are held and sent as one array (:mod:`._batch`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _jsonrpc as rpc
from ._conn_state import (
    _CANCELLED,
    _DEFAULT,
    _K_INIT_ERROR,
    _K_INIT_RESULT,
    _K_INITIALIZE,
    _K_RESPONSE,
    _PROGRESS,
    ConnectionState,
    _structurer,
    _unstructurer,
)
from ._errors import INVALID_PARAMS, METHOD_NOT_FOUND, LocalProtocolError
from ._inflight import Incoming, Outgoing, RequestTimeout
from ._methods import METHODS, NOTIFICATION, SUPPORTED_VERSIONS, MethodSpec
from ._state import CLIENT, SEND, SERVER, Kind, check_send, describe_refusal, kind_of, next_state
from .events import ErrorResponse, Notification, Request, Response

__all__ = ["SendPaths"]


class SendPaths(ConnectionState):
    """The send half of :class:`~mcp_ref.Connection`."""

    def _encode(self, message: dict[str, Any], *, bounded: bool = True) -> bytes:
        """Serialize a message we send (framed when ``newline_framing``).

        Raises:
            LocalProtocolError: not serializable, or (when ``bounded``) longer than
                ``max_message_bytes``.
        """
        try:
            # Spec: 2025-06-18/basic/transports#stdio.1
            # "Messages are delimited by newlines, and MUST NOT contain embedded newlines."
            # (JSON text holds no raw newline: the framed line is one line by construction)
            data = rpc.encode(message, newline=self.newline_framing)
        except ValueError as exc:
            raise LocalProtocolError(f"cannot serialize the message: {exc}") from None
        if bounded and len(data) - self.newline_framing > self.max_message_bytes:
            raise LocalProtocolError(
                f"message of {len(data)} bytes exceeds the limit of {self.max_message_bytes}"
            )
        return data

    def _check_params(self, spec: MethodSpec, params: Any) -> dict[str, Any] | None:
        if params is None:
            if spec.params_required:
                raise LocalProtocolError(f"{spec.method} requires params", code=INVALID_PARAMS)
            return None
        if not isinstance(params, spec.params_type):
            raise LocalProtocolError(
                f"{spec.method} params must be {spec.params_type.__name__}, "
                f"not {type(params).__name__}",
                code=INVALID_PARAMS,
            )
        data: dict[str, Any] = _unstructurer(type(params))(params)
        return data

    def _plan_send_request(self, method: str) -> tuple[MethodSpec, Kind, Callable[[Any], Any]]:
        """Decide, once per method until the version or capabilities change, whether we
        may send this request (the method table, then the peer's capabilities)."""
        spec = self._lookup(method, sender=self.our_role)
        if spec is None or spec.kind == NOTIFICATION:
            raise LocalProtocolError(
                f"{self.our_role.value} cannot send request {method!r}"
                + (
                    f" in protocol version {self.protocol_version}" if self.protocol_version else ""
                ),
                code=METHOD_NOT_FOUND,
            )
        k = kind_of(method, is_request=True)
        check_send(self.our_role, self.state, k)  # a lifecycle refusal names the state first
        if not self._capability_ok(spec):
            raise LocalProtocolError(
                f"{method} needs the peer's capability {'.'.join(spec.capability)}, "
                "which was not negotiated",
                code=METHOD_NOT_FOUND,
            )
        plan = self._send_plans[method] = (spec, k, _structurer(spec.result_type))
        return plan

    def _send_request(self, event: Request, now: float | None, timeout: Any) -> bytes:
        rid, method = event.id, event.method
        # Spec: 2025-06-18/basic#requests.1
        # "Requests MUST include a string or integer ID."
        # Spec: 2025-06-18/basic#requests.2
        # "Unlike base JSON-RPC, the ID MUST NOT be `null`."
        if not rpc.valid_id(rid):
            raise LocalProtocolError(f"request id must be a str or an int, not {rid!r}")
        plan = self._send_plans.get(method)
        spec, k, structure_result = plan if plan is not None else self._plan_send_request(method)
        new_state = self._table.get((self.state, SEND, k))
        if new_state is None:
            new_state = check_send(self.our_role, self.state, k)  # raises: names why
        params = self._check_params(spec, event.params)
        token = None
        meta = getattr(event.params, "meta", None)
        if meta is not None:
            token = meta.get("progressToken")
            if token is not None and not rpc.valid_id(token):
                raise LocalProtocolError("progressToken must be a str or an int")
        # Spec: 2025-06-18/basic/lifecycle#timeouts.3
        # "SDKs and other middleware SHOULD allow these timeouts to be configured on a per-request
        # basis."
        # Each request may bring its own timeout; the connection's default otherwise.
        if timeout is _DEFAULT:
            timeout = self.default_timeout
        out = Outgoing(
            id=rid, method=method, progress_token=token, structure_result=structure_result
        )
        if timeout is not None:
            if not isinstance(timeout, RequestTimeout):
                raise TypeError("timeout must be a RequestTimeout or None")
            if now is None:
                raise LocalProtocolError("a request with a timeout needs now=")
            out.timeout = timeout
            out.sent_at = now
            out.deadline = now + timeout.seconds
        if k is _K_INITIALIZE:
            version = event.params.protocol_version
            # Spec: 2025-06-18/basic/lifecycle#version-negotiation.1
            # "In the `initialize` request, the client MUST send a protocol version it supports."
            if version not in SUPPORTED_VERSIONS:
                raise LocalProtocolError(
                    f"initialize must ask for a version we support, not {version!r}"
                )
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        data = self._encode(message)
        self._inflight.add_outgoing(out)  # checks (id reuse, bounds) before adding
        if k is _K_INITIALIZE:
            self._init_id = rid
            self.requested_version = event.params.protocol_version
            self.capabilities[CLIENT] = event.params.capabilities
            self._forget_plans()
        self.state = new_state
        return data

    def _send_notification(self, event: Notification) -> bytes:
        method = event.method
        spec = self._lookup(method, sender=self.our_role)
        if spec is None or spec.kind != NOTIFICATION:
            raise LocalProtocolError(
                f"{self.our_role.value} cannot send notification {method!r}",
                code=METHOD_NOT_FOUND,
            )
        k = kind_of(method, is_request=False)
        new_state = next_state(self.our_role, self.state, SEND, k)
        if new_state is None:
            raise LocalProtocolError(describe_refusal(self.our_role, self.state, SEND, k))
        if not self._capability_ok(spec):
            raise LocalProtocolError(
                f"{method} needs the capability {'.'.join(spec.capability)}, not negotiated",
                code=METHOD_NOT_FOUND,
            )
        params = self._check_params(spec, event.params)
        # Spec: 2025-06-18/basic#notifications.2
        # "Notifications MUST NOT include an ID."
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        data = self._encode(message)
        # The two checks below raise before they change anything.
        if method == _CANCELLED:
            if not self._send_cancel(event.params):
                return b""
        elif method == _PROGRESS:
            self._send_progress(event.params)
        self.state = new_state
        return data

    def _send_cancel(self, params: Any) -> bool:
        rid = params.request_id
        if not rpc.valid_id(rid):
            raise LocalProtocolError(
                f"notifications/cancelled needs a str or int requestId: {rid!r}"
            )
        inflight = self._inflight
        out = inflight.get_outgoing(rid)
        if out is None:
            if inflight.outgoing_finished(rid):
                return False  # already answered (or given up on): nothing to cancel
            # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.1
            # "Cancellation notifications MUST only reference requests that:"
            raise LocalProtocolError(f"cannot cancel {rid!r}: no such request was sent")
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        if out.method == "initialize":
            raise LocalProtocolError("the initialize request must not be cancelled")
        inflight.pop_outgoing(rid, "cancelled")
        return True

    def _send_progress(self, params: Any) -> None:
        token = params.progress_token
        if not rpc.valid_id(token):
            raise LocalProtocolError(f"a progress token is a str or an int, not {token!r}")
        req = self._inflight.incoming_for_token(token)
        # Spec: 2025-06-18/basic/utilities/progress#behavior-requirements.1
        # "Progress notifications MUST only reference tokens that:"
        # Spec: 2025-06-18/basic/utilities/progress#implementation-notes.3
        # "Progress notifications MUST stop after completion"
        if req is None:
            raise LocalProtocolError(f"progress token {token!r} belongs to no active request")
        # Spec: 2025-06-18/basic/utilities/progress#progress-flow.4
        # "The `progress` value MUST increase with each notification, even if the total is unknown."
        if req.last_progress is not None and not params.progress > req.last_progress:
            raise LocalProtocolError(
                f"progress must increase: {params.progress} after {req.last_progress}"
            )
        req.last_progress = params.progress

    def _answerable(self, rid: Any) -> Incoming | bool | None:
        """The incoming request ``rid`` answers; False when the answer must be dropped."""
        req = self._inflight.get_incoming(rid)
        if req is None and self._inflight.incoming_finished(rid) == "cancelled":
            # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
            # "Receivers of cancellation notifications SHOULD:"
            return False
        return req

    def _send_response(self, event: Response) -> bytes:
        rid = event.id
        if not rpc.valid_id(rid):
            raise LocalProtocolError(f"response id must be a str or an int, not {rid!r}")
        req = self._answerable(rid)
        if req is False:
            return b""
        if req is None or req is True:
            raise LocalProtocolError(f"no request with id {rid!r} awaits a response")
        assert isinstance(req, Incoming)
        spec = METHODS[req.method]
        is_init = req.method == "initialize"
        k = _K_INIT_RESULT if is_init else _K_RESPONSE
        new_state = check_send(self.our_role, self.state, k)
        result = event.result
        if not isinstance(result, spec.result_type):
            raise LocalProtocolError(
                f"the result of {req.method} must be {spec.result_type.__name__}, "
                f"not {type(result).__name__}"
            )
        if is_init:
            requested = self.requested_version or ""
            version = result.protocol_version
            # Spec: 2025-06-18/basic/lifecycle#version-negotiation.3
            # "If the server supports the requested protocol version, it MUST respond with the same
            # version."
            if requested in SUPPORTED_VERSIONS and version != requested:
                raise LocalProtocolError(
                    f"the client asked for {requested}, which we support: answer it, not {version}"
                )
            # Spec: 2025-06-18/basic/lifecycle#version-negotiation.4
            # "Otherwise, the server MUST respond with another protocol version it supports."
            if version not in SUPPORTED_VERSIONS:
                raise LocalProtocolError(f"cannot answer with unsupported version {version!r}")
        # Spec: 2025-06-18/basic#responses.1
        # "Responses MUST include the same ID as the request they correspond to."
        data = self._encode(
            {"jsonrpc": "2.0", "id": rid, "result": _unstructurer(type(result))(result)}
        )
        self._inflight.pop_incoming(rid, "answered")
        if is_init:
            self.protocol_version = result.protocol_version
            self.capabilities[SERVER] = result.capabilities
            self._forget_plans()
        self.state = new_state
        return data

    def _batched(self, event: Response | ErrorResponse, data: bytes) -> bytes:
        """A reply that belongs to a batch is held until the batch's last one; that
        one brings the array (see :mod:`._batch`).  Other replies pass unchanged.

        A refusal's reply (see ``_note_refusal``) belongs to the batch noted with it,
        never to the request its id names, and is forgotten once sent.
        """
        entry = self._refusal(event) if type(event) is ErrorResponse else None
        if entry is not None:
            del self._refusals[id(event)]
            owner = entry[1]
            return data if owner is None else owner.add(data)
        if not rpc.valid_id(event.id):
            return data
        replies = self._batch_of.pop(event.id, None)
        if replies is None:
            return data
        # A request in _batch_of is still in flight (cancelling it pops it, see
        # _receive_cancel), so its reply is never the b"" of a cancelled request.
        return replies.add(data)

    def _send_error(self, event: ErrorResponse) -> bytes:
        rid = event.id
        if rid is not None and not rpc.valid_id(rid):
            raise LocalProtocolError(f"error response id must be a str, an int or None: {rid!r}")
        # Spec: 2025-06-18/basic#responses.5
        # "Error codes MUST be integers."
        if type(event.code) is not int:
            raise LocalProtocolError("error codes must be integers")
        # Spec: 2025-06-18/basic#requests.3
        # "The request ID MUST NOT have been previously used by the requestor within the same
        # session."
        # The reply to a refused message (which may have reused the id of a request
        # still in flight) answers no request of ours.
        refusal = self._refusal(event) is not None
        req: Any = None
        if rid is not None and not refusal:
            req = self._answerable(rid)
            if req is False:
                return b""
        is_init = req is not None and req.method == "initialize"
        k = _K_INIT_ERROR if is_init else _K_RESPONSE
        new_state = check_send(self.our_role, self.state, k)
        error: dict[str, Any] = {"code": event.code, "message": event.message}
        if event.data is not None:
            error["data"] = event.data
        # Unbounded: an error reply (often to a message refused for its size) must
        # always be deliverable; the peer's own bound still applies on its side.
        data = self._encode({"jsonrpc": "2.0", "id": rid, "error": error}, bounded=False)
        if req is not None:
            self._inflight.pop_incoming(rid, "answered")
        self.state = new_state
        return data
