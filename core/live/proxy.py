"""The recording proxy: point any Anthropic client at it and watch its context.

    ANTHROPIC_BASE_URL=http://127.0.0.1:8788 claude

An HTTP server (stdlib ``ThreadingHTTPServer``) that forwards every request to
the upstream API unchanged and passes the response back unchanged, streamed
(SSE) bytes included, chunk by chunk as they arrive. For each
``POST .../v1/messages`` it records the request's model, system, tools and
messages plus the response and its usage (parsed from the SSE stream) to a
recording (``core.recording``). Headers are never recorded, so neither the API
key nor any auth header reaches the file.

It listens on loopback only; another address needs ``allow_remote=True``.
"""
from __future__ import annotations

import base64
import http.client
import io
import ipaddress
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import unquote, urlsplit, urlunsplit

from ..files.jsonio import dict_at, loads_lenient
from .recorder import RecordingWriter, StreamAccumulator, is_secret_name
from .secret_scrub import Scrubber
from ..files.safeio import json_safe

DEFAULT_PORT = 8788
DEFAULT_UPSTREAM = "https://api.anthropic.com"
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
              "transfer-encoding", "upgrade", "proxy-connection"}
_CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
MAX_BODY = 512 * 1024 * 1024            # a request body larger than this gets 413 (chunked ones too)
REQUEST_TIMEOUT = 120.0                 # seconds a client may take to send one whole request (line, headers, body)
CLIENT_TIMEOUT = 60.0                   # seconds one read or write to the client may block
BACKLOG = 1024                          # the listen backlog


class _BadRequest(Exception):
    """The request cannot be read: (HTTP status, message)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class ProxyError(Exception):
    """The proxy cannot start: the message says why and what to do."""


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool) -> None:
    if not is_loopback(host) and not allow_remote:
        raise ProxyError(f"refusing to listen on {host!r}: the proxy forwards your API key's requests, so it only "
                         "listens on loopback (127.0.0.1); pass --allow-remote if you really want other machines to "
                         "reach it")


def parse_upstream(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path prefix) of the upstream base URL."""
    u = urlsplit(url if "://" in url else "https://" + url)
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise ProxyError(f"the upstream {redact_url(url)!r} has a port that is not a number") from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ProxyError(f"the upstream {redact_url(url)!r} is not an http(s) URL, e.g. https://api.anthropic.com")
    return u.scheme, u.hostname, port, u.path.rstrip("/")


def redact_url(url: str) -> str:
    """``url`` as it may be printed or recorded: a user name and password in it (``https://user:pw@host``)
    become ``***``."""
    has_scheme = "://" in url
    try:
        u = urlsplit(url if has_scheme else "https://" + url)
    except ValueError:
        return "[an unreadable URL]"
    if "@" not in u.netloc:
        return url
    out = urlunsplit((u.scheme, "***@" + u.netloc.rsplit("@", 1)[1], u.path, u.query, u.fragment))
    return out if has_scheme else out.split("://", 1)[1]


def url_credentials(url: str) -> tuple[str | None, str | None]:
    """(user, password) written in ``url`` (decoded), or (None, None)."""
    try:
        u = urlsplit(url if "://" in url else "https://" + url)
    except ValueError:
        return None, None
    if "@" not in u.netloc:
        return None, None
    userinfo = u.netloc.rsplit("@", 1)[0]
    user, _, pw = userinfo.partition(":")
    return unquote(user) or None, (unquote(pw) or None) if _ else None


def header_secrets(headers) -> list[str]:
    """The values of a request's credential headers (x-api-key, authorization, cookie, anthropic-api-key...),
    as they may reappear anywhere in what is recorded: whole, the token after an auth scheme, and the
    parts of Basic credentials."""
    out: list[str] = []
    for name, value in headers.items():
        if not is_secret_name(name) or not isinstance(value, str):
            continue
        value = value.strip()
        out.append(value)
        scheme, _, token = value.partition(" ")
        token = token.strip()
        if token:
            out.append(token)
            if scheme.lower() == "basic":
                try:
                    user, _, pw = base64.b64decode(token, validate=True).decode("utf-8").partition(":")
                    out += [x for x in (user, pw, f"{user}:{pw}") if x]
                except (ValueError, UnicodeDecodeError):
                    pass
        if name.lower() in ("cookie", "set-cookie"):
            for part in value.split(";"):
                out.append(part.partition("=")[2].strip())
    return [x for x in out if x]


