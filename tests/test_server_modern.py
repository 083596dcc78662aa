"""The high-level Server in the 2026-07-28 era: server/discover, caching hints, multi
round-trip requests, per-request logging, subscriptions/listen.

Each test runs ``Server.serve`` on one end of an in-memory channel and writes raw
modern JSON-RPC requests (the three ``_meta`` keys on every one) on the other, so the
server's answers are seen exactly as a client would.  Pages: 2026-07-28/server/discover,
server/utilities/caching, basic/patterns/mrtr, server/utilities/logging,
basic/patterns/subscriptions.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_ref import types as t
from mcp_ref.examples.everything import make_server
from mcp_ref.server import CacheHint, Context, Server, elicitation, roots, sampling
from mcp_ref.trio import memory_channel_pair

from ._server_harness import connect

spec = pytest.mark.spec

VERSION = "2026-07-28"
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALL_CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {} if caps is None else caps,
        **extra,
    }


class Modern:
    """The raw client end: send a request, collect what comes back for it."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.next_id = 0
        self.inbox: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.channel.send(json.dumps(message).encode())

    async def start(self, method: str, params: dict[str, Any] | None = None, **meta_kw: Any) -> int:
        self.next_id += 1
        body = dict(params or {})
        body["_meta"] = {**meta(**meta_kw), **body.get("_meta", {})}
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": body})
        return self.next_id

    async def receive(self) -> dict[str, Any]:
        with trio.fail_after(5):
            message: dict[str, Any] = json.loads(await self.channel.receive())
        self.inbox.append(message)
        return message

    async def request(
        self, method: str, params: dict[str, Any] | None = None, **meta_kw: Any
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """``(the response, the notifications that came before it)``."""
        rid = await self.start(method, params, **meta_kw)
        notes = []
        while True:
            message = await self.receive()
            if message.get("id") == rid and "method" not in message:
                return message, notes
            notes.append(message)

    async def result(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        response, _ = await self.request(method, params, **kw)
        assert "result" in response, response
        return response["result"]

    async def error(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        response, _ = await self.request(method, params, **kw)
        assert "error" in response, response
        return response["error"]


@asynccontextmanager
async def modern(server: Server) -> AsyncIterator[Modern]:
    ours, theirs = memory_channel_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, theirs)
        yield Modern(ours)
        nursery.cancel_scope.cancel()


def greeter() -> Server:
    server = Server("greeter", "1.0", instructions="Say hello.")

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Hello, {(answer.content or {}).get('name')}!"

    return server


# ------------------------------------------------------------------------- discover


@spec(
    "2026-07-28/server/discover#discovery.1",
    "2026-07-28/server/discover#discoverresult.1",
    "2026-07-28/basic/versioning#protocol-version-negotiation.3",
)
async def test_discover_names_versions_capabilities_and_server() -> None:
    async with modern(greeter()) as client:
        result = await client.result("server/discover")
    assert result["resultType"] == "complete"
    assert result["supportedVersions"][0] == VERSION
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert "prompts" not in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "greeter",
        "version": "1.0",
    }
    assert result["instructions"] == "Say hello."
    assert result["ttlMs"] == 0 and result["cacheScope"] == "public"


@spec("2026-07-28/server/prompts#capabilities.1", "2026-07-28/server/tools#capabilities.2")
async def test_capabilities_match_handlers() -> None:
    server = Server("empty", "1")
    async with modern(server) as client:
        caps = (await client.result("server/discover"))["capabilities"]
        assert "tools" not in caps and "prompts" not in caps and "resources" not in caps
        for method in ("tools/list", "prompts/list", "resources/list"):
            assert (await client.error(method))["code"] == -32601
        server.add_prompt(lambda: "hi", name="p")
        assert "prompts" in (await client.result("server/discover"))["capabilities"]
        assert (await client.result("prompts/list"))["prompts"][0]["name"] == "p"


@spec(
    "2026-07-28/server/tools#capabilities.1",
    "2026-07-28/server/resources#capabilities.1",
    "2026-07-28/server/utilities/completion#capabilities.1",
    "2026-07-28/server/resources#capabilities.2",
    "2026-07-28/server/prompts#capabilities.2",
)
async def test_what_is_registered_is_declared_and_listed() -> None:
    server = Server("full", "1")
    server.add_tool(lambda: "x", name="x")
    server.add_resource("test://r", "v")
    server.add_prompt(lambda: "p", name="p")
    server.add_completion(prompt="p", argument="a", values=["one"])
    async with modern(server) as client:
        caps = (await client.result("server/discover"))["capabilities"]
        assert {"tools", "resources", "prompts", "completions"} <= set(caps)
        assert [r["uri"] for r in (await client.result("resources/list"))["resources"]] == [
            "test://r"
        ]
        server.add_prompt(lambda: "q", name="q")
        assert [p["name"] for p in (await client.result("prompts/list"))["prompts"]] == [
            "p",
            "q",
        ]
        server.add_resource("test://s", "w")
        listed = (await client.result("resources/list"))["resources"]
    assert [r["uri"] for r in listed] == ["test://r", "test://s"]


@spec(
    "2026-07-28/server/tools#tool.1",
    "2026-07-28/basic/index#schema-validation.1",
    "2026-07-28/basic/index#implementation-requirements.1",
)
async def test_a_hand_written_input_schema_is_a_valid_2020_12_object_schema() -> None:
    server = Server("schemas", "1")
    bad: Any
    for bad in ([], "object", {"type": "string"}, {"properties": {}}):
        with pytest.raises(ValueError, match="JSON Schema object"):
            server.add_tool(lambda **kw: "x", name="bad", input_schema=bad)
    with pytest.raises(ValueError, match="invalid input_schema"):
        server.add_tool(
            lambda **kw: "x",
            name="bad",
            input_schema={"type": "object", "properties": {"a": {"type": "nonsense"}}},
        )
    # No $schema: 2020-12, where prefixItems constrains the first item (draft-07 ignores it).
    pair = {"type": "array", "prefixItems": [{"type": "integer"}]}
    server.add_tool(
        lambda **kw: "ok", name="pair", input_schema={"type": "object", "properties": {"p": pair}}
    )
    async with modern(server) as client:
        good = await client.result("tools/call", {"name": "pair", "arguments": {"p": [1]}})
        bad = await client.result("tools/call", {"name": "pair", "arguments": {"p": ["x"]}})
    assert good.get("isError") is not True
    assert bad["isError"] is True


@spec("2026-07-28/basic/index#ref-resolution.1")
async def test_a_network_ref_is_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    fetched: list[Any] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **kw: fetched.append(a))
    server = Server("refs", "1")
    remote = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/a.json"}}}
    server.add_tool(lambda **kw: "ok", name="remote", input_schema=remote)
    local = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}},
        "$defs": {"n": {"type": "integer"}},
    }
    server.add_tool(lambda **kw: "ok", name="local", input_schema=local)
    async with modern(server) as client:
        response, _ = await client.request("tools/call", {"name": "remote", "arguments": {"a": 1}})
        good = await client.result("tools/call", {"name": "local", "arguments": {"a": 1}})
        bad = await client.result("tools/call", {"name": "local", "arguments": {"a": "x"}})
    assert fetched == []
    assert "error" in response or response["result"]["isError"] is True
    assert good.get("isError") is not True and bad["isError"] is True


