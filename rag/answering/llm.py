"""A small client for OpenAI-compatible chat servers the user runs (Ollama, llama.cpp's server, vLLM,
LM Studio, ...), over `httpx`.

`ChatClient(base_url, model, api_key, timeout_s)` posts to `<base_url>/chat/completions` with
`"stream": true` and yields the reply's text as server-sent events arrive (a server that answers with
one JSON body instead is understood too). The base URL is the one the server documents for OpenAI
clients, usually ending in `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama). Without a model name,
the first model the server lists at `<base_url>/models` is used.

Every failure (connection refused, unknown host, no byte within the timeout, an HTTP error, a reply
that is not OpenAI-shaped, a stream that breaks) raises `LLMError` whose message reads
"could not reach the LLM server at <url>: <reason>". The timeout applies to each wait for data (and
to connecting), not to the whole reply, so a slow but steady stream is never cut.

Only the configured server is ever contacted: redirects are not followed (a 3xx is an error that says
so), and proxy settings from the environment (`HTTP_PROXY`, `ALL_PROXY`, ...) and `.netrc` are not
read, so a server on 127.0.0.1 is never reached through a proxy and no other credential is sent.
TLS is verified against the system's certificate store, as Python's `ssl` module does by default.

The API key is sent only in the Authorization header. It is never part of a repr, a log line or an
error message: messages are scrubbed of it, and of any user:password in the URL, before they leave.
A user:password in the URL is not sent either.

The stream is read as the SSE format defines it: lines end at CR, LF or CRLF only (a JSON string may
hold U+2028 or a form feed), `data:` lines gather into one event until an empty line, `:` starts a
comment, and `data: [DONE]` ends the reply:

>>> list(_sse_events(['data: {"a"', ':1}\\r\\n', ': keep-alive\\r\\n\\r\\ndata: [DO', 'NE]\\n\\n']))
['{"a":1}', '[DONE]']

What it does not do: build prompts or judge answers (`rag.answering.prompt` and `rag.deciding.citations` do), retry, or
keep connections open between requests.
"""

from __future__ import annotations

import codecs
import json
import re
import socket
import ssl
from typing import Iterable, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx

Message = dict  # {"role": "system" | "user" | "assistant", "content": str}


class LLMError(RuntimeError):
    """The LLM server could not give an answer; the message says where and why, without secrets."""