class RecordingProxy:
    """``start()`` serves in a background thread; ``stop()`` shuts down and joins.

    ``on_call(record: dict)`` runs after every recorded call (from a server
    thread) with the same fields the recording gets.
    """

    def __init__(self, upstream: str = DEFAULT_UPSTREAM, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 recorder: RecordingWriter | None = None, allow_remote: bool = False,
                 on_call: Callable[[dict], None] | None = None, upstream_timeout: float = 600.0,
                 ssl_context: ssl.SSLContext | None = None, max_body: int = MAX_BODY,
                 request_timeout: float = REQUEST_TIMEOUT, client_timeout: float = CLIENT_TIMEOUT):
        check_bind(host, allow_remote)
        self.upstream = redact_url(upstream)          # what is printed and recorded: no user name or password
        self.scheme, self.up_host, self.up_port, self.up_prefix = parse_upstream(upstream)
        user, password = url_credentials(upstream)
        self._upstream_auth = None
        self.secrets: list[str] = [x for x in (password, f"{user}:{password}" if user and password else None) if x]
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            self._upstream_auth = f"Basic {token}"
            self.secrets += [token, self._upstream_auth]
        self.max_body = max_body
        self.request_timeout = request_timeout
        self.client_timeout = client_timeout
        self.recorder = recorder
        self.on_call = on_call
        self.upstream_timeout = upstream_timeout
        self.ssl_context = ssl_context
        self.calls = 0
        self.errors = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        handler = _make_handler(self)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET

        class Server(ThreadingHTTPServer):
            address_family = family
            daemon_threads = True
            allow_reuse_address = True
            # connections waiting to be accepted: socketserver's default of 5 reset clients under 20
            # concurrent ones (3 of 750 requests); the kernel caps it at net.core.somaxconn
            request_queue_size = BACKLOG
        try:
            self.server = Server((host, port), handler)
        except OSError as e:
            raise ProxyError(f"cannot listen on {host}:{port}: {e.strerror or e} (another program may be using the "
                             "port: pick another with --port)") from None
        if is_loopback(self.up_host) and self.up_port == self.port:
            self.server.server_close()
            raise ProxyError(f"the upstream {upstream} is this proxy itself: requests would loop; set --upstream "
                             "to the real API (https://api.anthropic.com)")

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        host = str(self.server.server_address[0])
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def start(self) -> "RecordingProxy":
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="compactscope-proxy", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.up_host, self.up_port, timeout=self.upstream_timeout,
                                               context=self.ssl_context or ssl.create_default_context())
        return http.client.HTTPConnection(self.up_host, self.up_port, timeout=self.upstream_timeout)

    def _record(self, rec: dict, secrets: list | tuple = ()) -> None:
        # readable back (NaN, huge numbers, lone surrogates, over-deep nesting made valid), then scrubbed of
        # this call's credential header values, the upstream URL's credentials and anything key-shaped; once,
        # for on_call too (the writer scrubs again with its own secrets)
        scrubber = Scrubber([*self.secrets, *secrets], self.recorder.keep_shapes if self.recorder else ())
        rec = scrubber(json_safe(rec))
        rec["scrubbed"] = scrubber.summary()
        with self._lock:
            self.calls += 1
            if rec.get("error"):
                self.errors += 1
                self.last_error = str(rec["error"].get("message") or rec["error"])
        if self.recorder is not None:
            try:
                self.recorder.call(**{k: rec[k] for k in ("request", "response", "usage", "error", "t_start",
                                                          "t_end", "http")}, seq=rec.get("seq"),
                                   extra={"source": "proxy"}, scrubbed=rec["scrubbed"])
            except (OSError, ValueError) as e:
                self.last_error = f"cannot write the recording: {e}"
        if self.on_call is not None:
            try:
                self.on_call(rec)
            except Exception:
                pass


