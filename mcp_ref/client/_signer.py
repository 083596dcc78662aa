"""A ready :class:`~mcp_ref._oauth_assertions.JwtSigner`: a private key, signed with
joserfc.

The sign-in flow builds the claims of a ``private_key_jwt`` client assertion and asks a
signer for the compact JWS; signing is JOSE, outside MCP, so it lives here and not in
the sans-IO core.  joserfc is the optional extra ``mcp-ref[auth]``: it is imported when
a :class:`PrivateKeySigner` is built, never before (the base install works without it).
"""

from __future__ import annotations

from typing import Any, Final

from .._oauth_http import OAuthLocalError

__all__ = ["PrivateKeySigner"]

ALGORITHMS: Final = {
    "ES256": "EC",
    "ES384": "EC",
    "ES512": "EC",
    "RS256": "RSA",
    "RS384": "RSA",
    "RS512": "RSA",
    "PS256": "RSA",
    "PS384": "RSA",
    "PS512": "RSA",
    "EdDSA": "OKP",
}
"""The asymmetric algorithms a private key may sign with, and the key type each needs
(symmetric ``HS*`` algorithms are refused: the key would be a shared secret)."""


class PrivateKeySigner:
    """Signs JWTs with one private key (PEM or a JWK dict), for ``private_key_jwt``
    client authentication (RFC 7523 section 2.2).

    Args:
        key: the private key: PEM text or bytes (PKCS#8, or the traditional EC/RSA
            forms), or a private JWK as a dict.
        algorithm: the JWS ``alg`` (one of :data:`ALGORITHMS`; ``ES256`` by default).
        key_id: the ``kid`` put in the header (the key's id at the authorization
            server), if any.

    Raises:
        OAuthLocalError: joserfc is not installed (install ``mcp-ref[auth]``); an unknown
            or symmetric algorithm; the key cannot be read, is public only, or does not
            fit the algorithm.
    """

    def __init__(
        self,
        key: str | bytes | dict[str, Any],
        *,
        algorithm: str = "ES256",
        key_id: str | None = None,
    ) -> None:
        try:
            from joserfc import errors, jwk, jwt
        except ImportError:
            raise OAuthLocalError(
                "the JWT signer needs joserfc: install the extra `mcp-ref[auth]`"
            ) from None
        kind = ALGORITHMS.get(algorithm)
        if kind is None:
            raise OAuthLocalError(f"{algorithm!r} is not an asymmetric JWS algorithm")
        try:
            imported = jwk.import_key(key, kind)  # type: ignore[call-overload]
        except (errors.JoseError, ValueError, TypeError, KeyError) as exc:
            raise OAuthLocalError(f"the signing key cannot be read: {exc}") from None
        if imported.key_type != kind or not imported.is_private:
            raise OAuthLocalError(f"{algorithm} needs a private {kind} key")
        self.algorithm = algorithm
        """The JWS ``alg``."""
        self.key_id = key_id
        """The ``kid`` in the header, or None."""
        self._key, self._jwt, self._errors = imported, jwt, errors

    @classmethod
    def generate(cls, algorithm: str = "ES256") -> PrivateKeySigner:
        """A signer with a new key of its own (a DPoP key, RFC 9449: it need not be
        registered anywhere; the token is bound to it).  ``ES*`` and ``EdDSA`` only.

        Raises:
            OAuthLocalError: joserfc is missing, or ``algorithm`` is not ES256/384/512
                or EdDSA.
        """
        curves = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521", "EdDSA": "Ed25519"}
        if algorithm not in curves:
            raise OAuthLocalError(f"cannot generate a key for {algorithm!r}")
        try:
            from joserfc import jwk
        except ImportError:
            raise OAuthLocalError(
                "the JWT signer needs joserfc: install the extra `mcp-ref[auth]`"
            ) from None
        kind = jwk.OKPKey if algorithm == "EdDSA" else jwk.ECKey
        key = kind.generate_key(curves[algorithm])  # type: ignore[arg-type]
        return cls(key.as_dict(private=True), algorithm=algorithm)

    def public_jwk(self) -> dict[str, Any]:
        """The public half of the key, as a JWK (no private members)."""
        doc: dict[str, Any] = dict(self._key.as_dict(private=False))
        return doc

    def sign(self, claims: dict[str, Any], *, typ: str | None = None, jwk: bool = False) -> str:
        """The compact JWS of ``claims``, with ``alg`` (and ``kid``, ``typ`` when set;
        with ``jwk``, the public key) in the protected header.

        Raises:
            OAuthLocalError: joserfc refused (a claim it cannot encode, say).
        """
        header: dict[str, Any] = {"alg": self.algorithm}
        if typ is not None:
            header["typ"] = typ
        if self.key_id is not None:
            header["kid"] = self.key_id
        if jwk:
            header["jwk"] = self.public_jwk()
        try:
            token: str = self._jwt.encode(header, claims, self._key, algorithms=[self.algorithm])
        except (self._errors.JoseError, ValueError, TypeError) as exc:
            raise OAuthLocalError(f"signing failed: {exc}") from None
        return token
