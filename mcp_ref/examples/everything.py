"""The reference "everything" server: every feature of mcp_ref.server, and every name the
official conformance suite (``@modelcontextprotocol/conformance``) calls.

Run it on stdio with ``mcp-ref serve`` or ``python -m mcp_ref.examples.everything``.

What it offers
--------------
Tools named by the conformance suite (server scenarios ``tools-*``, ``elicitation-*``,
``json-schema-2020-12``, ``server-sse-polling``):

* ``test_simple_text``, ``test_image_content`` (a 1x1 PNG), ``test_audio_content``
  (a short WAV, ``audio/wav``), ``test_embedded_resource``, ``test_multiple_content_types``;
* ``test_tool_with_logging`` (three ``info`` messages about 50 ms apart, and one
  ``debug``), ``test_tool_with_progress`` (0, 50, 100 of 100, about 50 ms apart);
* ``test_error_handling`` (always ``isError: true``);
* ``test_sampling(prompt)`` and ``test_elicitation(message)`` (requests to the client);
* ``test_elicitation_sep1034_defaults`` (a form whose fields all have defaults) and
  ``test_elicitation_sep1330_enums`` (the five enum shapes of 2025-11-25);
* ``json_schema_2020_12_tool`` (a hand-written 2020-12 input schema with ``$defs``,
  ``$anchor``, ``allOf``/``anyOf`` and ``if``/``then``/``else``);
* ``test_header_mirroring`` (an ``x-mcp-header`` annotated argument, for the 2026-07-28
  ``Mcp-Param-*`` header checks of Streamable HTTP);
* ``test_reconnection`` (answers after a short pause; the Streamable HTTP transport uses
  it to test stream resumption).

Resources: ``test://static-text``, ``test://static-binary``, ``test://watched-resource``
(subscribe, then call ``update_watched_resource``), and the template
``test://template/{id}/data``.  Prompts: ``test_simple_prompt``,
``test_prompt_with_arguments(arg1, arg2)``, ``test_prompt_with_embedded_resource(resourceUri)``,
``test_prompt_with_image``.  Completions: ``test_prompt_with_arguments``/``arg1`` and the
template's ``id``.

A few realistic tools show the rest of the API: ``echo`` (the bench's tool), ``add``
and ``get_weather`` (structured output from a typed return), ``sha256`` (a blocking sync
function, run in a worker thread), ``long_running_operation`` (progress, cancellation),
``toggle_extra_tool`` (``notifications/tools/list_changed``), ``update_watched_resource``
(``notifications/resources/updated``) and ``list_client_roots`` (``roots/list``).

Each call to :func:`make_server` builds a fresh server with its own state.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import wave
import zlib
from collections.abc import Callable
from typing import Any, Literal

import attrs
import trio

from .. import types as t
from ..server import (
    DEFAULT_RATE_LIMITS,
    Context,
    RateLimit,
    Server,
    ToolError,
    audio,
    elicitation,
    embedded,
    image,
    roots,
    sampling,
    text,
    user,
)
from ..trio import close_sse_stream

__all__ = ["PNG_1X1", "WAV_SHORT", "main", "make_server"]


def _png(red: int, green: int, blue: int) -> bytes:
    """A 1x1 RGB PNG (signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit, truecolour
    pixels = zlib.compress(bytes([0, red, green, blue]))  # filter 0, one pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _wav(seconds: float = 0.05, rate: int = 8000) -> bytes:
    """A short mono 8-bit WAV of a 440 Hz square wave."""
    frames = int(seconds * rate)
    period = rate // 440
    samples = bytes(200 if (i // (period // 2)) % 2 else 56 for i in range(frames))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(rate)
        w.writeframes(samples)
    return buffer.getvalue()


PNG_1X1: bytes = _png(255, 0, 0)
"""A 1x1 red PNG."""
WAV_SHORT: bytes = _wav()
"""A 50 ms WAV."""

_STEP = 0.05  # seconds between the logging/progress steps the conformance suite expects

_JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    # Composition and conditional keywords, kept as written (SEP-2106):
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

_MIRRORED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "A region", "x-mcp-header": "Region"},
        "note": {"type": "string", "description": "Not mirrored"},
    },
    "required": ["region"],
}
"""A tool input whose ``region`` a 2026-07-28 HTTP client mirrors into the
``Mcp-Param-Region`` header (the ``x-mcp-header`` annotation)."""

