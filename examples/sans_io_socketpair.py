"""The sans-IO core with no event loop at all: two Connections over a socket pair.

    python examples/sans_io_socketpair.py

The client side writes what ``send`` returns and feeds what it reads to
``receive_data``; the server side does the same. Nothing here is mcp-ref's I/O: the
core only turns bytes into events and events into bytes (the h11 pattern).
"""

from __future__ import annotations

import socket

from mcp_ref import CLIENT, NEED_DATA, SERVER, Connection, Request, Response
from mcp_ref import types as t


def read_events(conn: Connection, sock: socket.socket) -> list[object]:
    """Read from ``sock`` until ``conn`` has at least one event; return them all."""
    found: list[object] = []
    while not found:
        conn.receive_data(sock.recv(65536))
        while (event := conn.next_event()) is not NEED_DATA:
            found.append(event)
    return found


def main() -> None:
    client_sock, server_sock = socket.socketpair()
    client, server = Connection(CLIENT), Connection(SERVER)

    params = t.InitializeRequestParams(
        protocol_version="2025-11-25",
        capabilities=t.ClientCapabilities(),
        client_info=t.Implementation(name="example", version="1.0"),
    )
    client_sock.sendall(client.send(Request(id=1, method="initialize", params=params)))
    (request,) = read_events(server, server_sock)
    print("server got:", request.method, request.params.protocol_version)

    result = t.InitializeResult(
        protocol_version=server.negotiated_version_for(request.params.protocol_version),
        capabilities=t.ServerCapabilities(),
        server_info=t.Implementation(name="example-server", version="1.0"),
    )
    server_sock.sendall(server.send(Response(id=request.id, result=result)))
    (response,) = read_events(client, client_sock)
    print("client got:", response.result.server_info.name, response.result.protocol_version)
    print("states:", client.our_state.name, server.our_state.name)


if __name__ == "__main__":
    main()
