"""A minimal HTTP/1.1 keep-alive client for load generation.

The service and its load generator share the machine's cores, so a heavy client makes the
service look slower than it is (the raw PostgreSQL baseline's client is libpq, which costs
little). This one sends a pre-encoded request and reads exactly one response (status line,
headers up to the blank line, ``Content-Length`` bytes); it speaks only what the service answers.
"""

from __future__ import annotations

import socket


class LightClient:
    def __init__(self, host: str, port: int, timeout: float = 30) -> None:
        self.host = host
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def request(self, method: str, path: str, body: bytes,
                headers: str = "") -> tuple[int, bytes]:
        """``headers``: extra header lines, each ending in CRLF."""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
                f"Content-Type: application/json\r\n{headers}"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        self.sock.sendall(head + body)
        return self._response()

    def _response(self) -> tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, body

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()