@spec(
    "2026-07-28/basic/index#implementation-requirements.2",
    "2026-07-28/basic/index#implementation-requirements.3",
)
async def test_a_declared_dialect_is_used_and_an_unknown_one_refused() -> None:
    server = Server("dialects", "1")
    with pytest.raises(ValueError, match="unsupported JSON Schema dialect"):
        server.add_tool(
            lambda **kw: "x",
            name="mine",
            input_schema={"$schema": "https://example.com/my-dialect", "type": "object"},
        )
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"p": {"type": "array", "prefixItems": [{"type": "integer"}]}},
    }
    server.add_tool(lambda **kw: "ok", name="old", input_schema=draft7)
    async with modern(server) as client:
        done = await client.result("tools/call", {"name": "old", "arguments": {"p": ["x"]}})
    assert done.get("isError") is not True  # draft-07 has no prefixItems


@spec(
    "2026-07-28/server/tools#capabilities.3",
    "2026-07-28/server/prompts#capabilities.3",
    "2026-07-28/server/resources#capabilities.3",
)
async def test_every_connection_lists_the_same_sets() -> None:
    server = make_server()
    lists = ("tools/list", "prompts/list", "resources/list")

    async def names(client: Modern) -> list[Any]:
        out = []
        for method in lists:
            key = method.split("/")[0]
            out.append([x.get("name") for x in (await client.result(method))[key]])
        return out

    async with modern(server) as one, modern(server) as two:
        first = await names(one)
        await one.result("tools/call", {"name": "echo", "arguments": {"text": "e"}})
        asked = await one.result(
            "prompts/get", {"name": "test_input_required_result_prompt"}, caps=ALL_CAPS
        )
        assert asked["resultType"] == "input_required"
        assert await names(two) == first
        assert await names(one) == first


@spec(
    "2026-07-28/server/resources#error-handling.1",
    "2026-07-28/server/resources#error-handling.4",
)
async def test_reading_a_missing_resource_is_invalid_params() -> None:
    server = Server("res", "1")
    server.add_resource("test://r", "v")
    async with modern(server) as client:
        response, _ = await client.request("resources/read", {"uri": "test://none"})
    assert "result" not in response
    assert response["error"]["code"] == -32602


# -------------------------------------------------------------------------- caching


@spec("2026-07-28/server/utilities/caching#time-to-live-ttl-field.5")
async def test_cacheable_results_carry_hints() -> None:
    server = Server(
        "c", "1", cache=CacheHint(1000, "public"), cache_hints={"tools/list": CacheHint(5)}
    )
    server.add_tool(lambda: "x", name="x")
    server.add_resource("test://open", "hello")
    server.add_resource("test://mine", "secret", cache=CacheHint(7, "private"))
    server.add_resource_template("test://t/{id}", lambda id: id)
    server.add_prompt(lambda: "hi", name="p")
    async with modern(server) as client:
        tools = await client.result("tools/list")
        prompts = await client.result("prompts/list")
        resources = await client.result("resources/list")
        templates = await client.result("resources/templates/list")
        shared = await client.result("resources/read", {"uri": "test://open"})
        own = await client.result("resources/read", {"uri": "test://mine"})
    assert (tools["ttlMs"], tools["cacheScope"]) == (5, "public")
    for result in (prompts, resources, templates):
        assert (result["ttlMs"], result["cacheScope"]) == (1000, "public")
    assert (shared["ttlMs"], shared["cacheScope"]) == (1000, "private")  # reads default private
    assert (own["ttlMs"], own["cacheScope"]) == (7, "private")


def test_a_negative_ttl_is_refused() -> None:
    with pytest.raises(ValueError):
        CacheHint(-1)
    with pytest.raises(ValueError):
        CacheHint(0, "everyone")  # type: ignore[arg-type]


async def test_handshake_era_results_have_no_hints() -> None:
    server = greeter()
    async with connect(server) as client:
        listed = await client.request("tools/list")
    assert listed.ttl_ms is None and listed.cache_scope is None


# ----------------------------------------------------------------------- MRTR


