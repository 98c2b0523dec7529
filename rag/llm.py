"""A small client for OpenAI-compatible chat servers the user runs (Ollama, llama.cpp's server, vLLM,
LM Studio, ...), over the standard library only.

`ChatClient(base_url, model, api_key, timeout_s)` posts to `<base_url>/chat/completions` with
`"stream": true` and yields the reply's text as server-sent events arrive (a server that answers with
one JSON body instead is understood too). The base URL is the one the server documents for OpenAI
clients, usually ending in `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama). Without a model name,
the first model the server lists at `<base_url>/models` is used.

Every failure (connection refused, unknown host, no byte within the timeout, an HTTP error, a reply
that is not OpenAI-shaped, a stream that breaks) raises `LLMError` whose message reads
"could not reach the LLM server at <url>: <reason>". The timeout applies to each wait for data, not
to the whole reply, so a slow but steady stream is never cut.

The API key is sent only in the Authorization header. It is never part of a repr, a log line or an
error message: messages are scrubbed of it, and of any user:password in the URL, before they leave.

What it does not do: build prompts or judge answers (`rag.answer` does), retry, or pool connections.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from typing import Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

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

    def __repr__(self) -> str:
        return (f"ChatClient(base_url={self.base_url!r}, model={self.model!r}, "
                f"api_key={'<set>' if self.__key else None}, timeout_s={self.timeout_s:g})")

    # --- public ---------------------------------------------------------------------------------

    def stream(self, messages: Sequence[Message], **params) -> Iterator[str]:
        """The reply's text in pieces, as the server sends them."""
        body = {"model": self.resolve_model(), "messages": list(messages), "stream": True, **params}
        conn, resp = self._request("POST", "/chat/completions", body)
        try:
            ctype = (resp.getheader("Content-Type") or "").lower()
            if "text/event-stream" in ctype:
                yield from self._events(resp)
            else:  # a server that ignores "stream": one JSON body
                data = self._json(resp.read())
                yield _message_text(data, self.base_url)
        except LLMError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            raise LLMError(self._say(_reason(exc, self.timeout_s))) from None
        finally:
            conn.close()

    def complete(self, messages: Sequence[Message], **params) -> str:
        """The whole reply as one string."""
        return "".join(self.stream(messages, **params))

    def models(self) -> list[str]:
        """Model ids the server lists at <base_url>/models."""
        conn, resp = self._request("GET", "/models", None)
        try:
            data = self._json(resp.read())
        except (OSError, http.client.HTTPException) as exc:
            raise LLMError(self._say(_reason(exc, self.timeout_s))) from None
        finally:
            conn.close()
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

    def _request(self, method: str, path: str, body: dict | None):
        p = self._parts
        cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        conn = cls(p.hostname, p.port, timeout=self.timeout_s)
        headers = {"Accept": "text/event-stream, application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        target = (p.path.rstrip("/") + path) + (f"?{p.query}" if p.query else "")
        try:
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise LLMError(self._say(_reason(exc, self.timeout_s))) from None
        if resp.status >= 400:
            try:
                detail = _error_detail(resp.read(4000))
            except (OSError, http.client.HTTPException):
                detail = ""
            conn.close()
            hint = " (check llm_api_key)" if resp.status in (401, 403) else \
                " (check llm_base_url and llm_model)" if resp.status == 404 else ""
            raise LLMError(self._say(f"HTTP {resp.status} {resp.reason}{hint}" + (f": {detail}" if detail else "")))
        return conn, resp

    def _json(self, raw: bytes) -> dict:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise LLMError(self._say("the reply is not JSON; is this an OpenAI-compatible /v1 URL?")) from None

    def _events(self, resp) -> Iterator[str]:
        """Server-sent events: `data:` lines, an empty line ends an event, `data: [DONE]` ends the reply."""
        data: list[str] = []
        while True:
            raw = resp.readline()
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n") if raw else None
            if line is None or line == "":
                if data:
                    payload = "\n".join(data)
                    data = []
                    if payload.strip() == "[DONE]":
                        return
                    piece = self._delta(payload)
                    if piece:
                        yield piece
                if line is None:
                    return  # the server closed the stream: what arrived is the reply
                continue
            if line.startswith(":"):
                continue  # an SSE comment (keep-alive)
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))

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
        delta = choice.get("delta") or choice.get("message") or {}
        return str(delta.get("content") or choice.get("text") or "")


def _message_text(data: dict, url: str) -> str:
    try:
        return str(data["choices"][0]["message"]["content"] or "")
    except (KeyError, IndexError, TypeError):
        if isinstance(data, dict) and data.get("error"):
            raise LLMError(f"could not reach the LLM server at {url}: it reported an error") from None
        raise LLMError(f"could not reach the LLM server at {url}: the reply has no choices[0].message") from None


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


def _reason(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return f"no reply within {timeout_s:g} s (llm_timeout_s)"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error ({exc.reason or exc})"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without a reply"
    if isinstance(exc, http.client.IncompleteRead):
        return "the reply broke off"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
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