class _DeadlineSocket(io.RawIOBase):
    """The client socket as a raw stream whose every read waits at most until the handler's request deadline
    (and at most the proxy's client timeout): a slow or half-sent request cannot hold a thread forever."""

    def __init__(self, handler):
        self._h = handler
        self._sock = handler.connection

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        left = self._h._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the client took too long to send its request")
        self._sock.settimeout(min(left, self._h.timeout or left))
        return self._sock.recv_into(b)


def request_target(path: str) -> tuple[str, list[str]]:
    """(the path and query, the credentials written in it) of a request target: an absolute request URI
    (``POST http://user:PASS@host/v1/messages``) goes upstream as its path, and its user and password are
    scrubbed wherever they reappear and never recorded."""
    if "://" not in path[:16]:
        return path, []
    secrets = [x for x in url_credentials(path) if x]
    try:
        u = urlsplit(path)
        return (u.path or "/") + (f"?{u.query}" if u.query else ""), secrets
    except ValueError:
        return "/" + path.split("://", 1)[1].partition("@")[2].partition("/")[2], secrets




def _is_messages_call(method: str, path: str) -> bool:
    return method == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/v1/messages")


def _make_handler(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(_ProxyHandler):
        recording_proxy = proxy
        timeout = proxy.client_timeout         # each read or write to the client (socketserver applies it)
    return Handler


def _upstream_response_record(rec: dict, status: int, kept: bytes) -> None:
    """What a response that was not streamed says, from its body (kept up to 64 MB): the reply, or the error."""
    try:
        rj = loads_lenient(kept) if kept else None
    except (ValueError, RecursionError, MemoryError):
        rj = None
    if isinstance(rj, dict) and rj.get("type") == "error":
        err = dict_at(rj, "error")
        rec["error"] = {"kind": "api", "status": status, **err}
    elif isinstance(rj, dict) and "content" in rj:
        rec["response"] = {k: v for k, v in rj.items() if k != "usage"}
        rec["usage"] = rj.get("usage")
    elif status >= 400:
        rec["error"] = {"kind": "api", "status": status, "message": f"HTTP {status}"}


class _Relayed:
    """How relaying one upstream response to the client went."""

    def __init__(self, status: int, acc: StreamAccumulator | None):
        self.status = status
        self.acc = acc                          # the stream's accumulator (a recorded, streamed call)
        self.kept = bytearray()                 # the body of a recorded call that was not streamed
        self.client_gone = False
        self.upstream_error: str | None = None
        self.record_now: Any = None             # records the call once (before the client has the last bytes)

    def finish_record(self, rec: dict) -> None:
        rec["t_end"] = time.time()
        if self.acc is not None:
            rec["response"], rec["usage"] = self.acc.response(), (self.acc.usage or None)
            if self.acc.error:
                rec["error"] = {"kind": "stream_error", "status": self.status, **self.acc.error}
        else:
            _upstream_response_record(rec, self.status, bytes(self.kept))
        if self.client_gone:
            rec["error"] = {"kind": "client_disconnected", "status": self.status,
                            "message": "the client closed the connection before the response ended"}
        elif self.upstream_error:
            rec["error"] = {"kind": "network", "status": self.status, "message": self.upstream_error}


class _ProxyHandler(BaseHTTPRequestHandler):
    """One client connection: each request forwarded upstream, a /v1/messages call recorded."""
    protocol_version = "HTTP/1.1"
    server_version = "compactscope-proxy"
    recording_proxy: RecordingProxy           # set by _make_handler's subclass
    _up: http.client.HTTPConnection | None = None
    _target = "/"                             # the request's path and query (request_target)

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        # every read from the client checks the request's deadline: a client that sends half a request,
        # or one byte at a time, is dropped when the deadline passes
        self._deadline = time.monotonic() + self.recording_proxy.request_timeout
        self.rfile = io.BufferedReader(_DeadlineSocket(self), 65536)

    def handle_one_request(self):
        self._deadline = time.monotonic() + self.recording_proxy.request_timeout
        super().handle_one_request()

    def _read_chunked(self) -> bytes:
        max_body = self.recording_proxy.max_body
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(65537)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise _BadRequest(400, "malformed chunked body (a chunk size that is not a hex number)") \
                    from None
            if size < 0:
                raise _BadRequest(400, "malformed chunked body (a negative chunk size)")
            total += size
            if total > max_body:
                raise _BadRequest(413, f"request body larger than {max_body:,} bytes")
            if size == 0:
                for _ in range(100):             # trailer lines, then the blank line
                    if self.rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        break
                return b"".join(parts)
            data = self.rfile.read(size)
            if len(data) < size:
                raise _BadRequest(400, "the chunked body ended early")
            parts.append(data)
            self.rfile.readline(3)

    def _read_body(self) -> bytes:
        """The request body; _BadRequest (400/413/408) when it is malformed, too large or too slow."""
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            return self._read_chunked()
        values = self.headers.get_all("content-length") or []
        if not values:
            return b""
        if len(set(v.strip() for v in values)) > 1:
            raise _BadRequest(400, "conflicting Content-Length headers")
        text = values[0].strip()
        if not text.isdigit() or len(text) > 18:
            raise _BadRequest(400, f"bad Content-Length {text[:40]!r}")
        n = int(text)
        if n > self.recording_proxy.max_body:
            raise _BadRequest(413, f"request body larger than {self.recording_proxy.max_body:,} bytes")
        data = self.rfile.read(n) if n > 0 else b""
        if len(data) < n:
            raise _BadRequest(400, "the request body ended before its Content-Length")
        return data

    def _error(self, status: int, message: str) -> None:
        data = json.dumps({"type": "error", "error": {"type": "api_error",
                                                      "message": f"compactscope proxy: {message}"}}).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except _CLIENT_GONE:
            self.close_connection = True

    def _body_or_refusal(self) -> bytes | None:
        """The request's body, or None once the client got its 4xx (malformed, too large, too slow)."""
        try:
            return self._read_body()
        except _BadRequest as e:
            self.close_connection = True
            self._error(e.status, e.message)
        except (TimeoutError, OSError):
            self.close_connection = True     # too slow, or gone: nothing to answer
            self._error(408, "the request took too long to arrive")
        return None

    def _recorded_request(self, body: bytes) -> Any:
        """The request's JSON when this is a model call to record (a dict with messages), else None."""
        if not _is_messages_call(self.command, self._target):
            return None
        try:
            req_json = loads_lenient(body)     # NaN, 1e400, lone surrogates, any nesting: made valid
        except (ValueError, RecursionError, MemoryError):
            return None
        return req_json if isinstance(req_json, dict) and isinstance(req_json.get("messages"), list) else None

    def _upstream_headers(self, body: bytes) -> dict:
        proxy = self.recording_proxy
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP
                   and k.lower() not in ("host", "content-length", "accept-encoding")}
        if proxy._upstream_auth and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = proxy._upstream_auth
        headers["Host"] = proxy.up_host if proxy.up_port in (80, 443) else f"{proxy.up_host}:{proxy.up_port}"
        headers["Accept-Encoding"] = "identity"      # so the proxy can read what it passes through
        headers["Content-Length"] = str(len(body))
        return headers

    def _send_upstream(self, body: bytes, headers: dict):
        """(connection, response, None), or (None, None, the error) when the upstream cannot be reached."""
        proxy = self.recording_proxy
        # one upstream connection per client connection, kept alive across its requests
        conn, self._up = self._up, None
        err: Exception | None = None
        for _attempt in (0, 1):
            reused = conn is not None
            if conn is None:
                conn = proxy._connect()
            try:
                conn.request(self.command, proxy.up_prefix + self._target, body=body, headers=headers)
                return conn, conn.getresponse(), None
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conn, err = None, e
                if not reused:      # a kept-alive connection the upstream closed: retry once, fresh
                    break
        return None, None, err

    def _send_head(self, resp: http.client.HTTPResponse, status: int, length: str | None) -> bool:
        """The status line and headers to the client; True when the body goes chunked."""
        self.send_response_only(status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_BY_HOP and not (k.lower() == "content-length" and length is None):
                self.send_header(k, v)
        chunked = length is None and self.command != "HEAD" and status not in (204, 304)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        return chunked

    def _pump(self, resp: http.client.HTTPResponse, chunked: bool, out: _Relayed, recording: bool) -> None:
        """The response's body to the client as it arrives (fed to the recording on the way); the call is recorded
        before the client has its last bytes."""
        length = resp.getheader("content-length")
        total = int(length) if length is not None and length.strip().isdigit() else None
        got = 0
        while self.command != "HEAD":
            try:
                data = resp.read1(65536) if chunked else resp.read(65536)
            except (OSError, http.client.HTTPException) as e:
                out.upstream_error = f"the upstream connection broke mid-response: {e}"
                break
            if not data:
                break
            if out.acc is not None:
                out.acc.feed(data)
            elif recording and len(out.kept) < 64 * 1024 * 1024:
                out.kept += data
            got += len(data)
            if total is not None and got >= total and out.record_now is not None:
                out.record_now()                # the whole body is in: recorded, then its last bytes sent
            if chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            else:
                self.wfile.write(data)
            self.wfile.flush()
        if chunked and out.upstream_error is None:
            if out.record_now is not None:
                out.record_now()                # recorded, then the last chunk that ends the response
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        if out.upstream_error is not None:
            self.close_connection = True

    def _relay(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, rec: dict,
               recording: bool, record_now: Any = None) -> _Relayed:
        status = resp.status
        streamed = "text/event-stream" in (resp.getheader("content-type", "") or "")
        length = resp.getheader("content-length")
        rec["http"].update(status=status, streamed=streamed)
        out = _Relayed(status, StreamAccumulator() if (recording and streamed) else None)
        out.record_now = (lambda: record_now(out)) if record_now is not None else None
        try:
            chunked = self._send_head(resp, status, length)
            self._pump(resp, chunked, out, recording)
        except _CLIENT_GONE:
            out.client_gone = True
            self.close_connection = True
        finally:
            finished = resp.isclosed() and not out.client_gone and out.upstream_error is None
            resp.close()
            if finished and not resp.will_close and self.command != "HEAD":
                self._up = conn     # reuse it for this client's next request
            else:
                conn.close()
        return out

    def _forward(self) -> None:
        proxy = self.recording_proxy
        t0 = time.time()
        body = self._body_or_refusal()
        if body is None:
            return
        self.connection.settimeout(proxy.client_timeout)
        secrets = header_secrets(self.headers)
        # an absolute request URI (POST http://user:PASS@host/v1/messages) goes upstream as its path; its
        # credentials are scrubbed wherever they reappear and never recorded
        self._target, uri_secrets = request_target(self.path)
        secrets += uri_secrets
        req_json = self._recorded_request(body)
        recording = req_json is not None
        headers = self._upstream_headers(body)
        rec: dict = {"request": req_json, "response": None, "usage": None,
                     "error": None, "t_start": t0, "t_end": None,
                     # numbered when the request arrives: calls on parallel connections may finish (and be
                     # written) in another order; readers sort by seq
                     "seq": proxy.recorder.next_seq() if (recording and proxy.recorder is not None) else None,
                     "http": {"method": self.command, "path": self._target.split("?", 1)[0]}}
        conn, resp, err = self._send_upstream(body, headers)
        if conn is None or resp is None:
            msg = f"cannot reach the upstream {proxy.upstream}: {err}"
            self._error(502, msg)
            if recording:
                rec.update(t_end=time.time(), error={"kind": "network", "message": msg, "status": 502})
                proxy._record(rec, secrets)
            return
        recorded: list = []

        def record_now(out: _Relayed) -> None:
            # once, and before the client has the response's last bytes: a response the client got whole is in
            # the recording even if the proxy is killed right after (kill -9)
            if recording and not recorded:
                recorded.append(True)
                out.finish_record(rec)
                proxy._record(rec, secrets)
        record_now(self._relay(conn, resp, rec, recording, record_now))

    do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _forward

    def finish(self):
        up, self._up = self._up, None
        if up is not None:
            up.close()
        super().finish()
