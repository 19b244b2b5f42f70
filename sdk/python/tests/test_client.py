"""The client against a real hub (TRUSTHUB_TEST_HUB_URL, TRUSTHUB_TEST_TOKEN: the Rust test
crates/sdk/tests/hub.rs starts one and runs this suite) and against no hub at all."""

import hashlib
import os
import socket
import unittest

from trusthub_sdk import Client

HUB = os.environ.get("TRUSTHUB_TEST_HUB_URL")
TOKEN = os.environ.get("TRUSTHUB_TEST_TOKEN")


def closed_port_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


@unittest.skipUnless(HUB and TOKEN, "needs a hub: run through cargo test -p trusthub-sdk")
class AgainstTheHub(unittest.TestCase):
    def test_traces_arrive_redacted_and_hashed(self):
        c = Client(HUB, TOKEN, team="py-team", tenant="default", send_content=True, flush_interval=0.2)
        with c.trace("answer", tags=["env:test"]) as t:
            with t.call("gpt-4o", "Reset for jane@example.com please", provider="openai") as call:
                call.set_usage(900, 200, cache_read_tokens=100, reasoning_tokens=50)
                call.set_content("Done. I wrote to jane@example.com from 10.0.0.1")
            t.record_call("mystery-model", "hello", 10, 5, 120, refused=True)

        @c.wrap("gpt-4o-mini", name="summarize")
        def summarize(prompt):
            return {"choices": [{"finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 8,
                              "prompt_tokens_details": {"cached_tokens": 16},
                              "completion_tokens_details": {"reasoning_tokens": 2}}}

        self.assertEqual(summarize("card 4111 1111 1111 1111")["usage"]["prompt_tokens"], 40)
        self.assertTrue(c.flush(10), c.last_error)
        self.assertEqual((c.sent, c.dropped), (2, 0), c.last_error)
        c.close()

    def test_refused_batches_are_counted_not_raised(self):
        c = Client(HUB, TOKEN, team="py-team", flush_interval=0.1)
        with c.trace("bad") as t:
            t.record_call("", "x", 1, 1, 1)  # an empty model name: the hub answers 422
        self.assertTrue(c.flush(10))
        self.assertEqual(c.dropped, 1)
        self.assertIn("422", c.last_error)
        c.close()


class WithoutAHub(unittest.TestCase):
    def test_never_blocks_and_counts_what_it_drops(self):
        c = Client(closed_port_url(), "tht_x", team="t", max_buffer=5, batch_size=100, flush_interval=60)
        for i in range(8):
            with c.trace("t%d" % i) as t:
                t.record_call("gpt-4o", "p", 1, 1, 1)
        self.assertEqual(c.dropped, 3, "a full buffer drops the newest and counts it")
        self.assertFalse(c.flush(0.5), "nothing can be sent")
        c.close(0.1)
        self.assertEqual(c.dropped, 8, "what is left at close is counted too")
        self.assertEqual(c.sent, 0)

    def test_prompt_hash_is_of_the_redacted_prompt(self):
        c = Client(closed_port_url(), "tht_x", team="t", flush_interval=60)
        t = c.trace("x")
        call = t.call("m", "mail jane@example.com")
        self.assertEqual(call.prompt_sha256, hashlib.sha256(b"mail [EMAIL]").hexdigest())
        c.close(0.1)


if __name__ == "__main__":
    unittest.main()
