"""A protected server (``serve_http(auth=...)``) and the modern era (2026-07-28): a
session-less POST is checked like any other, and its handler sees its caller."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from ._http_raw import RawConnection, notification_body
from .test_http_auth import TOKENS, TableVerifier, bearer, challenge_params, serving
from .test_transports_http_modern import META, answer_of, modern_body, modern_headers

spec = pytest.mark.spec
TIMEOUT = 10


@spec("2025-11-25/basic/authorization#access-token-privilege-restriction.1")
@pytest.mark.parametrize("stateless", [False, True])
async def test_a_modern_post_is_checked_and_its_handler_sees_the_caller(stateless: bool) -> None:
    seen: list[Any] = []
    call = modern_body(1, "tools/call", {"name": "whoami", "arguments": {}})
    wipe = modern_body(2, "tools/call", {"name": "wipe", "arguments": {}})
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS), seen, stateless=stateless) as port:
            conn = await RawConnection.open(port)
            head = modern_headers("tools/call", "whoami")
            ans = await conn.request("POST", body=call, headers=head)
            assert ans.status == 401
            assert "resource_metadata" in ans.headers["www-authenticate"]
            await ans.body()
            ans = await conn.request("POST", body=call, headers={**head, **bearer("good")})
            assert ans.status == 200 and ans.session_id is None
            assert (await answer_of(ans))["result"]["content"][0]["text"] == "alice mcp"
            head = {**modern_headers("tools/call", "wipe"), **bearer("good")}
            ans = await conn.request("POST", body=wipe, headers=head)
            assert ans.status == 403
            assert (
                challenge_params(ans.headers["www-authenticate"])["error"] == "insufficient_scope"
            )
            await ans.body()
            # a modern notification, answered 202 without a session, is checked first too
            note = notification_body("notifications/cancelled", {"requestId": 9, "_meta": META})
            head = modern_headers("notifications/cancelled")
            ans = await conn.request("POST", body=note, headers=head)
            assert ans.status == 401
            await ans.body()
            ans = await conn.request("POST", body=note, headers={**head, **bearer("good")})
            assert ans.status == 202
            await ans.body()
            await conn.aclose()
    assert [who.subject for who, _ in seen] == ["alice"]
