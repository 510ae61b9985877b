"""Plain keep-alive HTTP/1.1 for :class:`graphmem.client.Client`: the standard library's
``http.client`` instead of httpx on the request path.

Every ``context()`` an agent asks a served memory for pays the client's own CPU and latency. httpx
costs ~0.5 ms of CPU for an authenticated ``GET /v1/whoami`` here and ~1.7 ms for a
``context()`` (its request and response models, the h11 parser in Python); ``http.client`` on a
kept-alive connection ~0.13 and ~0.5 ms, with the same bytes on the wire. :class:`PlainHttp`
keeps a small pool of connections to one ``http://`` server (a Client may be shared by threads:
each request takes an idle connection or opens one, and gives it back once its answer is read).

It is used only where it is the same request: plain ``http://`` (httpx keeps TLS, its
certificates and options), no proxy from the environment for that host, no custom transport.
A pooled connection the server closed while idle (uvicorn closes them after a few seconds) is
noticed before it is reused and replaced. A request that fails on the wire is not re-sent (it may
have been written): the caller gets :class:`PlainHttpError`, as httpx raises.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

MAX_IDLE = 16  # idle connections kept per Client (more concurrent threads open and close their own)


class PlainHttpError(Exception):
    """The server could not be reached, or the connection broke during the request."""


def usable(url: str, transport: Any = None) -> bool:
    """Whether :class:`PlainHttp` sends what httpx would to ``url``: http://, no custom
    transport, no proxy from the environment for this host."""
    if transport is not None:
        return False
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if "http" in proxies or "all" in proxies:
        return bool(urllib.request.proxy_bypass(parts.hostname))
    return True


class PlainHttp:
    """Pooled keep-alive ``http.client`` connections to one server (thread-safe)."""

    def __init__(self, url: str, headers: Mapping[str, str], timeout: float) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.headers = dict(headers)
        self.timeout = timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def request(self, method: str, path: str, params: Mapping[str, Any] | None = None,
                content: bytes | None = None, headers: Mapping[str, str] | None = None,
                ) -> tuple[int, dict[str, str], bytes]:
        """Send one request and read its whole answer: (status, headers by lower-case name, body)."""
        target = self.prefix + path
        if params:
            target += "?" + urlencode([(k, _text(x)) for k, v in params.items()
                                       for x in (v if isinstance(v, (list, tuple)) else [v])])
        conn = self._take()
        try:
            conn.request(method, target, body=content, headers={**self.headers, **(headers or {})})
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise PlainHttpError(f"{type(e).__name__}: {e}") from e
        answer = response.status, {k.lower(): v for k, v in response.getheaders()}, body
        if response.will_close:
            conn.close()
        else:
            self._give(conn)
        return answer

    def _take(self) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                try:
                    conn.connect()
                    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError as e:
                    conn.close()
                    raise PlainHttpError(f"{type(e).__name__}: {e}") from e
                return conn
            if not dropped(conn):
                return conn
            conn.close()

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close every idle connection (those in use close when their request ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def dropped(conn: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive connection can no longer be used: closed here, or readable
    (the server closed it, or sent something unasked)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _text(value: Any) -> str:
    """A query value as httpx writes it (booleans lower-case)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)
