"""The modern era (2026-07-28) in the high-level server: discovery, caching hints, input
rounds, per-request logging, subscriptions.

Theory of operation
-------------------
A modern request says who is asking and what the client can do in its own ``_meta``;
the connection has checked it and the server reads it again here
(:func:`modern_context`: the :class:`~mcp_ref._modern.RequestContext`, or None for a
handshake-era request).  What the server does differently for such a request:

* **capabilities match handlers**: a method whose capability the server does not declare
  (``tools/list`` on a server without tools) is -32601, as if it did not exist;
* **caching hints** (:class:`CacheHint`): the cacheable results (``server/discover``,
  the four lists, ``resources/read``) get ``ttlMs`` and ``cacheScope`` unless the
  handler set them.  Handshake-era results are left as they were;
* **input rounds** (:class:`Rounds`): ``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``
  and ``ctx.ask`` cannot send a request to the client (2026-07-28 has no
  server-to-client requests).  Each asked input has an id (given, or numbered in the
  order asked).  An answer is looked up in the answers of earlier rounds (carried in the
  signed ``requestState``, :mod:`mcp_ref._request_state`), then in this retry's
  ``inputResponses``; an answer found is returned to the handler, one missing stops the
  handler with :class:`InputRequired` and the server answers ``input_required`` with
  every missing request of that ask and a new state holding the answers so far.  On the
  retry the handler runs again from the start and gets the earlier answers back in
  order, without asking the client again.  An answer the client sends for an input never
  asked is ignored (2026-07-28/basic/patterns/mrtr#error-handling.3);
* **logging** is per request: ``Context.log`` sends only when the request's ``_meta``
  carries ``io.modelcontextprotocol/logLevel``, at or above it;
* **subscriptions/listen** stays open: the acknowledgment first, then the list-changed
  and resource-updated notifications its filter asks for, tagged with the listen
  request's id, until the client cancels it.  Every notification is sent as related to
  the listen request, so Streamable HTTP writes it on that POST's SSE stream.

Source: 2026-07-28/server/discover, server/utilities/caching, basic/patterns/mrtr,
server/utilities/logging, basic/patterns/subscriptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from .. import types as t
from .._convert import ConversionError, structure_fn, unstructure, unstructure_fn
from .._errors import INVALID_PARAMS, McpError
from .._modern import RequestContext as ModernContext
from .._modern import read_request_meta, require_capabilities
from .._modern_connection import INPUT_REQUIRED_METHODS, MODERN, input_capabilities
from .._sampling import check_sampling_messages

if TYPE_CHECKING:
    from ..trio import RequestContext

__all__ = [
    "CACHEABLE",
    "CacheHint",
    "InputRequired",
    "Rounds",
    "elicitation",
    "modern_context",
    "roots",
    "sampling",
    "with_cache_hint",
]

REVISION: Final = "2026-07-28"

CACHEABLE: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
"""The methods whose complete results carry caching hints
(2026-07-28/server/utilities/caching#cacheable-results)."""

CAPABILITY_OF: Final = {
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "completion/complete": "completions",
}
"""The server capability each method belongs to."""

_RESULT_OF: Final[dict[str, Any]] = {
    "elicitation/create": t.ElicitResult,
    "sampling/createMessage": t.CreateMessageResult,
    "roots/list": t.ListRootsResult,
}
_INPUT_TYPES: Final = (t.ElicitRequest, t.CreateMessageRequest, t.ListRootsRequest)


def modern_context(ctx: RequestContext) -> ModernContext | None:
    """The per-request context of a modern request (the connection read it from
    ``params._meta`` when it judged the request); None in the handshake era."""
    if getattr(ctx.session.connection, "era", None) != MODERN:
        return None
    read = getattr(ctx, "meta_context", None)
    if read is None:  # a handler context built by hand (tests, other drivers)
        meta = getattr(ctx.params, "meta", None)
        read = read_request_meta({"_meta": meta}, request_id=ctx.request_id)
    return read if isinstance(read, ModernContext) else None


# --------------------------------------------------------------------------- caching


@attrs.frozen
class CacheHint:
    """The caching hints of a cacheable result: how long the client may consider it
    fresh, and who may share a cached copy.

    Raises:
        ValueError: a negative ``ttl_ms``, or a scope other than ``"public"`` and
            ``"private"``.

    Source: 2026-07-28/server/utilities/caching#cacheable-model.
    """

    ttl_ms: int = 0
    """Milliseconds the result stays fresh (0: immediately stale)."""
    scope: Literal["public", "private"] = "public"
    """``"public"``: the same for every user; ``"private"``: depends on who asks."""

    def __attrs_post_init__(self) -> None:
        # Spec: 2026-07-28/server/utilities/caching#time-to-live-ttl-field.5
        # "Servers MUST provide a `ttlMs` value that is `>= 0`."
        if type(self.ttl_ms) is not int or self.ttl_ms < 0:
            raise ValueError(f"ttl_ms must be an integer >= 0, not {self.ttl_ms!r}")
        if self.scope not in ("public", "private"):
            raise ValueError(f"cache scope must be 'public' or 'private', not {self.scope!r}")


NOT_CACHEABLE: Final = CacheHint(0, "private")
"""The hints of a result that depends on input rounds
(2026-07-28/server/utilities/caching#cache-key.2)."""


def with_cache_hint(result: Any, hint: CacheHint, *, force: bool = False) -> Any:
    """``result`` with ``ttl_ms`` and ``cache_scope`` filled in where the handler left
    them unset, or, with ``force``, whatever it set (a new object; ``result`` itself
    when nothing changes)."""
    # Spec: 2026-07-28/server/utilities/caching#cache-key.2
    # "Results produced by retrying a request through the multi round-trip requests
    # mechanism&mdash;that is, requests carrying `inputResponses` or
    # `requestState`&mdash;MUST NOT be cached, as they depend on inputs that are not part
    # of the cache key."
    changes: dict[str, Any] = {}
    if force or getattr(result, "ttl_ms", 0) is None:
        changes["ttl_ms"] = hint.ttl_ms
    if force or getattr(result, "cache_scope", "") is None:
        changes["cache_scope"] = hint.scope
    return attrs.evolve(result, **changes) if changes else result


# ---------------------------------------------------------------------- input rounds


def elicitation(
    message: str,
    requested_schema: t.ElicitRequestFormParamsRequestedSchema | dict[str, Any],
) -> t.ElicitRequest:
    """An ``elicitation/create`` (form mode) request, for :meth:`Context.ask`.

    Raises:
        ValueError: ``requested_schema`` is not a valid requested schema.
    """
    schema: t.ElicitRequestFormParamsRequestedSchema
    if isinstance(requested_schema, dict):
        try:
            schema = structure_fn(t.ElicitRequestFormParamsRequestedSchema)(requested_schema)
        except ConversionError as exc:
            raise ValueError(f"invalid requested_schema: {exc}") from None
    else:
        schema = requested_schema
    return t.ElicitRequest(
        params=t.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def sampling(
    messages: str | list[t.SamplingMessage],
    *,
    max_tokens: int = 1000,
    system_prompt: str | None = None,
    temperature: float | None = None,
    **kw: Any,
) -> t.CreateMessageRequest:
    """A ``sampling/createMessage`` request, for :meth:`Context.ask`: a prompt (one user
    text message) or the conversation; other ``CreateMessageRequestParams`` fields by
    keyword.

    Raises:
        ValueError: the conversation breaks the rules of a sampling request
            (:func:`mcp_ref._sampling.check_sampling_messages`: roles, tool results alone
            in a user message, each tool use answered by the next message).
    """
    if isinstance(messages, str):
        messages = [t.SamplingMessage(role="user", content=t.TextContent(text=messages))]
    check_sampling_messages(messages)
    return t.CreateMessageRequest(
        params=t.CreateMessageRequestParams(
            messages=list(messages),
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            **kw,
        )
    )


def roots() -> t.ListRootsRequest:
    """A ``roots/list`` request, for :meth:`Context.ask`."""
    return t.ListRootsRequest()


class InputRequired(BaseException):
    """Raised inside a handler when a modern request needs input the client has not
    given yet; the server answers ``input_required`` with ``requests``.

    A ``BaseException``, like ``trio.Cancelled``: a handler's ``except Exception`` does
    not swallow it.
    """

    def __init__(self, requests: dict[str, Any]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests


class Rounds:
    """The input of one modern request: the answers of earlier rounds (verified, from
    ``requestState``), this retry's ``inputResponses``, and what the handler asked.

    Args:
        context: the request's modern context (its client capabilities decide what may
            be asked).
        request_id: the request's id (for the -32021 error).
        answers: earlier answers (JSON values) by input id.
        responses: this retry's ``inputResponses`` (typed results) by input id.
        rounds: rounds answered ``input_required`` before this request.
    """

    def __init__(
        self,
        context: ModernContext,
        request_id: Any,
        answers: Mapping[str, Any],
        responses: Mapping[str, Any],
        rounds: int,
    ) -> None:
        self.context = context
        self.request_id = request_id
        self.answers: dict[str, Any] = dict(answers)
        self.responses = responses
        self.rounds = rounds
        self._counter = 0
        self._asked: set[str] = set()

    def next_id(self, method: str) -> str:
        """An id for an input asked without one: the method's short name and the
        position of the ask in this run of the handler (``elicitation-1``...)."""
        self._counter += 1
        return f"{method.split('/')[0]}-{self._counter}"

    def take(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """The typed answers to ``requests`` (typed input requests by id).

        Raises:
            McpError: -32021 when the request's client capabilities lack what one of
                them needs; -32602 when an answer is not the result its request expects.
            InputRequired: some answers are missing.
            ValueError: an id asked for before in this run of the handler, or a value
                that is not an ``ElicitRequest``, ``CreateMessageRequest`` or
                ``ListRootsRequest``.
        """
        # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.3
        # "`inputRequests` keys are server assigned identifiers and MUST be unique within the
        # scope of the request."
        again = self._asked.intersection(requests)
        if again:
            raise ValueError(
                f"input id(s) {sorted(again)} asked for twice in one request; "
                "give each ask its own key"
            )
        self._asked.update(requests)
        # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.4
        # "`inputRequests` values are request objects that MUST be one of
        # `ElicitRequest`, `CreateMessageRequest`, or `ListRootsRequest`"
        for key, request in requests.items():
            if not isinstance(request, _INPUT_TYPES):
                raise ValueError(
                    f"input {key!r} is not an input request ({type(request).__name__}); "
                    "ask with elicitation(), sampling() or roots()"
                )
        # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.12
        # "Servers MUST NOT send an `inputRequests` that the client has not declared
        # support for in its capabilities."
        # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.13
        # "if a client does not declare support for `elicitation`, the server MUST NOT
        # include any `elicitation/create` requests in the `inputRequests` field."
        needed = input_capabilities(requests.values())
        refusal = require_capabilities(self.context, needed, request_id=self.request_id)
        if refusal is not None:
            raise McpError(refusal.code, refusal.message, refusal.data)
        got: dict[str, Any] = {}
        missing: dict[str, Any] = {}
        for key, request in requests.items():
            result_type = _RESULT_OF[request.method]
            if key in self.answers:
                got[key] = structure_fn(result_type, REVISION)(self.answers[key])
                continue
            response = self.responses.get(key)
            if response is None:
                missing[key] = request
                continue
            # Spec: 2026-07-28/basic/patterns/mrtr#error-handling.1
            # "Servers SHOULD validate that the data provided by the client is a valid
            # `InputResponses` object and that the information inside can be correctly
            # parsed."
            try:
                if not isinstance(response, result_type):
                    response = structure_fn(result_type, REVISION)(unstructure(response))
            except ConversionError as exc:
                raise McpError(
                    INVALID_PARAMS,
                    f"inputResponses[{key!r}] is not a valid answer to {request.method}: {exc}",
                ) from None
            self.answers[key] = unstructure_fn(result_type, REVISION)(response)
            got[key] = response
        if missing:
            # Spec: 2026-07-28/basic/patterns/mrtr#error-handling.4
            # "If the client fails to send all the information requested in a previous
            # `InputRequests`, and the missing information is necessary for the server to
            # process the request, the server SHOULD respond with a new
            # `InputRequiredResult` requesting the missing information again, rather than
            # returning an error"
            raise InputRequired(missing)
        return got


def supports_input(method: str) -> bool:
    """Whether ``method`` may be answered ``input_required``."""
    return method in INPUT_REQUIRED_METHODS
