"""`rag.answering.llm.ChatClient` against replies a well-behaved server would not send: odd line endings, events
split over lines, streams that break, error pages, redirects, proxy variables in the environment.

`RawServer` below is a fake LLM server on 127.0.0.1 started by these tests (no generative model can be
installed on this machine): a TCP server that reads one HTTP request, records it, and answers with the
exact bytes the test queued, so a reply can be malformed in ways `http.server` would not allow. The
client under test is the real one, over real sockets.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time

import pytest

from rag.answering.llm import ChatClient, LLMError

HELLO = [{"role": "user", "content": "hello"}]


class RawServer:
    """Answers each connection with the next queued raw reply (bytes, or a list of byte pieces with
    optional pauses: a float in the list waits that many seconds)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.replies: list[bytes | list] = []
        fake = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                head = []
                while (line := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
                    head.append(line.decode("latin-1").rstrip("\r\n"))
                if not head:
                    return
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
                body = self.rfile.read(int(headers.get("content-length", 0) or 0))
                fake.requests.append({"line": head[0], "headers": headers, "body": body})
                reply = fake.replies.pop(0) if fake.replies else b""
                try:
                    for piece in reply if isinstance(reply, list) else [reply]:
                        if isinstance(piece, float):
                            time.sleep(piece)
                        else:
                            self.wfile.write(piece)
                            self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def server():
    s = RawServer()
    yield s
    s.close()


@pytest.fixture
def raw(server):
    server.requests.clear()
    server.replies.clear()
    return server


def sse(body: bytes, status: str = "200 OK", ctype: bytes = b"text/event-stream") -> bytes:
    """A whole response that ends by closing the connection (no length: the body runs to the close)."""
    return (f"HTTP/1.1 {status}\r\n".encode() + b"Content-Type: " + ctype + b"\r\nConnection: close\r\n\r\n"
            + body)


def event(text: str, end: bytes = b"\n") -> bytes:
    obj = {"choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + end + end


STREAMS = {
    "crlf line ends": (event("Uploads ", b"\r\n") + event("are 50 MB [1].", b"\r\n") + b"data: [DONE]\r\n\r\n",
                       ["Uploads ", "are 50 MB [1]."]),
    "bare cr line ends": (event("one ", b"\r") + event("two", b"\r") + b"data: [DONE]\r\r", ["one ", "two"]),
    # U+2028 and a form feed are line ends to str.splitlines, not to SSE: the JSON must stay whole.
    "line-separator characters inside the JSON": (event("a\u2028b\x0cc\u0085d") + b"data: [DONE]\n\n",
                                                  ["a\u2028b\x0cc\u0085d"]),
    "one event over two data lines": (b'data: {"choices":\ndata: [{"delta": {"content": "joined"}}]}\n\n'
                                      b"data: [DONE]\n\n", ["joined"]),
    "comments, event and id fields, a usage-only event": (
        b": keep-alive\n\nevent: message\nid: 7\n" + event("x")[:-1] + b"retry: 10\n\n"
        + b'data: {"usage": {"total_tokens": 3}}\n\ndata: [DONE]\n\n', ["x"]),
    "closed without [DONE]: what arrived is the reply": (event("partial ") + event("answer"), ["partial ", "answer"]),
    "last event without its blank line": (event("a") + event("b")[:-1], ["a", "b"]),
    "nothing after [DONE] is read": (event("kept") + b"data: [DONE]\n\n" + event("ignored"), ["kept"]),
}


@pytest.mark.parametrize("body, pieces", STREAMS.values(), ids=STREAMS.keys())
def test_event_streams_are_read_as_sse_defines_them(raw, body, pieces):
    raw.replies.append(sse(body))
    assert list(ChatClient(raw.url, "m", timeout_s=5).stream(HELLO)) == pieces


def test_a_stream_split_at_every_byte_still_reads_whole(raw):
    body = event("ação ", b"\r\n") + event("done [1].", b"\r\n") + b"data: [DONE]\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    raw.replies.append([head] + [body[i:i + 1] for i in range(len(body))])  # a CR and its LF, a UTF-8 char, split
    assert "".join(ChatClient(raw.url, "m", timeout_s=5).stream(HELLO)) == "ação done [1]."


def chunked(*pieces: bytes, end: bool = True) -> list:
    out: list = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"]
    out += [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces]
    return out + ([b"0\r\n\r\n"] if end else [])


ERRORS = {
    "an event that is not JSON": (sse(b"data: {not json\n\n"), "a streamed event is not JSON"),
    "an error event": (sse(event("ok ") + b'data: {"error": {"message": "model crashed"}}\n\n'),
                       "it reported an error: model crashed"),
    "choices that are not objects": (sse(b'data: {"choices": ["text"]}\n\n'), "a streamed event is not OpenAI-shaped"),
    "an HTML error page": (sse(b"<html><body><h1>Internal Server Error</h1></body></html>",
                               "500 Internal Server Error", b"text/html"),
                           "HTTP 500 Internal Server Error: <html><body><h1>Internal Server Error</h1></body></html>"),
    "a wrong path": (sse(b'{"error": "not found"}', "404 Not Found", b"application/json"),
                     "HTTP 404 Not Found (check llm_base_url and llm_model): not found"),
    "a redirect": (b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:9/v1/chat/completions\r\n"
                   b"Content-Length: 0\r\n\r\n", "HTTP 307 Temporary Redirect: it redirects elsewhere"),
    "a JSON body that is not a chat reply": (sse(b'{"result": "hi"}', ctype=b"application/json"),
                                             "the reply has no choices[0].message"),
    "a body that is not JSON": (sse(b"hello there", ctype=b"text/plain"), "the reply is not JSON"),
    "a chunked stream that breaks off": (chunked(event("first "), end=False), "the reply broke off"),
    "a connection closed before any reply": (b"", "the server closed the connection without a reply"),
}


@pytest.mark.parametrize("reply, reason", ERRORS.values(), ids=ERRORS.keys())
def test_broken_replies_raise_a_clear_error(raw, reply, reason):
    raw.replies.append(reply)
    with pytest.raises(LLMError) as err:
        list(ChatClient(raw.url, "m", timeout_s=5).stream(HELLO))
    assert str(err.value).startswith(f"could not reach the LLM server at {raw.url}: {reason}"), str(err.value)
    assert len(raw.requests) == 1  # a redirect is not followed


def test_a_complete_chunked_stream_is_read(raw):
    raw.replies.append(chunked(event("whole "), event("reply") + b"data: [DONE]\n\n"))
    assert ChatClient(raw.url, "m", timeout_s=5).complete(HELLO) == "whole reply"


def test_a_stream_that_stalls_mid_reply_times_out_after_its_first_pieces(raw):
    raw.replies.append(chunked(event("first "), end=False) + [1.5])
    got: list[str] = []
    with pytest.raises(LLMError, match=r"no reply within 0\.3 s \(llm_timeout_s\)"):
        for piece in ChatClient(raw.url, "m", timeout_s=0.3).stream(HELLO):
            got.append(piece)
    assert got == ["first "]


@pytest.mark.parametrize("listing, reason", [
    (b'{"object": "list", "data": []}', "it lists no models; set llm_model"),
    (b'{"object": "list"}', "its /models reply lists no models"),
    (b"[1, 2]", "its /models reply lists no models"),
])
def test_a_server_without_usable_models_says_so(raw, listing, reason):
    raw.replies.append(sse(listing, ctype=b"application/json"))
    with pytest.raises(LLMError, match=reason):
        ChatClient(raw.url, timeout_s=5).resolve_model()
    assert raw.requests[0]["line"] == "GET /v1/models HTTP/1.1"


def test_the_request_goes_to_the_base_url_only_and_carries_no_url_credentials(raw):
    """user:password in the URL is neither sent nor shown; the base URL's query is kept; the body is
    UTF-8 JSON with the model and "stream": true."""
    raw.replies.append(sse(event("ok") + b"data: [DONE]\n\n"))
    url = f"http://someone:hunter22@127.0.0.1:{raw.port}/v1/?tenant=a"
    client = ChatClient(url, "m", timeout_s=5)
    assert list(client.stream([{"role": "user", "content": "ação"}])) == ["ok"]
    (req,) = raw.requests
    assert req["line"] == "POST /v1/chat/completions?tenant=a HTTP/1.1"
    assert "authorization" not in req["headers"] and req["headers"]["host"] == f"127.0.0.1:{raw.port}"
    body = json.loads(req["body"].decode("utf-8"))
    assert body["stream"] is True and body["model"] == "m" and body["messages"][0]["content"] == "ação"
    assert "hunter22" not in repr(client) and client.base_url == f"http://127.0.0.1:{raw.port}/v1"


def test_proxy_variables_in_the_environment_are_not_used(raw, monkeypatch):
    """A second RawServer plays the proxy the environment names: it must see nothing, and the reply
    must come straight from the configured server."""
    proxy = RawServer()
    try:
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        raw.replies.append(sse(event("direct") + b"data: [DONE]\n\n"))
        assert ChatClient(raw.url, "m", timeout_s=5).complete(HELLO) == "direct"
        assert len(raw.requests) == 1 and proxy.requests == []
    finally:
        proxy.close()


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/v1", "127.0.0.1:11434/v1", "http:///v1", ""])
def test_a_base_url_that_is_not_http_is_refused_at_once(url):
    with pytest.raises(ValueError, match="llm_base_url must be an http:// or https:// URL"):
        ChatClient(url)


def test_https_to_a_server_that_speaks_plain_http_is_a_tls_error():
    """A bare socket on 127.0.0.1, started here, answers the TLS greeting with plain HTTP."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1"
    try:
        with pytest.raises(LLMError) as err:
            ChatClient(url, "m", timeout_s=5).complete(HELLO)
        assert str(err.value).startswith(f"could not reach the LLM server at {url}: TLS error ("), str(err.value)
    finally:
        t.join(10)
        listener.close()