async def _round_one(client: Modern, name: str = "greet", **kw: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.result(
        "tools/call", {"name": name, "arguments": {}}, caps=kw.pop("caps", ALL_CAPS), **kw
    )
    return result


@spec(
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.1",
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.11",
    "2026-07-28/basic/patterns/mrtr#multi-round-trip-requests.1",
)
async def test_elicit_answers_input_required_then_completes_on_retry() -> None:
    async with modern(greeter()) as client:
        first = await _round_one(client)
        assert first["resultType"] == "input_required"
        ask = first["inputRequests"]["user_name"]
        assert ask["method"] == "elicitation/create"
        assert ask["params"]["requestedSchema"] == NAME_SCHEMA
        assert isinstance(first["requestState"], str)
        assert "ttlMs" not in first  # interim results carry no caching hints
        done = await client.result(
            "tools/call",
            {
                "name": "greet",
                "arguments": {},
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": first["requestState"],
            },
            caps=ALL_CAPS,
        )
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "Hello, Ada!"


async def test_answers_of_earlier_rounds_come_back_without_asking_again() -> None:
    server = Server("multi", "1")
    runs: list[str] = []

    @server.tool()
    async def steps(ctx: Context) -> str:
        runs.append("run")
        name = await ctx.elicit("Step 1: name?", NAME_SCHEMA, key="step1")
        color = await ctx.elicit(
            "Step 2: color?",
            {"type": "object", "properties": {"color": {"type": "string"}}},
            key="step2",
        )
        roots_now = await ctx.list_roots()
        return f"{(name.content or {})['name']} likes {(color.content or {})['color']} in {len(roots_now)} roots"

    async with modern(server) as client:
        r1 = await _round_one(client, "steps")
        assert list(r1["inputRequests"]) == ["step1"]
        r2 = await client.result(
            "tools/call",
            {
                "name": "steps",
                "arguments": {},
                "inputResponses": {"step1": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": r1["requestState"],
            },
            caps=ALL_CAPS,
        )
        assert list(r2["inputRequests"]) == ["step2"]
        assert r2["requestState"] != r1["requestState"]
        r3 = await client.result(
            "tools/call",
            {
                "name": "steps",
                "arguments": {},
                "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}},
                "requestState": r2["requestState"],
            },
            caps=ALL_CAPS,
        )
        assert r3["inputRequests"] == {"roots-1": {"method": "roots/list"}}
        r4 = await client.result(
            "tools/call",
            {
                "name": "steps",
                "arguments": {},
                "inputResponses": {"roots-1": {"roots": [{"uri": "file:///a"}]}},
                "requestState": r3["requestState"],
            },
            caps=ALL_CAPS,
        )
    assert r4["content"][0]["text"] == "Ada likes blue in 1 roots"
    assert len(runs) == 4


async def test_ask_gathers_several_inputs_in_one_round() -> None:
    server = Server("many", "1")

    @server.tool()
    async def many(ctx: Context) -> str:
        got = await ctx.ask(
            {
                "user_name": elicitation("Name?", NAME_SCHEMA),
                "greeting": sampling("Generate a greeting", max_tokens=50),
                "client_roots": roots(),
            }
        )
        return f"{got['greeting'].content.text} {got['user_name'].content['name']}"

    async with modern(server) as client:
        first = await _round_one(client, "many")
        methods = {k: v["method"] for k, v in first["inputRequests"].items()}
        assert methods == {
            "user_name": "elicitation/create",
            "greeting": "sampling/createMessage",
            "client_roots": "roots/list",
        }
        done = await client.result(
            "tools/call",
            {
                "name": "many",
                "arguments": {},
                "inputResponses": {
                    "user_name": {"action": "accept", "content": {"name": "Ada"}},
                    "greeting": {
                        "role": "assistant",
                        "content": {"type": "text", "text": "Hello"},
                        "model": "m",
                    },
                    "client_roots": {"roots": []},
                },
                "requestState": first["requestState"],
            },
            caps=ALL_CAPS,
        )
    assert done["content"][0]["text"] == "Hello Ada"


@spec("2026-07-28/basic/patterns/mrtr#error-handling.4")
async def test_missing_answers_are_asked_again() -> None:
    async with modern(greeter()) as client:
        again = await client.result(
            "tools/call",
            {
                "name": "greet",
                "arguments": {},
                "inputResponses": {"wrong_key": {"action": "accept", "content": {}}},
            },
            caps=ALL_CAPS,
        )
    assert again["resultType"] == "input_required"
    assert list(again["inputRequests"]) == ["user_name"]


@spec("2026-07-28/basic/patterns/mrtr#error-handling.3")
async def test_unknown_answers_are_ignored() -> None:
    async with modern(greeter()) as client:
        done = await client.result(
            "tools/call",
            {
                "name": "greet",
                "arguments": {},
                "inputResponses": {
                    "user_name": {"action": "accept", "content": {"name": "Bo"}},
                    "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
                },
            },
            caps=ALL_CAPS,
        )
    assert done["content"][0]["text"] == "Hello, Bo!"


@spec("2026-07-28/basic/patterns/mrtr#error-handling.1")
async def test_an_answer_of_the_wrong_kind_is_invalid_params() -> None:
    async with modern(greeter()) as client:
        error = await client.error(
            "tools/call",
            {"name": "greet", "arguments": {}, "inputResponses": {"user_name": {"roots": []}}},
            caps=ALL_CAPS,
        )
    assert error["code"] == -32602


@spec(
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.6",
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.7",
)
async def test_a_tampered_or_forged_state_is_refused() -> None:
    other = greeter()
    async with modern(other) as client:
        foreign = (await _round_one(client))["requestState"]
    async with modern(greeter()) as client:
        state = (await _round_one(client))["requestState"]
        for bad in (state + "-TAMPERED", foreign, "not-a-state"):
            error = await client.error(
                "tools/call",
                {
                    "name": "greet",
                    "arguments": {},
                    "inputResponses": {"user_name": {"action": "accept", "content": {"name": "X"}}},
                    "requestState": bad,
                },
                caps=ALL_CAPS,
            )
            assert error["code"] == -32602


@spec("2026-07-28/basic/index#statelessness.5")
async def test_instances_sharing_a_key_accept_each_others_states() -> None:
    key = b"a shared key of 32 bytes........"
    first, second = greeter(), greeter()
    first._state_key = second._state_key = key  # as Server(state_key=key) does
    assert Server("k", "1", state_key=key)._state_key == key
    async with modern(first) as client:
        state = (await _round_one(client))["requestState"]
    async with modern(second) as client:
        done = await client.result(
            "tools/call",
            {
                "name": "greet",
                "arguments": {},
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Cy"}}},
                "requestState": state,
            },
            caps=ALL_CAPS,
        )
    assert done["content"][0]["text"] == "Hello, Cy!"


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9")
async def test_a_state_replayed_on_another_request_or_late_is_refused() -> None:
    server = greeter()

    @server.tool()
    async def other(ctx: Context, n: int = 0) -> str:
        await ctx.elicit("?", NAME_SCHEMA, key="user_name")
        return "other"

    now = [1_800_000_000.0]
    server.clock = lambda: now[0]
    answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
    async with modern(server) as client:
        state = (await _round_one(client, "other"))["requestState"]
        replayed = await client.error(
            "tools/call",
            {"name": "greet", "arguments": {}, "inputResponses": answer, "requestState": state},
            caps=ALL_CAPS,
        )
        assert replayed["code"] == -32602
        other_args = await client.error(
            "tools/call",
            {
                "name": "other",
                "arguments": {"n": 1},
                "inputResponses": answer,
                "requestState": state,
            },
            caps=ALL_CAPS,
        )
        assert other_args["code"] == -32602
        now[0] += server.state_ttl + 2
        late = await client.error(
            "tools/call",
            {"name": "other", "arguments": {}, "inputResponses": answer, "requestState": state},
            caps=ALL_CAPS,
        )
        assert late["code"] == -32602 and late["data"]["reason"] == "expired"


async def test_rounds_are_bounded() -> None:
    server = Server("nag", "1", max_input_rounds=2)

    @server.tool()
    async def nag(ctx: Context) -> str:
        await ctx.elicit("?", NAME_SCHEMA, key="never")
        return "no"

    async with modern(server) as client:
        state = (await _round_one(client, "nag"))["requestState"]
        second = await client.result(
            "tools/call", {"name": "nag", "arguments": {}, "requestState": state}, caps=ALL_CAPS
        )
        error = await client.error(
            "tools/call",
            {"name": "nag", "arguments": {}, "requestState": second["requestState"]},
            caps=ALL_CAPS,
        )
    assert error["code"] == -32602


@spec(
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.12",
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.13",
)
async def test_input_the_client_cannot_give_is_missing_capability() -> None:
    async with modern(greeter()) as client:
        error = await client.error(
            "tools/call", {"name": "greet", "arguments": {}}, caps={"sampling": {}}
        )
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"elicitation": {}}


@spec(
    "2026-07-28/client/elicitation#capabilities.3",
    "2026-07-28/client/sampling#tools-in-sampling.2",
    "2026-07-28/basic/index#_meta.7",
)
async def test_url_elicitation_and_sampling_with_tools_need_their_sub_capabilities() -> None:
    server = Server("modes", "1")

    @server.tool()
    async def visit(ctx: Context) -> str:
        url = t.ElicitRequestURLParams(message="Sign in", url="https://example.com/x")
        await ctx.ask({"u": t.ElicitRequest(params=url)})
        return "no"

    @server.tool()
    async def plan(ctx: Context) -> str:
        tool = t.Tool(name="search", input_schema={"type": "object"})
        await ctx.ask({"s": sampling("Plan", tools=[tool])})
        return "no"

    async with modern(server) as client:
        form_only = {"elicitation": {"form": {}}}
        error = await client.error("tools/call", {"name": "visit", "arguments": {}}, caps=form_only)
        assert (error["code"], error["data"]) == (
            -32021,
            {"requiredCapabilities": {"elicitation": {"url": {}}}},
        )
        url_ok = {"elicitation": {"url": {}}}
        asked = await _round_one(client, "visit", caps=url_ok)
        assert asked["inputRequests"]["u"]["params"]["mode"] == "url"
        error = await client.error(
            "tools/call", {"name": "plan", "arguments": {}}, caps={"sampling": {}}
        )
        assert (error["code"], error["data"]) == (
            -32021,
            {"requiredCapabilities": {"sampling": {"tools": {}}}},
        )
        asked = await _round_one(client, "plan", caps={"sampling": {"tools": {}}})
    assert asked["inputRequests"]["s"]["params"]["tools"][0]["name"] == "search"


@spec("2026-07-28/basic/index#statelessness.1", "2026-07-28/basic/index#_meta.6")
async def test_each_request_is_judged_by_its_own_capabilities() -> None:
    async with modern(greeter()) as client:
        first = await _round_one(client)
        assert first["resultType"] == "input_required"
        # The same connection, a request declaring less: nothing carries over.
        error = await client.error(
            "tools/call", {"name": "greet", "arguments": {}}, caps={"sampling": {}}
        )
        assert (error["code"], error["data"]) == (
            -32021,
            {"requiredCapabilities": {"elicitation": {}}},
        )
        again = await _round_one(client)
    assert again["resultType"] == "input_required"


@spec("2026-07-28/server/utilities/caching#cache-key.2")
async def test_prompts_and_reads_ask_too() -> None:
    server = Server("p", "1")

    @server.prompt()
    async def about(ctx: Context) -> str:
        got = await ctx.elicit("Context?", NAME_SCHEMA, key="user_context")
        return f"About {(got.content or {})['name']}"

    @server.resource("test://who", cache=CacheHint(60_000, "public"))
    async def who(ctx: Context) -> str:
        return (await ctx.list_roots(key="r"))[0].uri

    async with modern(server) as client:
        first = await client.result("prompts/get", {"name": "about"}, caps=ALL_CAPS)
        assert first["resultType"] == "input_required"
        done = await client.result(
            "prompts/get",
            {
                "name": "about",
                "inputResponses": {"user_context": {"action": "accept", "content": {"name": "Z"}}},
                "requestState": first["requestState"],
            },
            caps=ALL_CAPS,
        )
        assert done["messages"][0]["content"]["text"] == "About Z"
        read = await client.result("resources/read", {"uri": "test://who"}, caps=ALL_CAPS)
        assert read["inputRequests"] == {"r": {"method": "roots/list"}}
        answered = await client.result(
            "resources/read",
            {
                "uri": "test://who",
                "inputResponses": {"r": {"roots": [{"uri": "file:///w"}]}},
                "requestState": read["requestState"],
            },
            caps=ALL_CAPS,
        )
        assert answered["contents"][0]["text"] == "file:///w"
        # A retried result is not to be cached, whatever the resource's own hints.
        assert (answered["ttlMs"], answered["cacheScope"]) == (0, "private")


async def test_the_same_handler_sends_requests_in_the_handshake_era() -> None:
    async with connect(
        greeter(),
        responders={
            "elicitation/create": lambda p: t.ElicitResult(action="accept", content={"name": "Di"})
        },
    ) as client:
        result = await client.call_tool("greet")
    assert result.content[0].text == "Hello, Di!"  # type: ignore[union-attr]


# -------------------------------------------------------------------------- logging


def chatty(**kw: Any) -> Server:
    server = Server("chatty", "1", **kw)

    @server.tool()
    async def talk(ctx: Context) -> str:
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, f"a {level} message")
        return "done"

    return server