class ChatClient:
    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 60.0):
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"llm_base_url must be an http:// or https:// URL, got {_public_url(base_url)!r}")
        self._parts = parts
        self.base_url = _public_url(base_url)  # what messages show: no user:password, no query
        self.model = model or None
        self.timeout_s = float(timeout_s)
        self.__key = api_key or None  # name-mangled and kept out of __repr__: never printed
        self._tls: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        return (f"ChatClient(base_url={self.base_url!r}, model={self.model!r}, "
                f"api_key={'<set>' if self.__key else None}, timeout_s={self.timeout_s:g})")

    # --- public ---------------------------------------------------------------------------------

    def stream(self, messages: Sequence[Message], **params) -> Iterator[str]:
        """The reply's text in pieces, as the server sends them."""
        body = {"model": self.resolve_model(), "messages": list(messages), "stream": True, **params}
        with self._exchange("POST", "/chat/completions", body) as resp:
            ctype = resp.headers.get("Content-Type", "").lower()
            if "text/event-stream" in ctype:
                for payload in _sse_events(self._read(resp.iter_bytes())):
                    if payload.strip() == "[DONE]":
                        return
                    piece = self._delta(payload)
                    if piece:
                        yield piece
                # The server closed the stream without [DONE]: what arrived is the reply.
            else:  # a server that ignores "stream": one JSON body
                data = self._json(b"".join(self._read(resp.iter_bytes(), decode=False)))
                yield self._message_text(data)

    def complete(self, messages: Sequence[Message], **params) -> str:
        """The whole reply as one string."""
        return "".join(self.stream(messages, **params))

    def models(self) -> list[str]:
        """Model ids the server lists at <base_url>/models."""
        with self._exchange("GET", "/models", None) as resp:
            data = self._json(b"".join(self._read(resp.iter_bytes(), decode=False)))
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise LLMError(self._say("its /models reply lists no models"))
        return [str(m.get("id")) for m in items if isinstance(m, dict) and m.get("id")]

    def resolve_model(self) -> str:
        if self.model is None:
            names = self.models()
            if not names:
                raise LLMError(self._say("it lists no models; set llm_model"))
            self.model = names[0]
        return self.model

    # --- plumbing -------------------------------------------------------------------------------

    def _say(self, reason: str) -> str:
        return self._scrub(f"could not reach the LLM server at {self.base_url}: {reason}")

    def _scrub(self, text: str) -> str:
        secrets = [self.__key, self._parts.password, self._parts.username]
        for s in secrets:
            if s and len(s) >= 3:
                text = text.replace(s, "***")
        return text

    def _url(self, path: str) -> str:
        """`path` under the base URL, without user:password (never sent), with the base URL's query."""
        p = self._parts
        host = f"[{p.hostname}]" if ":" in (p.hostname or "") else p.hostname
        netloc = host + (f":{p.port}" if p.port else "")
        return urlunsplit((p.scheme, netloc, p.path.rstrip("/") + path, p.query, ""))

    def _client(self) -> httpx.Client:
        if self._parts.scheme == "https":
            if self._tls is None:  # built once: loading a certificate store takes about 0.1 s
                self._tls = ssl.create_default_context()  # the system's store, verified as the ssl module does
            verify: ssl.SSLContext | bool = self._tls
        else:
            # Plain http uses no TLS (and redirects to https are not followed): nothing to verify, so no
            # certificate store is loaded on every request.
            verify = False
        # trust_env=False: no proxy variables, no .netrc, so nothing but the configured URL is contacted.
        return httpx.Client(timeout=httpx.Timeout(self.timeout_s), trust_env=False, follow_redirects=False,
                            verify=verify)

    def _exchange(self, method: str, path: str, body: dict | None) -> "_Exchange":
        headers = {"Accept": "text/event-stream, application/json"}
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        return _Exchange(self, method, self._url(path), headers, body)

    def _read(self, chunks: Iterator[bytes], decode: bool = True) -> Iterator:
        """The body's pieces, with transport failures turned into LLMError."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            for chunk in chunks:
                yield decoder.decode(chunk) if decode else chunk
        except httpx.HTTPError as exc:
            raise LLMError(self._say(_reason(exc, self.timeout_s, started=True))) from None
        if decode:
            yield decoder.decode(b"", final=True)

    def _json(self, raw: bytes) -> dict:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise LLMError(self._say("the reply is not JSON; is this an OpenAI-compatible /v1 URL?")) from None

    def _message_text(self, data: dict) -> str:
        try:
            return str(data["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError):
            if isinstance(data, dict) and data.get("error"):
                raise LLMError(self._say("it reported an error")) from None
            raise LLMError(self._say("the reply has no choices[0].message")) from None

    def _delta(self, payload: str) -> str:
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            raise LLMError(self._say("a streamed event is not JSON")) from None
        if isinstance(event, dict) and event.get("error"):
            raise LLMError(self._say(f"it reported an error: {_error_detail(json.dumps(event).encode())}"))
        try:
            choice = event["choices"][0]
        except (KeyError, IndexError, TypeError):
            return ""  # e.g. a usage-only event
        if not isinstance(choice, dict):
            raise LLMError(self._say("a streamed event is not OpenAI-shaped"))
        delta = choice.get("delta") or choice.get("message") or {}
        text = delta.get("content") if isinstance(delta, dict) else None
        return str(text or choice.get("text") or "")


class _Exchange:
    """One request and its streamed response, as a context manager: entering sends the request and
    checks the status; leaving closes the response and the connection, also when the reader stops early."""

    def __init__(self, owner: ChatClient, method: str, url: str, headers: dict, body: dict | None):
        self.owner, self.method, self.url, self.headers, self.body = owner, method, url, headers, body
        self._client: httpx.Client | None = None
        self._resp: httpx.Response | None = None

    def __enter__(self) -> httpx.Response:
        owner = self.owner
        self._client = owner._client()
        try:
            # `content` rather than `json=`: the body keeps non-ASCII text as UTF-8, as the server expects.
            data = None if self.body is None else json.dumps(self.body, ensure_ascii=False).encode("utf-8")
            headers = dict(self.headers, **({"Content-Type": "application/json"} if data is not None else {}))
            request = self._client.build_request(self.method, self.url, headers=headers, content=data)
            self._resp = resp = self._client.send(request, stream=True)
            if not 200 <= resp.status_code < 300:
                raise LLMError(owner._say(self._status_reason(resp)))
        except httpx.HTTPError as exc:
            self.__exit__()
            raise LLMError(owner._say(_reason(exc, owner.timeout_s))) from None
        except httpx.InvalidURL:
            self.__exit__()
            raise LLMError(owner._say("the URL is not valid (check llm_base_url)")) from None
        except BaseException:
            self.__exit__()
            raise
        return resp

    def _status_reason(self, resp: httpx.Response) -> str:
        detail = ""
        try:
            raw = b""
            for chunk in resp.iter_bytes():
                raw += chunk
                if len(raw) >= 4000:  # enough to say why; an error page can be long
                    break
            detail = _error_detail(raw[:4000])
        except httpx.HTTPError:
            pass
        status = f"HTTP {resp.status_code} {resp.reason_phrase}".rstrip()
        if 300 <= resp.status_code < 400:
            # Following it could send the key to another host; the URL should name the server itself.
            return f"{status}: it redirects elsewhere (check llm_base_url; redirects are not followed)"
        hint = " (check llm_api_key)" if resp.status_code in (401, 403) else \
            " (check llm_base_url and llm_model)" if resp.status_code == 404 else ""
        return f"{status}{hint}" + (f": {detail}" if detail else "")

    def __exit__(self, *_) -> None:
        if self._resp is not None:
            self._resp.close()
            self._resp = None
        if self._client is not None:
            self._client.close()
            self._client = None


_LINE_END = re.compile(r"\r\n|\r|\n")


def _sse_lines(texts: Iterable[str]) -> Iterator[str]:
    """Lines of an event stream, split at CR, LF or CRLF only; a last line without its end is kept.

    >>> list(_sse_lines(["a\\r", "\\nb\\u2028c\\rd", "\\n\\ne"]))
    ['a', 'b\\u2028c', 'd', '', 'e']
    """
    buf = ""
    for text in texts:
        buf += text
        pos = 0
        for m in _LINE_END.finditer(buf):
            if m.group() == "\r" and m.end() == len(buf):
                break  # a CR at the end of a piece may be the first half of a CRLF: wait for the next
            yield buf[pos:m.start()]
            pos = m.end()
        buf = buf[pos:]
    if buf:
        yield buf.removesuffix("\r")


def _sse_events(texts: Iterable[str]) -> Iterator[str]:
    """Each event's data (its `data:` lines joined by newlines); fields other than data are ignored."""
    data: list[str] = []
    for line in _sse_lines(texts):
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "data":
            data.append("")
        # ":" comments (keep-alives), and event:, id:, retry: fields carry nothing for us.
    if data:
        yield "\n".join(data)  # the stream ended without the blank line that would close this event


