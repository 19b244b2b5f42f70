import json
import os
import unittest

from trusthub_sdk.redact import redact

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "redaction-vectors.json")


class SharedVectors(unittest.TestCase):
    """The same vectors as the hub's core::redact: every SDK redacts alike."""

    def setUp(self):
        with open(VECTORS, encoding="utf-8") as f:
            self.v = json.load(f)

    def test_each_kind_is_replaced(self):
        for given, want in self.v["redacted"]:
            self.assertEqual(redact(given)[0], want, given)

    def test_ordinary_text_is_left_alone(self):
        for s in self.v["unchanged"]:
            self.assertEqual(redact(s)[0], s, s)

    def test_counts_per_kind(self):
        _, counts = redact("a@b.io 10.0.0.1 10.0.0.2")
        self.assertEqual(counts, {"email": 1, "ip": 2})


if __name__ == "__main__":
    unittest.main()