@spec("2026-07-28/server/utilities/logging#per-request-log-level.1")
async def test_no_log_messages_without_a_log_level() -> None:
    async with modern(chatty()) as client:
        response, notes = await client.request("tools/call", {"name": "talk", "arguments": {}})
    assert response["result"]["content"][0]["text"] == "done"
    assert [n for n in notes if n.get("method") == "notifications/message"] == []


@spec("2026-07-28/server/utilities/logging#capabilities.1")
async def test_a_server_without_the_logging_capability_sends_no_log_messages() -> None:
    level = {"io.modelcontextprotocol/logLevel": "debug"}
    async with modern(chatty(logging=False)) as client:
        discovered = await client.result("server/discover")
        response, notes = await client.request(
            "tools/call", {"name": "talk", "arguments": {}, "_meta": level}
        )
    assert "logging" not in discovered["capabilities"]
    assert response["result"]["content"][0]["text"] == "done"
    assert [n for n in notes if n.get("method") == "notifications/message"] == []


@spec("2026-07-28/server/utilities/logging#per-request-log-level.2")
async def test_log_messages_at_or_above_the_requested_level() -> None:
    level = {"io.modelcontextprotocol/logLevel": "warning"}
    async with modern(chatty()) as client:
        _, notes = await client.request(
            "tools/call", {"name": "talk", "arguments": {}, "_meta": level}
        )
    assert [n["params"]["level"] for n in notes if n["method"] == "notifications/message"] == [
        "warning",
        "error",
    ]