_ENUM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "title": "Untitled single select",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "title": "Titled single select",
            "oneOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "title": "Legacy titled enum",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "title": "Untitled multi select",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "title": "Titled multi select",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}

_DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Your name", "default": "John Doe"},
        "age": {"type": "integer", "description": "Your age", "default": 30},
        "score": {"type": "number", "description": "Your score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "Your status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verified?", "default": True},
    },
}


@attrs.frozen
class Weather:
    """Current weather at one place.

    Attributes:
        temperature: degrees Celsius.
        conditions: a short description, e.g. "Cloudy".
        humidity: relative humidity, in percent.
    """

    temperature: float
    conditions: str
    humidity: float


_WEATHER = {
    "New York": Weather(temperature=22.5, conditions="Partly cloudy", humidity=65),
    "Chicago": Weather(temperature=18.0, conditions="Windy", humidity=50),
    "Los Angeles": Weather(temperature=28.0, conditions="Sunny", humidity=30),
}


def make_server() -> Server:
    """A fresh everything server (its own watched resource and toggled tool)."""
    server = Server(
        "mcp-ref-everything",
        "1.0",
        title="mcp-ref Everything Server",
        description="The mcp-ref reference server: every feature, and the conformance names.",
        instructions=(
            "A test server.  Tools named test_* are the official conformance suite's; "
            "echo, add, get_weather, sha256, long_running_operation and the toggles show "
            "the rest of the protocol."
        ),
        # Generous: enough for benchmarks, still a cap on a runaway client.
        rate_limits={
            **DEFAULT_RATE_LIMITS,
            "tools/call": RateLimit(per_second=10_000, burst=20_000),
        },
    )
    _conformance_tools(server)
    _modern_tools(server)
    _realistic_tools(server)
    # Tools embed resources, and the server offers resources too:
    # Spec: 2025-06-18/server/tools#embedded-resources.2
    # "Servers that use embedded resources SHOULD implement the `resources` capability:"
    _resources(server)
    _prompts(server)
    return server


def _needs_2025_11_25(ctx: Context) -> None:
    """Elicitation defaults and the new enum shapes exist from 2025-11-25 on."""
    if not ctx.client_supports("elicitation"):
        raise ToolError("The client does not support elicitation")
    version = ctx.modern.protocol_version if ctx.modern else ctx.session.protocol_version or ""
    if version < "2025-11-25":
        raise ToolError(f"This tool needs protocol 2025-11-25; the session uses {version}")


async def _elicit_2025_11_25(ctx: Context, message: str, schema: dict[str, Any]) -> str:
    """Ask the user to fill the form ``schema`` (a 2025-11-25 form: defaults, the new
    enum shapes) and say what came back: ``Elicitation completed: action=accept,
    content={...}`` (the content as JSON, ``null`` when declined or cancelled).

    Raises:
        ToolError: the client cannot elicit, or the session's protocol is older than
            2025-11-25 (:func:`_needs_2025_11_25`).

    Source: 2025-11-25/client/elicitation (elicitation/create).
    """
    _needs_2025_11_25(ctx)
    result = await ctx.elicit(message, schema)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


def _close_http_stream(ctx: Context) -> bool:
    """End the request's SSE stream before its result, when served over Streamable HTTP
    (the transport's ``close_sse_stream``); False elsewhere."""
    return close_sse_stream(ctx.request_id)