def _error_detail(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict):
            text = str(err.get("message") or err)
        elif err:
            text = str(err)
    except (json.JSONDecodeError, AttributeError):
        pass
    return " ".join(text.split())[:300]


def _reason(exc: BaseException, timeout_s: float, started: bool = False) -> str:
    """What went wrong, for a person; `started`: the reply had begun to arrive."""
    if isinstance(exc, httpx.TimeoutException):
        return f"no reply within {timeout_s:g} s (llm_timeout_s)"
    cause: BaseException | None = exc
    while cause is not None:  # httpx wraps the socket's own error; it says more
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is the server running?)"
        if isinstance(cause, socket.gaierror):
            return "unknown host"
        if isinstance(cause, ssl.SSLError):
            return f"TLS error ({cause.reason or cause})"
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the reply broke off" if started else "the server closed the connection without a reply"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return "the reply broke off" if started else "the connection broke"
    if isinstance(exc, httpx.ConnectError):
        return "could not connect"
    return f"{type(exc).__name__}: {exc}"


def _public_url(url: str) -> str:
    """The URL without user:password and without a query string, for messages."""
    try:
        p = urlsplit(url.strip())
        host = p.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{p.port}" if p.port else "")
        return urlunsplit((p.scheme, netloc, p.path.rstrip("/"), "", ""))
    except ValueError:
        return "<invalid URL>"