# -------------------------------------------------------------------- subscriptions


async def _listen(client: Modern, notifications: dict[str, Any]) -> int:
    return await client.start("subscriptions/listen", {"notifications": notifications})


@spec(
    "2026-07-28/basic/patterns/subscriptions#acknowledgment.1",
    "2026-07-28/basic/patterns/subscriptions#opening-a-stream.1",
    "2026-07-28/server/tools#list-changed-notification.1",
    "2026-07-28/basic/index#_meta.11",
)
async def test_listen_acknowledges_then_sends_what_the_filter_asks() -> None:
    server = Server("subs", "1")
    server.add_tool(lambda: "x", name="x")
    server.add_prompt(lambda: "p", name="p")
    server.add_resource("test://watched", "v1")
    async with modern(server) as client:
        rid = await _listen(
            client,
            {"toolsListChanged": True, "resourceSubscriptions": ["test://watched"]},
        )
        ack = await client.receive()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": rid}
        assert ack["params"]["notifications"] == {
            "toolsListChanged": True,
            "resourceSubscriptions": ["test://watched"],
        }
        server.add_prompt(lambda: "q", name="q")  # not asked for: nothing sent
        server.add_tool(lambda: "y", name="y")
        changed = await client.receive()
        assert changed["method"] == "notifications/tools/list_changed"
        assert changed["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": rid}
        server.resource_updated("test://other")
        server.resource_updated("test://watched")
        updated = await client.receive()
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"] == {
            "uri": "test://watched",
            "_meta": {"io.modelcontextprotocol/subscriptionId": rid},
        }
        await client.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": rid},
            }
        )
        # The cancelled listen is not answered; the next request is.
        assert (await client.result("tools/list"))["tools"][0]["name"] == "x"
        server.add_tool(lambda: "z", name="z")
        assert (await client.result("server/discover"))["resultType"] == "complete"
    assert [m.get("method") for m in client.inbox].count("notifications/tools/list_changed") == 1


async def test_listen_acknowledges_only_what_the_server_offers() -> None:
    server = Server("tools-only", "1")
    server.add_tool(lambda: "x", name="x")
    async with modern(server) as client:
        await _listen(client, {"promptsListChanged": True, "toolsListChanged": True})
        ack = await client.receive()
    assert ack["params"]["notifications"] == {"toolsListChanged": True}


# ---------------------------------------------------- the everything server's tools


