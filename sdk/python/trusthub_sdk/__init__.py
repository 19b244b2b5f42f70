"""Trusthub SDK for LLM traces: redaction in-process, prompt hashes, background batching.

    from trusthub_sdk import Client
    client = Client("https://hub.example.com", "tht_...", team="search")
    with client.trace("answer") as t:
        with t.call("gpt-4o", prompt) as c:
            response = openai_client.chat.completions.create(...)
            c.usage_from(response)
"""

from .client import Call, Client, Trace
from .redact import redact

__all__ = ["Client", "Trace", "Call", "redact"]
__version__ = "0.1.0"