def _conformance_tools(server: Server) -> None:
    @server.tool(blocking=False)
    def test_simple_text() -> str:
        """Returns a simple text response."""
        return "This is a simple text response for testing."

    @server.tool(blocking=False)
    def test_image_content() -> t.ImageContent:
        """Returns a small PNG image."""
        return image(PNG_1X1, "image/png")

    @server.tool(blocking=False)
    def test_audio_content() -> t.AudioContent:
        """Returns a short WAV audio clip."""
        return audio(WAV_SHORT, "audio/wav")

    @server.tool(blocking=False)
    def test_embedded_resource() -> t.EmbeddedResource:
        """Returns an embedded text resource."""
        return embedded(
            "test://embedded-resource", "This is an embedded resource content.", "text/plain"
        )

    @server.tool(blocking=False)
    def test_multiple_content_types() -> list[t.ContentBlock]:
        """Returns text, an image and an embedded JSON resource."""
        return [
            text("Multiple content types test:"),
            image(PNG_1X1, "image/png"),
            embedded(
                "test://mixed-content-resource",
                json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
                "application/json",
            ),
        ]

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Sends log messages while it runs (three at info, one at debug)."""
        await ctx.log("info", "Tool execution started", logger="test_tool_with_logging")
        await trio.sleep(_STEP)
        await ctx.log("info", "Tool processing data", logger="test_tool_with_logging")
        await ctx.log("debug", {"step": 2, "detail": "processing"}, logger="test_tool_with_logging")
        await trio.sleep(_STEP)
        await ctx.log("info", "Tool execution completed", logger="test_tool_with_logging")
        return "Tool with logging executed successfully"

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress 0, 50 and 100 of 100 while it runs."""
        # Spec: 2025-06-18/basic/utilities/progress#progress-flow.6
        # "The `message` field SHOULD provide relevant human readable progress information."
        # Each step says in words where the tool is.
        await ctx.report_progress(0, 100, "Started")
        await trio.sleep(_STEP)
        await ctx.report_progress(50, 100, "Half way")
        await trio.sleep(_STEP)
        await ctx.report_progress(100, 100, "Done")
        return "Tool with progress executed successfully"

    @server.tool(blocking=False)
    def test_error_handling() -> str:
        """Always fails, as a tool execution error (isError: true)."""
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Asks the client's LLM to answer a prompt (sampling/createMessage).

        Args:
            prompt: the prompt to send to the LLM.
        """
        if not ctx.client_supports("sampling"):
            raise ToolError("The client does not support sampling")
        result = await ctx.sample(prompt, max_tokens=100)
        content = result.content if isinstance(result.content, list) else [result.content]
        answer = " ".join(c.text for c in content if isinstance(c, t.TextContent))
        return f"LLM response: {answer}"

    @server.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Asks the user for a username and an email (elicitation/create).

        Args:
            message: the message to show the user.
        """
        if not ctx.client_supports("elicitation"):
            raise ToolError("The client does not support elicitation")
        result = await ctx.elicit(
            message,
            {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            },
        )
        return f"User response: action={result.action}, content={json.dumps(result.content)}"

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Asks for a form whose fields all have defaults (SEP-1034)."""
        return await _elicit_2025_11_25(
            ctx, "Please review and update the form fields", _DEFAULTS_SCHEMA
        )

    @server.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Asks for choices in the five enum shapes of 2025-11-25 (SEP-1330)."""
        return await _elicit_2025_11_25(ctx, "Please choose from the options", _ENUM_SCHEMA)

    @server.tool(
        input_schema=_JSON_SCHEMA_2020_12,
        description="Tool with JSON Schema 2020-12 features",
        blocking=False,
    )
    def json_schema_2020_12_tool(**arguments: Any) -> str:
        return f"Received: {json.dumps(arguments, sort_keys=True)}"

    @server.tool(
        input_schema=_MIRRORED_SCHEMA,
        description="Echoes its region, which 2026-07-28 HTTP clients send as a header too",
        blocking=False,
    )
    def test_header_mirroring(**arguments: Any) -> str:
        return f"Region: {arguments.get('region')}"

    @server.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Closes its Streamable HTTP stream, then answers: the client resumes the stream
        with Last-Event-ID to get the result (elsewhere it just answers)."""
        _close_http_stream(ctx)
        await trio.sleep(0.2)
        return "Reconnection test completed"


def _schema(**properties: str) -> dict[str, Any]:
    """A flat form of required properties, each given by its JSON type name."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }


def _said(result: t.CreateMessageResult) -> str:
    """The text of a sampling result."""
    content = result.content if isinstance(result.content, list) else [result.content]
    return " ".join(c.text for c in content if isinstance(c, t.TextContent))


def _toggle(server: Server, fn: Callable[..., Any], *, prompt: bool = False) -> str:
    """Remove the tool (or ``prompt``) named after ``fn`` if the server offers it, else
    add ``fn`` as one; say which.  The server announces the list change itself."""
    name = fn.__name__
    if name in (server.prompts if prompt else server.tools):
        (server.remove_prompt if prompt else server.remove_tool)(name)
        return f"{name} removed"
    if prompt:
        server.add_prompt(fn, blocking=False)
    else:
        server.add_tool(fn)
    return f"{name} added"


def _modern_tools(server: Server) -> None:
    """The diagnostic tools and prompt of the 2026-07-28 server scenarios
    (``server-stateless``, ``input-required-result-*``).  Each asks for input with
    ``ctx.elicit``/``ctx.sample``/``ctx.list_roots``/``ctx.ask``, written the same for
    both eras: in the handshake era those are requests to the client, in 2026-07-28 an
    ``input_required`` answer and a retry (see :mod:`mcp_ref.server._modern`)."""

    @server.tool()
    async def test_missing_capability(ctx: Context) -> str:
        """Needs the client's sampling: without it the call is refused (-32021)."""
        return _said(await ctx.sample("Say hello.", max_tokens=20, key="hello"))

    @server.tool()
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Asks the user to confirm; in 2026-07-28 the ask is an input_required result on
        the request's own stream, never a request of its own."""
        answer = await ctx.elicit("Please confirm", _schema(ok="boolean"), key="confirm")
        return f"Confirmed: action={answer.action}"

    @server.tool()
    async def test_logging_tool(ctx: Context) -> str:
        """Logs one message at each of debug, info and warning (sent only at or above
        the request's own log level, and not at all without one)."""
        for level in ("debug", "info", "warning"):
            await ctx.log(level, f"test_logging_tool: a {level} message", logger="everything")
        return "Logged three messages."

    async def test_dynamic_tool() -> str:
        """A tool that comes and goes with test_trigger_tool_change."""
        return "The dynamic tool is here."

    @server.tool()
    async def test_trigger_tool_change() -> str:
        """Adds or removes test_dynamic_tool (listeners get tools/list_changed)."""
        return _toggle(server, test_dynamic_tool)

    def test_dynamic_prompt() -> str:
        """A prompt that comes and goes with test_trigger_prompt_change."""
        return "The dynamic prompt is here."

    @server.tool()
    async def test_trigger_prompt_change() -> str:
        """Adds or removes test_dynamic_prompt (listeners get prompts/list_changed)."""
        return _toggle(server, test_dynamic_prompt, prompt=True)

    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        """Asks the user's name (input ``user_name``) and greets them."""
        answer = await ctx.elicit("What is your name?", _schema(name="string"), key="user_name")
        return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"

    @server.tool()
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """Asks the client's LLM a question (input ``capital_question``)."""
        answer = await ctx.sample(
            "What is the capital of France?", max_tokens=100, key="capital_question"
        )
        return f"LLM response: {_said(answer)}"

    @server.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """Asks for the client's roots (input ``client_roots``) and lists them."""
        found = await ctx.list_roots(key="client_roots")
        return "Roots: " + (", ".join(r.uri for r in found) or "none")

    @server.tool()
    async def test_input_required_result_request_state(ctx: Context) -> str:
        """Asks for a confirmation (input ``confirm``); the retry's requestState is
        verified before the answer is used, which the result reports as state-ok."""
        answer = await ctx.elicit("Please confirm", _schema(ok="boolean"), key="confirm")
        return f"state-ok: the requestState verified; action={answer.action}"

    @server.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Asks for a confirmation (input ``confirm``); a retry whose requestState was
        changed is refused (-32602)."""
        answer = await ctx.elicit("Please confirm", _schema(ok="boolean"), key="confirm")
        return f"Confirmed: action={answer.action}"

    @server.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """Asks for a name, a sampled greeting and the roots in one round."""
        got = await ctx.ask(
            {
                "user_name": elicitation("What is your name?", _schema(name="string")),
                "greeting": sampling("Generate a greeting", max_tokens=50),
                "client_roots": roots(),
            }
        )
        name = (got["user_name"].content or {}).get("name", "stranger")
        return f"{_said(got['greeting'])} {name} ({len(got['client_roots'].roots)} roots)"

    @server.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """Asks for a name (``step1``), then, in a second round, a colour (``step2``)."""
        name = await ctx.elicit("Step 1: What is your name?", _schema(name="string"), key="step1")
        color = await ctx.elicit(
            "Step 2: What is your favorite color?", _schema(color="string"), key="step2"
        )
        return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}."

    @server.tool()
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """Asks only for what the client declared: sampling, elicitation, roots."""
        wanted: dict[str, Any] = {}
        if ctx.client_supports("sampling"):
            wanted["capital_question"] = sampling("What is the capital of France?", max_tokens=100)
        if ctx.client_supports("elicitation"):
            wanted["user_name"] = elicitation("What is your name?", _schema(name="string"))
        if ctx.client_supports("roots"):
            wanted["client_roots"] = roots()
        if not wanted:
            return "The client declared nothing to ask with."
        got = await ctx.ask(wanted)
        return "Received: " + ", ".join(sorted(got))

    @server.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> str:
        """A prompt that first asks the user for its context (input ``user_context``);
        without elicitation (a handshake-era client that cannot) it asks nothing."""
        version = ctx.modern.protocol_version if ctx.modern else ctx.session.protocol_version
        if ctx.modern is None and (
            not ctx.client_supports("elicitation") or (version or "") < "2025-06-18"
        ):
            return "Use this context: none given."
        answer = await ctx.elicit(
            "What context should the prompt use?", _schema(context="string"), key="user_context"
        )
        return f"Use this context: {(answer.content or {}).get('context', '')}"


def _realistic_tools(server: Server) -> None:
    @server.tool()
    async def echo(text: str) -> str:
        """Returns the text unchanged.

        Args:
            text: the text to echo.
        """
        return text

    @server.tool(annotations=t.ToolAnnotations(read_only_hint=True, open_world_hint=False))
    async def add(a: float, b: float) -> float:
        """Adds two numbers.

        Args:
            a: the first number.
            b: the second number.

        Returns:
            Their sum.
        """
        return a + b

    @server.tool(title="Weather", annotations=t.ToolAnnotations(read_only_hint=True))
    async def get_weather(city: Literal["New York", "Chicago", "Los Angeles"]) -> Weather:
        """Gets the current weather in a city (made-up numbers).

        Args:
            city: one of the cities the service knows.
        """
        return _WEATHER[city]

    @server.tool(annotations=t.ToolAnnotations(read_only_hint=True))
    def sha256(text: str) -> str:
        """Computes the SHA-256 of a text (a plain function, run in a worker thread).

        Args:
            text: the text to hash (UTF-8).
        """
        return hashlib.sha256(text.encode()).hexdigest()

    @server.tool()
    async def long_running_operation(ctx: Context, duration: float = 2.0, steps: int = 5) -> str:
        """Waits, reporting progress after each step; stops early when cancelled.

        Args:
            duration: total seconds to wait (0 to 60).
            steps: how many steps (1 to 100).
        """
        if not (0 <= duration <= 60 and 1 <= steps <= 100):
            raise ToolError("duration must be 0..60 seconds and steps 1..100")
        for step in range(1, steps + 1):
            await trio.sleep(duration / steps)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"Long running operation completed. Duration: {duration} seconds, Steps: {steps}."

    async def extra_tool() -> str:
        """A tool that comes and goes with toggle_extra_tool."""
        return "The extra tool is here."

    @server.tool()
    async def toggle_extra_tool() -> str:
        """Adds or removes the tool extra_tool (clients get tools/list_changed)."""
        return _toggle(server, extra_tool)

    @server.tool()
    async def list_client_roots(ctx: Context) -> list[str]:
        """Lists the client's roots (roots/list)."""
        if not ctx.client_supports("roots"):
            raise ToolError("The client does not support roots")
        return [root.uri for root in await ctx.list_roots()]