def _answer(request: dict[str, Any]) -> Any:
    """A conformance client's answer to one input request."""
    if request["method"] == "elicitation/create":
        props = request["params"]["requestedSchema"]["properties"]
        fill = {"string": "Ada", "boolean": True}
        if not all(v.get("type") in fill and "enum" not in v for v in props.values()):
            return {"action": "decline"}
        return {"action": "accept", "content": {k: fill[v["type"]] for k, v in props.items()}}
    if request["method"] == "sampling/createMessage":
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    return {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


@pytest.mark.parametrize(
    ("tool", "rounds", "expect"),
    [
        ("test_input_required_result_elicitation", 1, "Hello, Ada!"),
        ("test_input_required_result_sampling", 1, "LLM response: Paris"),
        ("test_input_required_result_list_roots", 1, "Roots: file:///test/root"),
        ("test_input_required_result_request_state", 1, "state-ok"),
        ("test_input_required_result_tampered_state", 1, "Confirmed"),
        ("test_input_required_result_multiple_inputs", 1, "Paris Ada (1 roots)"),
        ("test_input_required_result_multi_round", 2, "Ada likes Ada."),
        ("test_input_required_result_capabilities", 1, "Received: "),
        ("test_streaming_elicitation", 1, "Confirmed"),
        ("test_missing_capability", 1, "Paris"),
    ],
)
async def test_everything_diagnostic_tools_round_trip(tool: str, rounds: int, expect: str) -> None:
    async with modern(make_server()) as client:
        params: dict[str, Any] = {"name": tool, "arguments": {}}
        for _ in range(rounds):
            asked = await client.result("tools/call", params, caps=ALL_CAPS)
            assert asked["resultType"] == "input_required", asked
            params = {
                **params,
                "inputResponses": {k: _answer(r) for k, r in asked["inputRequests"].items()},
                "requestState": asked["requestState"],
            }
        done = await client.result("tools/call", params, caps=ALL_CAPS)
    assert done["resultType"] == "complete" and not done.get("isError"), done
    assert expect in done["content"][0]["text"]


async def test_everything_refuses_what_the_client_did_not_declare() -> None:
    async with modern(make_server()) as client:
        error = await client.error("tools/call", {"name": "test_missing_capability"})
        assert error["code"] == -32021
        assert error["data"]["requiredCapabilities"] == {"sampling": {}}
        only = await client.result(
            "tools/call",
            {"name": "test_input_required_result_capabilities"},
            caps={"sampling": {}},
        )
        assert [r["method"] for r in only["inputRequests"].values()] == ["sampling/createMessage"]
        _, notes = await client.request("tools/call", {"name": "test_logging_tool"})
        assert not any(n.get("method") == "notifications/message" for n in notes)
        missing = await client.error("resources/read", {"uri": "test://none"})
        assert missing["code"] == -32602 and missing["data"] == {"uri": "test://none"}


@spec("2026-07-28/server/prompts#list-changed-notification.1")
async def test_everything_prompt_asks_and_triggers_reach_listeners() -> None:
    async with modern(make_server()) as client:
        asked = await client.result(
            "prompts/get", {"name": "test_input_required_result_prompt"}, caps=ALL_CAPS
        )
        assert list(asked["inputRequests"]) == ["user_context"]
        rid = await _listen(client, {"toolsListChanged": True, "promptsListChanged": True})
        assert (await client.receive())["method"] == "notifications/subscriptions/acknowledged"
        await client.start("tools/call", {"name": "test_trigger_tool_change"})
        await client.start("tools/call", {"name": "test_trigger_prompt_change"})
        seen = [(await client.receive()) for _ in range(4)]
    changes = {m["method"] for m in seen if m.get("method", "").endswith("list_changed")}
    assert changes == {"notifications/tools/list_changed", "notifications/prompts/list_changed"}
    for m in seen:
        if "method" in m:
            assert m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == rid


@spec("2026-07-28/server/utilities/logging#per-request-log-level.1")
async def test_forwarded_python_logging_follows_the_request_level() -> None:
    import logging

    from mcp_ref.server import ClientLogHandler

    forward = ClientLogHandler()
    logger = logging.getLogger("tests.modern.forward")
    logger.addHandler(forward)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    server = Server("fwd", "1")

    @server.tool()
    async def work() -> str:
        logger.debug("a debug record")
        logger.error("an error record")
        return "ok"

    try:
        async with modern(server) as client:
            _, silent = await client.request("tools/call", {"name": "work"})
            _, loud = await client.request(
                "tools/call",
                {"name": "work", "_meta": {"io.modelcontextprotocol/logLevel": "error"}},
            )
            _, all_of_it = await client.request(
                "tools/call",
                {"name": "work", "_meta": {"io.modelcontextprotocol/logLevel": "debug"}},
            )
    finally:
        logger.removeHandler(forward)
    assert [n for n in silent if n.get("method") == "notifications/message"] == []
    assert [n["params"]["level"] for n in loud if n["method"] == "notifications/message"] == [
        "error"
    ]
    levels = [n["params"]["level"] for n in all_of_it if n["method"] == "notifications/message"]
    assert levels == ["debug", "error"]  # below the server's default: the request decides


def test_tool_input_schema_is_the_listed_schema() -> None:
    server = make_server()
    schema = server.tool_input_schema("test_header_mirroring")
    assert schema is not None
    assert schema["properties"]["region"]["x-mcp-header"] == "Region"
    assert server.tool_input_schema("no such tool") is None


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9")
async def test_a_state_is_bound_to_its_caller() -> None:
    callers = iter(["alice", "bob"])

    class PerCaller(Server):
        def principal_of(self, ctx: Any) -> str | None:
            return next(callers)

    server = PerCaller("who", "1")

    @server.tool()
    async def greet(ctx: Context) -> str:
        await ctx.elicit("?", NAME_SCHEMA, key="user_name")
        return "hi"

    answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
    async with modern(server) as client:
        state = (await _round_one(client))["requestState"]  # issued to alice
        error = await client.error(
            "tools/call",
            {"name": "greet", "arguments": {}, "inputResponses": answer, "requestState": state},
            caps=ALL_CAPS,
        )  # presented by bob
    assert error["code"] == -32602 and error["data"]["reason"] == "other principal"


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.14")
async def test_an_ask_left_unanswered_leaves_nothing_waiting() -> None:
    server = Server("w", "1")
    ended: list[str] = []

    @server.tool()
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("?", NAME_SCHEMA, key="k")
            return "x"
        finally:
            ended.append("unwound")

    async with modern(server) as client:
        first = await _round_one(client, "ask")
        assert first["resultType"] == "input_required"
        # The handler has already returned: no task waits for an answer or a retry.
        assert ended == ["unwound"]
        assert (await client.result("tools/list"))["tools"][0]["name"] == "ask"
    assert ended == ["unwound"]


@spec(
    "2026-07-28/client/elicitation#statefulness.3",
    "2026-07-28/client/elicitation#security-considerations.1",
)
async def test_a_state_is_bound_to_the_verified_token_subject() -> None:
    from mcp_ref._http_auth import CALLER, Caller
    from mcp_ref._oauth_verify import Identity

    def user(subject: str, client_id: str = "same-client") -> Caller:
        identity = Identity(
            subject=subject,
            client_id=client_id,
            scopes=frozenset(),
            expires_at=None,
            audience=(),
            issuer="https://as.example",
        )
        return Caller(identity, [])

    server = greeter()
    answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}

    async def retry(subject: str, state: str, client_id: str = "same-client") -> dict[str, Any]:
        token = CALLER.set(user(subject, client_id))
        try:
            async with modern(server) as client:
                response, _ = await client.request(
                    "tools/call",
                    {
                        "name": "greet",
                        "arguments": {},
                        "inputResponses": answer,
                        "requestState": state,
                    },
                    caps=ALL_CAPS,
                )
        finally:
            CALLER.reset(token)
        return response

    token = CALLER.set(user("alice"))
    try:
        async with modern(server) as client:
            state = (await _round_one(client))["requestState"]
    finally:
        CALLER.reset(token)
    refused = await retry("bob", state)  # the same client, another user
    assert refused["error"]["data"]["reason"] == "other principal"
    refused = await retry("alice", state, "other-client")  # the same user, another client
    assert refused["error"]["data"]["reason"] == "other principal"
    done = await retry("alice", state)
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.3")
async def test_an_input_id_is_asked_once_per_request() -> None:
    server = Server("twice", "1")

    @server.tool()
    async def twice(ctx: Context) -> str:
        await ctx.ask({"a": roots()})
        await ctx.ask({"a": roots()})
        return "no"

    async with modern(server) as client:
        first = await _round_one(client, "twice")
        done = await client.result(
            "tools/call",
            {
                "name": "twice",
                "arguments": {},
                "inputResponses": {"a": {"roots": []}},
                "requestState": first["requestState"],
            },
            caps=ALL_CAPS,
        )
    assert done["isError"] is True
    assert "asked for twice" in done["content"][0]["text"]


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.4")
async def test_only_the_three_input_requests_can_be_asked() -> None:
    server = Server("ping", "1")

    @server.tool()
    async def pinger(ctx: Context) -> str:
        await ctx.ask({"p": {"method": "ping"}})
        return "no"

    async with modern(server) as client:
        done = await client.result("tools/call", {"name": "pinger", "arguments": {}}, caps=ALL_CAPS)
    assert done.get("resultType") != "input_required" and "inputRequests" not in done
    assert done["isError"] is True
    assert "not an input request (dict)" in done["content"][0]["text"]


@spec(
    "2026-07-28/basic/patterns/subscriptions#graceful-closure.1",
    "2026-07-28/basic/patterns/cancellation#cancellation.2",
)
async def test_ending_subscriptions_answers_each_listen() -> None:
    server = Server("closing", "1")
    server.add_tool(lambda: "x", name="x")
    async with modern(server) as client:
        first = await _listen(client, {"toolsListChanged": True})
        second = await _listen(client, {"toolsListChanged": True})
        acks = [await client.receive() for _ in range(2)]
        assert {a["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] for a in acks} == {
            first,
            second,
        }
        server.end_subscriptions()
        ended = [await client.receive() for _ in range(4)]
        cancels = [m for m in ended if m.get("method") == "notifications/cancelled"]
        answers = [m for m in ended if "result" in m]
        for cancel in cancels:  # each listen's cancellation comes before its answer
            rid = cancel["params"]["requestId"]
            assert ended.index(cancel) < next(i for i, m in enumerate(ended) if m.get("id") == rid)
        # A listen opened afterwards stays open.
        third = await _listen(client, {"toolsListChanged": True})
        assert (await client.receive())["method"] == "notifications/subscriptions/acknowledged"
        server.add_tool(lambda: "y", name="y")
        changed = await client.receive()
    assert sorted(a["id"] for a in answers) == [first, second]
    assert sorted(c["params"]["requestId"] for c in cancels) == [first, second]
    for answer in answers:
        assert answer["result"] == {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": answer["id"]},
        }
    assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == third


_RESULTS = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}


