"""server/resources: listing, reading, templates, URI checks, subscriptions, list
changes.  (2025-06-18/server/resources)"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from mcp_ref import types as t
from mcp_ref.server import Context, ResourceNotFound, Server, UriTemplateError
from mcp_ref.server._resources import MAX_URI_LENGTH
from mcp_ref.server._session_state import state_of

from ._server_harness import connect

spec = pytest.mark.spec

BINARY = bytes(range(256))


def make_server(**kw: Any) -> Server:
    server = Server("res", "1", **kw)
    server.add_resource("test://text", "plain text", mime_type="text/plain", description="Text.")
    server.add_resource("test://binary", BINARY, mime_type="application/x-bytes")
    server.add_resource("test://json", {"a": 1})

    @server.resource("test://computed", name="computed")
    async def computed(ctx: Context) -> list[t.TextResourceContents | str]:
        """Computed on every read."""
        return ["one", t.TextResourceContents(uri="test://computed#2", text="two")]

    @server.resource_template("test://items/{id}", mime_type="application/json")
    def item(id: int) -> dict[str, Any]:
        """An item by number."""
        if id > 100:
            raise ResourceNotFound(f"test://items/{id}")
        return {"id": id}

    @server.resource_template("test://items/{name}")
    def named_item(name: str) -> str:
        """An item by name (tried after the numbered one)."""
        return f"named {name}"

    @server.resource_template("test://search{?q,limit,tags*}")
    def search(q: str, limit: int = 10, tags: list[str] | None = None) -> str:
        """A search."""
        return f"{q}|{limit}|{tags}"

    return server


async def read(client: Any, uri: str) -> list[Any]:
    result = await client.request("resources/read", t.ReadResourceRequestParams(uri=uri))
    return list(result.contents)


@spec("2025-06-18/server/resources#capabilities.1")
async def test_resources_capability_follows_registrations() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            assert client.init.capabilities.resources == t.ServerCapabilitiesResources(
                subscribe=True, list_changed=True
            )
        async with connect(Server("none", "1")) as client:
            assert client.init.capabilities.resources is None
    only_template = Server("tpl", "1")
    only_template.add_resource_template("test://{x}", lambda x: x)
    assert only_template.capabilities().resources is not None


async def test_list_resources_and_templates() -> None:
    with trio.fail_after(5):
        async with connect(make_server(page_size=2)) as client:
            first = await client.request("resources/list")
            second = await client.request(
                "resources/list", t.PaginatedRequestParams(cursor=first.next_cursor)
            )
            templates = await client.request("resources/templates/list")
    uris = [r.uri for r in first.resources + second.resources]
    assert uris == ["test://text", "test://binary", "test://json", "test://computed"]
    assert first.resources[0] == t.Resource(
        uri="test://text", name="test://text", mime_type="text/plain", description="Text."
    )
    assert second.resources[1].name == "computed"
    assert second.resources[1].description == "Computed on every read."
    assert [x.uri_template for x in templates.resource_templates] == [
        "test://items/{id}",
        "test://items/{name}",
    ]
    assert templates.next_cursor is not None


@spec("2025-06-18/server/resources#security-considerations.3")
async def test_read_text_binary_json_and_computed() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            text = await read(client, "test://text")
            binary = await read(client, "test://binary")
            data = await read(client, "test://json")
            computed = await read(client, "test://computed")
    assert text == [
        t.TextResourceContents(uri="test://text", text="plain text", mime_type="text/plain")
    ]
    (blob,) = binary
    assert blob.mime_type == "application/x-bytes"
    assert base64.b64decode(blob.blob, validate=True) == BINARY
    assert data == [
        t.TextResourceContents(uri="test://json", text='{"a": 1}', mime_type="application/json")
    ]
    assert [c.text for c in computed] == ["one", "two"]
    assert computed[1].uri == "test://computed#2"


async def test_templates_convert_variables_and_fall_through() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            numbered = await read(client, "test://items/42")
            named = await read(client, "test://items/abc")  # not an int: the next template
            searched = await read(client, "test://search?q=hello%20world&limit=3&tags=a&tags=b")
            default = await read(client, "test://search?q=x")
    assert numbered[0].text == '{"id": 42}' and numbered[0].mime_type == "application/json"
    assert named[0].text == "named abc"
    assert searched[0].text == "hello world|3|['a', 'b']"
    assert default[0].text == "x|10|None"


@spec("2025-06-18/server/resources#error-handling.1")
async def test_unknown_resources_are_32002_with_the_uri() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            for uri in ("test://nothing", "test://items/101", "other://text"):
                with pytest.raises(McpError) as info:
                    await read(client, uri)
                assert info.value.code == RESOURCE_NOT_FOUND
                assert info.value.message == "Resource not found"
                assert info.value.data == {"uri": uri}


@spec("2025-06-18/server/resources#security-considerations.1")
@pytest.mark.parametrize(
    "uri",
    [
        "no-scheme",
        "test://with space",
        'test://quote"',
        "test://ctl\x01",
        "test://" + "a" * MAX_URI_LENGTH,
    ],
)
async def test_malformed_uris_are_refused(uri: str) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            with pytest.raises(McpError) as info:
                await read(client, uri)
            assert info.value.code == INVALID_PARAMS
            assert "invalid resource URI" in info.value.message
            with pytest.raises(McpError):
                await client.request("resources/subscribe", t.SubscribeRequestParams(uri=uri))


async def test_a_failing_resource_function_is_an_internal_error() -> None:
    server = Server("s", "1")

    @server.resource("test://broken")
    def broken() -> str:
        raise RuntimeError("disk on fire")

    with trio.fail_after(5):
        async with connect(server) as client:
            with pytest.raises(McpError) as info:
                await read(client, "test://broken")
    assert info.value.code == INTERNAL_ERROR
    assert "disk on fire" not in info.value.message  # no internals to the client


@spec("2025-06-18/server/resources#custom-uri-schemes.1")
def test_registered_uris_need_a_scheme_and_valid_templates() -> None:
    server = Server("s", "1")
    with pytest.raises(ValueError, match="scheme"):
        server.add_resource("relative/path", "x")
    with pytest.raises(ValueError, match="scheme"):
        server.add_resource_template("{x}", lambda x: x)
    with pytest.raises(UriTemplateError):
        server.add_resource_template("test://{x", lambda x: x)
    with pytest.raises(TypeError, match="not a variable"):
        server.add_resource_template("test://{x}", lambda x, y: x)
    with pytest.raises(TypeError, match="does not take"):
        server.add_resource_template("test://{x}/{y}", lambda x: x)
    with pytest.raises(TypeError, match="required parameters"):
        server.add_resource("test://fixed", lambda x: x)
    server.add_resource("test://fixed", "x")
    with pytest.raises(ValueError, match="already registered"):
        server.add_resource("test://fixed", "y")


# ---------------------------------------------------------------- subscriptions


async def test_updates_go_to_subscribed_sessions_only() -> None:
    server = make_server()
    with trio.fail_after(5):
        async with connect(server) as watcher, connect(server) as bystander:
            result = await watcher.request(
                "resources/subscribe", t.SubscribeRequestParams(uri="test://text")
            )
            assert result == t.Result()
            # Subscribing to a templated URI works too.
            await watcher.request(
                "resources/subscribe", t.SubscribeRequestParams(uri="test://items/7")
            )
            server.resource_updated("test://text")
            server.resource_updated("test://items/7")
            server.resource_updated("test://json")  # nobody subscribed
            updates = await watcher.wait_for("notifications/resources/updated", 2)
            assert [u.uri for u in updates] == ["test://text", "test://items/7"]
            await watcher.request(
                "resources/unsubscribe", t.UnsubscribeRequestParams(uri="test://text")
            )
            server.resource_updated("test://text")
            server.resource_updated("test://items/7")
            updates = await watcher.wait_for("notifications/resources/updated", 3)
            assert updates[2].uri == "test://items/7"
            await trio.testing.wait_all_tasks_blocked()
            assert len(watcher.notes("notifications/resources/updated")) == 3
            assert bystander.notes("notifications/resources/updated") == []


async def test_subscribing_to_an_unknown_resource_fails_and_unsubscribe_is_idempotent() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            with pytest.raises(McpError) as info:
                await client.request(
                    "resources/subscribe", t.SubscribeRequestParams(uri="test://nothing")
                )
            assert info.value.code == RESOURCE_NOT_FOUND
            for _ in range(2):
                await client.request(
                    "resources/unsubscribe", t.UnsubscribeRequestParams(uri="test://nothing")
                )


async def test_subscriptions_are_bounded() -> None:
    server = make_server(max_subscriptions=2)
    with trio.fail_after(5):
        async with connect(server) as client:
            for uri in ("test://text", "test://json", "test://text"):  # a repeat is free
                await client.request("resources/subscribe", t.SubscribeRequestParams(uri=uri))
            with pytest.raises(McpError, match="too many subscriptions") as info:
                await client.request(
                    "resources/subscribe", t.SubscribeRequestParams(uri="test://binary")
                )
    assert info.value.code == INVALID_PARAMS


async def test_pending_updates_are_bounded() -> None:
    server = make_server(max_pending_updates=1)
    with trio.fail_after(5):
        async with connect(server) as client:
            for uri in ("test://text", "test://json"):
                await client.request("resources/subscribe", t.SubscribeRequestParams(uri=uri))
            # Two updates queued before the notifier can run (no checkpoint between
            # them): only the newest is kept.
            server.resource_updated("test://text")
            server.resource_updated("test://json")
            assert list(state_of(server.sessions[0]).pending_updates) == ["test://json"]
            updates = await client.wait_for("notifications/resources/updated")
            assert [u.uri for u in updates] == ["test://json"]


@spec("2025-06-18/server/resources#list-changed-notification.1")
async def test_list_changed_when_resources_or_templates_change() -> None:
    server = make_server()
    with trio.fail_after(5):
        async with connect(server) as client:
            server.add_resource("test://late", "late")
            await client.wait_for("notifications/resources/list_changed", 1)
            server.remove_resource_template("test://items/{name}")
            await client.wait_for("notifications/resources/list_changed", 2)
            server.remove_resource("test://late")
            await client.wait_for("notifications/resources/list_changed", 3)
            uris = [r.uri for r in (await client.request("resources/list")).resources]
    assert "test://late" not in uris


# Issue 13: each clause's tests kill the mutants of its lines.


@spec("2025-06-18/server/resources#capabilities.1")
async def test_a_server_declaring_resources_declares_them_before_any_is_registered() -> None:
    """``declare=("resources",)``: the capability is declared even while no resource
    or template is registered yet; a server declaring only tools does not."""
    with trio.fail_after(5):
        async with connect(Server("r", "1", declare=("resources",))) as client:
            assert client.init.capabilities.resources == t.ServerCapabilitiesResources(
                subscribe=True, list_changed=True
            )
        async with connect(Server("r", "1", declare=("tools",))) as client:
            assert client.init.capabilities.resources is None
