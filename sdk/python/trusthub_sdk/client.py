"""The Trusthub LLM-trace client: record calls, send them in the background.

Nothing here blocks the host program or raises into it because of the hub: traces go into a
bounded in-memory buffer (``max_buffer`` traces; when full, the new trace is dropped and
counted), a daemon thread sends them in batches to ``POST /api/v1/ai/traces``, retries with
backoff while the hub is unreachable or busy, and the buffer is flushed at interpreter exit.
Prompts are redacted and only their SHA-256 is sent; redacted content only with
``send_content=True``.
"""

import atexit
import collections
import datetime
import hashlib
import json
import threading
import time
import urllib.error
import urllib.request
import uuid

from .redact import redact

__all__ = ["Client", "Trace", "Call"]


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _rfc3339(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Call:
    """One LLM call of a trace; fill in what the provider answered."""

    def __init__(self, trace, model, prompt, provider=None):
        self._trace = trace
        self.model = model
        self.provider = provider
        redacted, _ = redact(prompt or "")
        self.prompt_sha256 = _sha256(redacted)
        self._redacted_prompt = redacted
        self.prompt_tokens = self.completion_tokens = 0
        self.cache_read_tokens = self.cache_write_tokens = self.reasoning_tokens = 0
        self.refused = False
        self.content = None
        self.latency_ms = 0
        self._started = None

    def set_usage(self, prompt_tokens, completion_tokens, cache_read_tokens=0, cache_write_tokens=0, reasoning_tokens=0):
        self.prompt_tokens, self.completion_tokens = int(prompt_tokens), int(completion_tokens)
        self.cache_read_tokens, self.cache_write_tokens = int(cache_read_tokens), int(cache_write_tokens)
        self.reasoning_tokens = int(reasoning_tokens)
        return self

    def usage_from(self, response):
        """Reads usage from an OpenAI- or Anthropic-style response (object or dict)."""
        usage = _get(response, "usage")
        if usage is None:
            return self
        prompt = _get(usage, "prompt_tokens", _get(usage, "input_tokens", 0)) or 0
        completion = _get(usage, "completion_tokens", _get(usage, "output_tokens", 0)) or 0
        details = _get(usage, "prompt_tokens_details")
        cached = _get(details, "cached_tokens", 0) if details is not None else _get(usage, "cache_read_input_tokens", 0)
        written = _get(usage, "cache_creation_input_tokens", 0) or 0
        cdetails = _get(usage, "completion_tokens_details")
        reasoning = _get(cdetails, "reasoning_tokens", 0) if cdetails is not None else 0
        if _get(usage, "cache_read_input_tokens") is not None or written:
            # Anthropic counts cache reads and writes apart from input_tokens.
            prompt += (cached or 0) + written
        self.set_usage(prompt, completion, cached or 0, written, reasoning or 0)
        for choice in _get(response, "choices", []) or []:
            if _get(choice, "finish_reason") in ("content_filter", "refusal"):
                self.refused = True
        if _get(response, "stop_reason") == "refusal":
            self.refused = True
        return self

    def set_refused(self, refused=True):
        self.refused = bool(refused)
        return self

    def set_content(self, text):
        """Content to send (redacted) when the client has ``send_content=True``."""
        self.content = text
        return self

    def __enter__(self):
        self._started = time.monotonic()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.latency_ms = int((time.monotonic() - self._started) * 1000)
        self._trace._add(self)
        return False


def _get(obj, key, default=None):
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


class Trace:
    """A unit of work (a request, a job) with zero or more LLM calls; sent when it ends."""

    def __init__(self, client, name, tags=None, app_id=None):
        self._client = client
        self.trace_id = uuid.uuid4().hex
        self.name = name
        self.tags = list(tags or [])
        self.app_id = app_id
        self.started_at = _now()
        self.calls = []
        self._ended = False

    def call(self, model, prompt, provider=None):
        """``with trace.call("gpt-4o", prompt) as c: ... c.usage_from(response)``; the
        latency is measured."""
        return Call(self, model, prompt, provider)

    def record_call(self, model, prompt, prompt_tokens, completion_tokens, latency_ms, **kw):
        """Records a call made elsewhere."""
        c = Call(self, model, prompt, kw.pop("provider", None))
        c.set_usage(prompt_tokens, completion_tokens, kw.pop("cache_read_tokens", 0),
                    kw.pop("cache_write_tokens", 0), kw.pop("reasoning_tokens", 0))
        c.refused = bool(kw.pop("refused", False))
        c.content = kw.pop("content", None)
        c.latency_ms = int(latency_ms)
        self._add(c)
        return c

    def _add(self, call):
        self.calls.append(call)

    def end(self):
        if not self._ended:
            self._ended = True
            self._client._enqueue(self._wire())

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.end()
        return False

    def _wire(self):
        blobs = []
        calls = []
        for i, c in enumerate(self.calls):
            item = {
                "span_id": "%s-%d" % (self.trace_id[:24], i),
                "model": c.model,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "cache_read_tokens": c.cache_read_tokens,
                "cache_write_tokens": c.cache_write_tokens,
                "reasoning_tokens": c.reasoning_tokens,
                "latency_ms": c.latency_ms,
                "prompt_sha256": c.prompt_sha256,
                "refused": c.refused,
            }
            if c.provider:
                item["provider"] = c.provider
            if self._client.send_content:
                text = redact(c.content)[0] if c.content is not None else c._redacted_prompt
                digest = _sha256(text)
                item["content_sha256"] = digest
                blobs.append({"sha256": digest, "text": text})
            calls.append(item)
        trace = {
            "trace_id": self.trace_id,
            "name": self.name,
            "team": self._client.team,
            "started_at": _rfc3339(self.started_at),
            "ended_at": _rfc3339(max(_now(), self.started_at)),
            "tags": self._client._tags + self.tags,
            "calls": calls,
        }
        if self.app_id:
            trace["app_id"] = self.app_id
        return trace, blobs


class Client:
    """Configured with the hub's URL, an API key (scope ``ai_ingest``), the team (a tag on
    every trace) and optionally the tenant's name (also a tag; the key decides the tenant)."""

    def __init__(self, hub_url, api_key, team, tenant=None, send_content=False, max_buffer=10000,
                 batch_size=100, flush_interval=2.0, timeout=10.0):
        self.endpoint = hub_url.rstrip("/") + "/api/v1/ai/traces"
        self._key = api_key
        self.team = team
        self.send_content = send_content
        self._tags = ["team:" + team] + (["tenant:" + tenant] if tenant else [])
        self._max = max(1, int(max_buffer))
        self._batch = max(1, min(int(batch_size), 500))
        self._interval = flush_interval
        self._timeout = timeout
        self._buf = collections.deque()
        self._cond = threading.Condition()
        self._inflight = 0
        self._closed = False
        self._flushing = False
        self._due = None
        self._not_before = None
        self.sent = 0
        self.dropped = 0
        self.last_error = None
        self._thread = threading.Thread(target=self._run, name="trusthub-sdk", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def trace(self, name, tags=None, app_id=None):
        """``with client.trace("answer") as t: ...``"""
        return Trace(self, name, tags, app_id)

    def wrap(self, model, name=None, provider=None):
        """Decorator for a function ``f(prompt, ...)`` returning a provider response: each call
        becomes a trace with one LLM call, usage read from the response."""
        def deco(f):
            def inner(prompt, *a, **kw):
                with self.trace(name or getattr(f, "__name__", "llm")) as t:
                    with t.call(model, prompt, provider) as c:
                        response = f(prompt, *a, **kw)
                        try:
                            c.usage_from(response)
                        except Exception as e:  # never break the host program
                            self.last_error = "usage: %s" % e
                        return response
            return inner
        return deco

    def _enqueue(self, item):
        with self._cond:
            if self._closed or len(self._buf) >= self._max:
                self.dropped += 1
                return False
            if not self._buf:
                self._due = time.monotonic() + self._interval
            self._buf.append(item)
            if len(self._buf) >= self._batch:
                self._cond.notify()
            return True

    def pending(self):
        with self._cond:
            return len(self._buf) + self._inflight

    def flush(self, timeout=5.0):
        """Waits until everything buffered was sent or refused; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            try:
                while self._buf or self._inflight:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._flushing = True
                    self._cond.notify_all()
                    self._cond.wait(min(left, 0.05))
            finally:
                self._flushing = False
        return True

    def close(self, timeout=5.0):
        """Flushes (up to ``timeout``), then stops; what is left is counted as dropped."""
        if self._closed:
            return
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self.dropped += len(self._buf)
            self._buf.clear()
            self._cond.notify_all()

    def _next_batch(self):
        """Waits until a batch is due (full, its oldest trace waited ``flush_interval``, a
        flush asked for, or closing), never while backing off; None when closed and empty."""
        with self._cond:
            while True:
                if self._closed and not self._buf:
                    return None
                now = time.monotonic()
                backing_off = self._not_before is not None and now < self._not_before
                due = (self._closed or self._flushing or len(self._buf) >= self._batch
                       or (self._due is not None and now >= self._due))
                if self._buf and not backing_off and due:
                    break
                if backing_off:
                    wake = self._not_before
                elif self._buf and self._due is not None:
                    wake = self._due
                else:
                    wake = now + self._interval
                self._cond.wait(max(wake - now, 0.001))
            batch = [self._buf.popleft() for _ in range(min(self._batch, len(self._buf)))]
            # What is left waited as long as this batch: it goes next.
            self._due = time.monotonic() if self._buf else None
            self._inflight = len(batch)
            return batch

    def _run(self):
        backoff = 0.5
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            outcome = self._send(batch)
            with self._cond:
                self._inflight = 0
                if outcome == "sent":
                    self.sent += len(batch)
                    backoff = 0.5
                    self._not_before = None
                elif outcome == "refused":
                    self.dropped += len(batch)
                else:
                    # Put back, oldest first, within the bound; try again after the backoff.
                    for item in reversed(batch):
                        if len(self._buf) < self._max:
                            self._buf.appendleft(item)
                        else:
                            self.dropped += 1
                    self._due = time.monotonic()
                    self._not_before = time.monotonic() + backoff
                    backoff = min(backoff * 2, 30.0)
                self._cond.notify_all()

    def _send(self, batch):
        traces, blobs, seen = [], [], set()
        for trace, trace_blobs in batch:
            traces.append(trace)
            for b in trace_blobs:
                if b["sha256"] not in seen:
                    seen.add(b["sha256"])
                    blobs.append(b)
        body = json.dumps({"traces": traces, "blobs": blobs}).encode("utf-8")
        req = urllib.request.Request(self.endpoint, data=body, method="POST", headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + self._key,
            "User-Agent": "trusthub-sdk-python/0.1",
        })
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as r:
                r.read()
                return "sent"
        except urllib.error.HTTPError as e:
            self.last_error = "HTTP %d: %s" % (e.code, e.read(2000).decode("utf-8", "replace"))
            return "retry" if e.code == 429 or e.code >= 500 else "refused"
        except Exception as e:  # unreachable, timeout, reset: keep and retry
            self.last_error = str(e)
            return "retry"