def _validator(definition: str) -> Any:
    import jsonschema

    from ._spec import schema_for

    schema = schema_for(VERSION)
    root = {**schema, "$ref": f"#/$defs/{definition}"}
    return jsonschema.validators.validator_for(schema)(root)


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.4")
async def test_every_modern_message_validates_against_the_2026_schema() -> None:
    server = make_server()
    methods: dict[int, str] = {}
    async with modern(server) as client:

        async def run(method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
            response, _ = await client.request(method, params, **kw)
            methods[response["id"]] = method
            return response

        await run("server/discover")
        tools = (await run("tools/list"))["result"]["tools"]
        for method in ("prompts/list", "resources/list", "resources/templates/list"):
            await run(method)
        for uri in ("test://static-text", "test://static-binary", "test://template/1/data"):
            await run("resources/read", {"uri": uri})
        await run("resources/read", {"uri": "test://none"})
        level = {"io.modelcontextprotocol/logLevel": "debug", "progressToken": "t"}
        arguments = {
            "test_sampling": {"prompt": "p"},
            "test_elicitation": {"message": "m"},
            "echo": {"text": "e"},
            "add": {"a": 1, "b": 2},
            "get_weather": {"city": "Chicago"},
            "update_watched_resource": {"text": "new"},
            "json_schema_2020_12_tool": {"name": "n", "email": "e"},
            "test_header_mirroring": {"region": "eu"},
        }
        for tool in tools:
            if tool["name"] in ("sha256", "long_running_operation", "test_reconnection"):
                continue
            params: dict[str, Any] = {
                "name": tool["name"],
                "arguments": arguments.get(tool["name"], {}),
                "_meta": level,
            }
            for _ in range(3):
                response = await run("tools/call", params, caps=ALL_CAPS)
                result = response.get("result", {})
                if result.get("resultType") != "input_required":
                    break
                params = {
                    **params,
                    "inputResponses": {k: _answer(r) for k, r in result["inputRequests"].items()},
                    "requestState": result["requestState"],
                }
        await run("prompts/get", {"name": "test_input_required_result_prompt"}, caps=ALL_CAPS)
        await run("prompts/get", {"name": "test_prompt_with_image"})
        await run(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "t"},
            },
        )
        listen = await client.start(
            "subscriptions/listen",
            {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://x"]}},
        )
        methods[listen] = "subscriptions/listen"
        await client.receive()
        server.add_tool(lambda: "z", name="z")
        await client.receive()
        server.end_subscriptions()
        await client.receive()  # notifications/cancelled
        await client.receive()  # the listen's result
    message = _validator("JSONRPCMessage")
    notification = _validator("ServerNotification")
    results = {name: _validator(name) for name in {*_RESULTS.values(), "InputRequiredResult"}}
    kinds: set[str] = set()
    for sent in client.inbox:
        message.validate(sent)
        if "method" in sent:
            notification.validate(sent)
            kinds.add(sent["method"])
        elif "result" in sent:
            result = sent["result"]
            name = (
                "InputRequiredResult"
                if result.get("resultType") == "input_required"
                else _RESULTS[methods[sent["id"]]]
            )
            results[name].validate(result)
            kinds.add(name)
    assert {
        "notifications/message",
        "notifications/progress",
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
        "notifications/cancelled",
        "InputRequiredResult",
        "DiscoverResult",
        "SubscriptionsListenResult",
    } <= kinds


async def test_a_sync_tool_in_a_worker_thread_asks_too() -> None:
    server = Server("sync", "1")

    @server.tool()
    def blocking_greet(ctx: Context) -> str:
        answer = trio.from_thread.run(ctx.elicit, "Name?", NAME_SCHEMA)
        return f"Hi {(answer.content or {})['name']}"

    async with modern(server) as client:
        first = await _round_one(client, "blocking_greet")
        assert list(first["inputRequests"]) == ["elicitation-1"]
        done = await client.result(
            "tools/call",
            {
                "name": "blocking_greet",
                "arguments": {},
                "inputResponses": {
                    "elicitation-1": {"action": "accept", "content": {"name": "Ed"}}
                },
                "requestState": first["requestState"],
            },
            caps=ALL_CAPS,
        )
    assert done["content"][0]["text"] == "Hi Ed"


@spec(
    "2026-07-28/server/tools#x-mcp-header.1",
    "2026-07-28/server/tools#x-mcp-header.2",
    "2026-07-28/server/tools#x-mcp-header.3",
    "2026-07-28/server/tools#x-mcp-header.4",
    "2026-07-28/server/tools#x-mcp-header.5",
    "2026-07-28/server/tools#x-mcp-header.7",
    "2026-07-28/basic/transports/streamable-http#schema-extension.1",
    "2026-07-28/basic/transports/streamable-http#schema-extension.2",
    "2026-07-28/basic/transports/streamable-http#schema-extension.3",
    "2026-07-28/basic/transports/streamable-http#schema-extension.4",
    "2026-07-28/basic/transports/streamable-http#schema-extension.5",
    "2026-07-28/basic/transports/streamable-http#schema-extension.7",
)
@pytest.mark.parametrize(
    ("properties", "words"),
    [
        ({"a": {"type": "string", "x-mcp-header": ""}}, "not an HTTP token"),
        ({"a": {"type": "string", "x-mcp-header": "Two Words"}}, "not an HTTP token"),
        ({"a": {"type": "string", "x-mcp-header": "Line\r\nBreak"}}, "not an HTTP token"),
        (
            {
                "a": {"type": "string", "x-mcp-header": "Region"},
                "b": {"type": "string", "x-mcp-header": "REGION"},
            },
            "appears twice",
        ),
        ({"a": {"type": "object", "x-mcp-header": "Blob"}}, "of type 'object'"),
        (
            {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}},
            "outside a chain of properties",
        ),
    ],
)
def test_a_tool_with_a_bad_header_annotation_is_refused(
    properties: dict[str, Any], words: str
) -> None:
    server = Server("headers", "1")
    schema = {"type": "object", "properties": properties}
    with pytest.raises(ValueError, match=words):
        server.add_tool(lambda **kw: "x", name="bad", input_schema=schema)
    good = {"type": "object", "properties": {"a": {"type": "integer", "x-mcp-header": "A"}}}
    server.add_tool(lambda **kw: "x", name="good", input_schema=good)