def _resources(server: Server) -> None:
    watched = {"text": "The watched resource, version 1."}

    server.add_resource(
        "test://static-text",
        "This is the content of the static text resource.",
        name="static-text",
        description="A fixed text resource.",
        mime_type="text/plain",
    )
    server.add_resource(
        "test://static-binary",
        PNG_1X1,
        name="static-binary",
        description="A fixed binary resource (a PNG image).",
        mime_type="image/png",
    )

    @server.resource(
        "test://watched-resource",
        name="watched-resource",
        mime_type="text/plain",
        blocking=False,
    )
    def watched_resource() -> str:
        """A resource that changes when update_watched_resource is called (subscribe to it)."""
        return watched["text"]

    @server.tool()
    async def update_watched_resource(text: str) -> str:
        """Changes test://watched-resource; subscribers get notifications/resources/updated.

        Args:
            text: the new content.
        """
        watched["text"] = text
        server.resource_updated("test://watched-resource")
        return "test://watched-resource updated"

    @server.resource_template(
        "test://template/{id}/data", name="template-data", mime_type="application/json"
    )
    async def template_data(id: str) -> str:
        """Data for one id (any string)."""
        data = {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}
        return json.dumps(data, separators=(",", ":"))

    server.add_completion(
        template="test://template/{id}/data", argument="id", values=["1", "2", "3", "123"]
    )


