"""A listening socket for the servers (``encodr serve``, ``encodr mcp --port``), bound before any model loads."""

from __future__ import annotations

from .errors import EncodrError


def listening_socket(host: str, port: int):
    """A TCP socket bound to ``host:port`` (not yet listening), for uvicorn to serve on.

    Its protocol is named (``IPPROTO_TCP``): asyncio turns Nagle's algorithm off
    (``TCP_NODELAY``) only on sockets whose ``proto`` says TCP, and a connection accepted on a
    ``proto`` 0 socket would hold each answer's last segment until the client's delayed ACK,
    about 40 ms a request.

    Raises:
        EncodrError: the address cannot be bound (taken, or not this machine's).
    """
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:  # bound first: a taken port is one line, before any model loads (uvicorn would log it, then exit)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise EncodrError(f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port or --host") from None
    return sock