@spec(
    "2026-07-28/server/utilities/caching#interaction-with-pagination.5",
    "2026-07-28/server/utilities/caching#interaction-with-pagination.6",
)
async def test_every_page_of_a_list_has_the_same_scope() -> None:
    server = Server("pages", "1", page_size=1, cache_hints={"tools/list": CacheHint(9, "private")})
    server.add_tool(lambda: "a", name="a")
    server.add_tool(lambda: "b", name="b")
    async with modern(server) as client:
        first = await client.result("tools/list")
        second = await client.result("tools/list", {"cursor": first["nextCursor"]})
    assert [t["name"] for t in first["tools"] + second["tools"]] == ["a", "b"]
    assert first["cacheScope"] == second["cacheScope"] == "private"
    assert first["ttlMs"] == second["ttlMs"] == 9


async def test_asks_in_a_handler_nursery_are_answered_input_required() -> None:
    server = Server("nursery", "1")

    @server.tool()
    async def parallel(ctx: Context) -> str:
        found: dict[str, Any] = {}

        async def ask(key: str) -> None:
            found[key] = await ctx.elicit(key, NAME_SCHEMA, key=key)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "a")
            nursery.start_soon(ask, "b")
        return "both"

    async with modern(server) as client:
        first = await _round_one(client, "parallel")
    assert first["resultType"] == "input_required"
    assert set(first["inputRequests"]) <= {"a", "b"} and first["inputRequests"]


@spec(
    "2026-07-28/server/tools#security-considerations.1",
    "2026-07-28/server/utilities/completion#security.1",
)
async def test_modern_requests_are_rate_limited_per_caller() -> None:
    from mcp_ref.server import RateLimit

    limit = RateLimit(per_second=0.001, burst=2)
    server = Server("limited", "1", rate_limits={"tools/call": limit, "completion/complete": limit})
    server.add_tool(lambda: "x", name="x")
    server.add_prompt(lambda topic: f"about {topic}", name="p")

    @server.completion(prompt="p", argument="topic")
    def topics(value: str) -> list[str]:
        return ["trio"]

    complete = {
        "ref": {"type": "ref/prompt", "name": "p"},
        "argument": {"name": "topic", "value": "t"},
    }
    # Two connections, as two HTTP POSTs would be: one caller, one set of buckets.
    async with modern(server) as one, modern(server) as two:
        for method, params in (("tools/call", {"name": "x"}), ("completion/complete", complete)):
            assert "result" in (await one.request(method, params))[0]
            assert "result" in (await two.request(method, params))[0]
            refused = await one.error(method, params)
            assert refused["code"] == -32603 and "rate limit" in refused["message"]


@spec(
    "2026-07-28/server/tools#security-considerations.1",
    "2026-07-28/server/utilities/completion#security.1",
)
async def test_modern_tool_and_completion_inputs_are_validated() -> None:
    from mcp_ref.server import MAX_COMPLETION_INPUT

    server = Server("checked", "1")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    server.add_prompt(lambda topic: f"about {topic}", name="p")

    @server.completion(prompt="p", argument="topic")
    def topics(value: str) -> list[str]:
        return ["trio"]

    async with modern(server) as client:
        bad = await client.result("tools/call", {"name": "add", "arguments": {"a": "one"}})
        assert bad["isError"] is True and "Invalid arguments" in bad["content"][0]["text"]
        long = {
            "ref": {"type": "ref/prompt", "name": "p"},
            "argument": {"name": "topic", "value": "x" * (MAX_COMPLETION_INPUT + 1)},
        }
        assert (await client.error("completion/complete", long))["code"] == -32602


async def test_listen_acknowledges_only_resources_the_server_has() -> None:
    server = Server("res", "1", max_subscriptions=3)
    server.add_resource("test://a", "a")
    server.add_resource_template("test://t/{id}", lambda id: id)
    async with modern(server) as client:
        await _listen(
            client, {"resourceSubscriptions": ["test://a", "test://gone", "test://t/1", "test://a"]}
        )
        ack = await client.receive()
        too_many = await client.error(
            "subscriptions/listen",
            {"notifications": {"resourceSubscriptions": [f"test://{n}" for n in range(4)]}},
        )
        bad = await client.error(
            "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["no scheme"]}}
        )
    assert ack["params"]["notifications"] == {"resourceSubscriptions": ["test://a", "test://t/1"]}
    assert too_many["code"] == -32602 and bad["code"] == -32602


async def test_answers_too_large_to_carry_end_the_rounds() -> None:
    server = Server("big", "1")

    @server.tool()
    async def two_steps(ctx: Context) -> str:
        await ctx.sample("Write a lot", key="essay")
        await ctx.list_roots(key="then")
        return "done"

    essay = {"role": "assistant", "content": {"type": "text", "text": "x" * 300_000}, "model": "m"}
    async with modern(server) as client:
        error = await client.error(
            "tools/call",
            {"name": "two_steps", "arguments": {}, "inputResponses": {"essay": essay}},
            caps=ALL_CAPS,
        )
    assert error["code"] == -32603 and "cannot ask for more input" in error["message"]


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9")
async def test_a_state_is_bound_to_the_verified_token_holder() -> None:
    from mcp_ref._http_auth import CALLER, Caller
    from mcp_ref._oauth_verify import Identity

    def caller(subject: str) -> Caller:
        who = Identity(
            subject=subject,
            client_id="app",
            scopes=frozenset(),
            expires_at=None,
            audience=(),
            issuer="https://as.example",
        )
        return Caller(who, [])

    server = greeter()
    answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
    retry = {"name": "greet", "arguments": {}, "inputResponses": answer}
    token = CALLER.set(caller("alice"))
    try:
        async with modern(server) as alice:
            state = (await _round_one(alice))["requestState"]
            CALLER.set(caller("bob"))
            async with modern(server) as bob:
                stolen = await bob.error(
                    "tools/call", {**retry, "requestState": state}, caps=ALL_CAPS
                )
            own = await alice.result("tools/call", {**retry, "requestState": state}, caps=ALL_CAPS)
    finally:
        CALLER.reset(token)
    assert stolen["code"] == -32602 and stolen["data"]["reason"] == "other principal"
    assert own["content"][0]["text"] == "Hello, Ada!"
