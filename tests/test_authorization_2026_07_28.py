"""2026-07-28/basic/authorization/*: the rules its pages add that no other test pins down.

Credentials belong to the authorization server that issued them: a client kept from an
earlier sign-in is reused only with that same server, and a change of authorization
server (new protected resource metadata) means registering again, never sending the old
client id to the new server.
"""

from __future__ import annotations

import pytest

from mcp_ref._oauth_config import choose_client
from mcp_ref._oauth_http import RegistrationUnavailable
from mcp_ref._oauth_metadata import ClientInfo, ServerMetadata

from .test_core_oauth import config

spec = pytest.mark.spec

R = "2026-07-28/basic/authorization/client-registration#"
OLD = "https://old-auth.example.com"
NEW = "https://auth.example.com"


def metadata(issuer: str = NEW) -> ServerMetadata:
    return ServerMetadata(
        issuer=issuer,
        authorization_endpoint=f"{issuer}/authorize",
        token_endpoint=f"{issuer}/token",
        registration_endpoint=f"{issuer}/register",
        code_challenge_methods_supported=("S256",),
        token_endpoint_auth_methods_supported=("none",),
        scopes_supported=None,
        iss_parameter_supported=True,
        client_id_metadata_document_supported=False,
    )


@spec(R + "authorization-server-binding.1", R + "authorization-server-binding.2")
def test_a_kept_client_of_another_authorization_server_is_registered_again() -> None:
    kept = ClientInfo(client_id="dyn-1", issuer=OLD)
    # None: register with the new server (the flow then posts to its registration
    # endpoint); the old client id is not offered to it.
    assert choose_client(config(), kept, metadata()) is None
    same = ClientInfo(client_id="dyn-1", issuer=NEW)
    assert choose_client(config(), same, metadata()) is same


@spec(
    R + "authorization-server-binding.2",
    "2026-07-28/basic/authorization/client-registration#authorization-server-binding.3",
)
def test_a_pre_registered_client_of_another_authorization_server_is_refused() -> None:
    other = ClientInfo(client_id="pre-1", client_secret="s3cret", issuer=OLD)
    with pytest.raises(RegistrationUnavailable):
        choose_client(config(client=other), None, metadata())
    mine = ClientInfo(client_id="pre-1", client_secret="s3cret", issuer=NEW)
    assert choose_client(config(client=mine), None, metadata()) is mine
