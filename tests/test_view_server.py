"""The viewer's socket: how its connections send what the pages answer."""

import asyncio
import socket

from gate.view import app


def test_the_pages_connections_send_at_once_not_after_the_clients_delayed_ack():
    # uvicorn serves the socket through asyncio's create_server, as this does; asyncio turns
    # Nagle's algorithm off on each connection only when the listener is an explicit TCP socket.
    # With Nagle on, each page after the first on a kept-alive connection waited ~40 ms.
    listener = app.listen(0)
    port = listener.getsockname()[1]

    async def accept_one() -> int:
        accepted = asyncio.get_running_loop().create_future()

        async def handle(reader, writer):
            accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=listener)
        async with server:
            _, client = await asyncio.open_connection("127.0.0.1", port)
            value = await accepted
            client.close()
            return value

    assert listener.getsockname()[0] == "127.0.0.1"
    assert asyncio.run(accept_one()) != 0