def _prompts(server: Server) -> None:
    @server.prompt(blocking=False)
    def test_simple_prompt() -> str:
        """A simple prompt without arguments."""
        return "This is a simple prompt for testing."

    @server.prompt(blocking=False)
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """A prompt with two required arguments.

        Args:
            arg1: the first argument.
            arg2: the second argument.
        """
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.completion(prompt="test_prompt_with_arguments", argument="arg1", blocking=False)
    def complete_arg1(value: str) -> list[str]:
        candidates = ["test", "testValue1", "testing", "example", "sample"]
        return [c for c in candidates if c.lower().startswith(value.lower())]

    @server.prompt(blocking=False)
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[t.PromptMessage]:
        """A prompt that embeds a resource.

        Args:
            resourceUri: the URI of the resource to embed.
        """
        return [
            user(embedded(resourceUri, "Embedded resource content for testing.", "text/plain")),
            user("Please process the embedded resource above."),
        ]

    @server.prompt(blocking=False)
    def test_prompt_with_image() -> list[t.PromptMessage]:
        """A prompt with an image."""
        return [user(image(PNG_1X1, "image/png")), user("Please analyze the image above.")]


def main() -> None:
    """Serve a fresh everything server on stdio until stdin ends."""
    make_server().run_stdio()


if __name__ == "__main__":
    main()
