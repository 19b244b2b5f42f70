"""Redaction of personal data and secrets before anything leaves the program.

A faithful port of the hub's ``core::redact`` (same scanners, same markers, same checksums),
checked against the shared vectors in ``sdk/redaction-vectors.json``: emails, phone numbers,
IBANs (mod-97), card numbers (Luhn and issuer length), bearer tokens, API keys of well-known
shapes, IPv4 and IPv6 addresses. Ordinary numbers, dates, versions and prices stay as they are.
"""

import ipaddress

MARKERS = {
    "bearer": "[TOKEN]",
    "api_key": "[API_KEY]",
    "email": "[EMAIL]",
    "iban": "[IBAN]",
    "card": "[CARD]",
    "phone": "[PHONE]",
    "ip": "[IP]",
}

KEY_PREFIXES = (
    "sk-proj-", "sk-ant-", "sk_live_", "sk_test_", "rk_live_", "pk_live_", "sk-", "ghp_",
    "gho_", "ghs_", "github_pat_", "xoxb-", "xoxp-", "glpat-", "hf_", "whsec_", "tht_",
    "tha_", "the_",
)

_DIGITS = "0123456789"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = _UPPER.lower()
_ALNUM = set(_DIGITS + _UPPER + _LOWER)
_HEX = set(_DIGITS + "abcdefABCDEF")


def _word(c):
    return c in _ALNUM or c == "_"


def _run(s, i, ok):
    while i < len(s) and ok(s[i]):
        i += 1
    return i


def _ends_word(s, e):
    return e >= len(s) or not _word(s[e])


def _at(s, i):
    return s[i] if 0 <= i < len(s) else ""


def _bearer(s, i):
    if s[i:i + 7].lower() != "bearer ":
        return None
    st = _run(s, i + 7, lambda c: c == " ")
    e = _run(s, st, lambda c: c in _ALNUM or c in "-._~+/=")
    return (st, e) if e - st >= 8 else None


def _api_key(s, i):
    rest = s[i:]
    if rest.startswith("AKIA"):
        e = _run(s, i + 4, lambda c: c in _UPPER or c in _DIGITS)
        return e if e - i == 20 and _ends_word(s, e) else None
    if rest.startswith("AIza"):
        e = _run(s, i + 4, lambda c: c in _ALNUM or c in "_-")
        return e if e - i == 39 else None
    for p in KEY_PREFIXES:
        if rest.startswith(p):
            e = _run(s, i + len(p), lambda c: c in _ALNUM or c in "_-")
            body = s[i + len(p):e]
            if len(body) >= 16 and any(c in _DIGITS for c in body):
                return e
            return None
    return None


def _email(s, i):
    at = _run(s, i, lambda c: c in _ALNUM or c in "._%+-")
    if at == i or _at(s, at) != "@" or s[i] == ".":
        return None
    e = _run(s, at + 1, lambda c: c in _ALNUM or c in ".-")
    while e > at + 1 and s[e - 1] in ".-":
        e -= 1
    domain = s[at + 1:e]
    tld = domain.rsplit(".", 1)[-1]
    ok = "." in domain and ".." not in domain and len(tld) >= 2 and all(c in _UPPER + _LOWER for c in tld)
    return e if ok else None


def _grouped(s, i, ok, most):
    pos = []
    j = i
    while j < len(s) and len(pos) < most:
        if ok(s[j]):
            pos.append(j)
            j += 1
        elif s[j] in " -" and j + 1 < len(s) and ok(s[j + 1]) and pos:
            j += 1
        else:
            break
    return pos


def _mod97(chars):
    r = 0
    for c in chars[4:] + chars[:4]:
        v = int(c) if c in _DIGITS else ord(c) - ord("A") + 10
        r = (r * 100 + v) % 97 if v >= 10 else (r * 10 + v) % 97
    return r


def _iban(s, i):
    if not (_at(s, i) in _UPPER and _at(s, i + 1) in _UPPER and _at(s, i + 2) in _DIGITS and _at(s, i + 3) in _DIGITS):
        return None
    if not all(_at(s, i + k) for k in range(4)):
        return None
    pos = _grouped(s, i, lambda c: c in _UPPER or c in _DIGITS, 34)
    for n in range(len(pos), 14, -1):
        e = pos[n - 1] + 1
        if _ends_word(s, e) and _mod97("".join(s[p] for p in pos[:n])) == 1:
            return e
    return None


def _inside_number(s, i):
    return i >= 2 and s[i - 1] in " -" and s[i - 2] in _DIGITS


def _brand_length_ok(d):
    n = len(d)
    p2 = d[0] * 10 + d[1]
    p4 = p2 * 100 + d[2] * 10 + d[3]
    if d[0] == 4:
        return n in (13, 16, 19)
    if d[0] == 3 and p2 in (34, 37):
        return n == 15
    if d[0] == 3 and p2 == 35:
        return 16 <= n <= 19
    if d[0] == 3 and p2 in (30, 36, 38):
        return 14 <= n <= 19
    if d[0] == 5 and 51 <= p2 <= 55:
        return n == 16
    if d[0] in (5, 6):
        return 12 <= n <= 19
    if d[0] == 2 and 2221 <= p4 <= 2720:
        return n == 16
    return False


def _luhn(d):
    total = 0
    for k, x in enumerate(reversed(d)):
        if k % 2 == 1:
            x = x * 2 - 9 if x * 2 > 9 else x * 2
        total += x
    return total % 10 == 0 and any(x != 0 for x in d)


def _card(s, i):
    if _at(s, i) not in _DIGITS or not _at(s, i) or _inside_number(s, i):
        return None
    pos = _grouped(s, i, lambda c: c in _DIGITS, 19)
    for n in range(len(pos), 12, -1):
        e = pos[n - 1] + 1
        digits = [int(s[p]) for p in pos[:n]]
        if _ends_word(s, e) and _brand_length_ok(digits) and _luhn(digits):
            return e
    return None


def _phone(s, i):
    if _inside_number(s, i):
        return None
    c = _at(s, i)
    plus = c == "+"
    if not plus and c != "(" and (not c or c not in _DIGITS):
        return None
    e = _run(s, i + (1 if plus else 0), lambda x: x in _DIGITS or x in " -.()")
    while e > i and s[e - 1] not in _DIGITS:
        e -= 1
    span = s[i:e]
    digits = sum(1 for x in span if x in _DIGITS)
    seps = sum(1 for x in span if x in " -.()")
    if not _ends_word(s, e) or "  " in span:
        return None
    ok = 8 <= digits <= 15 if plus else digits == 10 and seps >= 2 and "." not in span
    return e if ok else None


def _ipv4(s, i):
    e = _run(s, i, lambda c: c in _DIGITS or c == ".")
    while e > i and s[e - 1] == ".":
        e -= 1
    text = s[i:e]
    parts = text.split(".")
    if len(parts) != 4 or not all(p and len(p) <= 3 for p in parts):
        return None
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return None
    if any(len(p) > 1 and p[0] == "0" for p in parts):
        return None  # Rust's parser refuses leading zeros too
    if not _ends_word(s, e) or (_at(s, e) == "." and _at(s, e + 1) in _DIGITS and _at(s, e + 1)):
        return None
    return e


def _ipv6(s, i):
    e = _run(s, i, lambda c: c in _HEX or c in ":.")
    while e > i and (s[e - 1] == "." or (s[e - 1] == ":" and not (e >= 2 and s[e - 2] == ":"))):
        e -= 1
    text = s[i:e]
    if text.count(":") < 2 or not _ends_word(s, e):
        return None
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return None
    return e


def _detect(s, i):
    hit = _bearer(s, i)
    if hit:
        return "bearer", hit[0], hit[1]
    for kind, f in (("api_key", _api_key), ("email", _email), ("iban", _iban), ("card", _card),
                    ("phone", _phone), ("ip", _ipv6), ("ip", _ipv4)):
        e = f(s, i)
        if e is not None:
            return kind, i, e
    return None


def redact(text):
    """Returns ``(redacted_text, counts)``: markers such as ``[EMAIL]`` in place of what
    was found, and how many of each kind."""
    out = []
    counts = {}
    i = copied = 0
    n = len(text)
    while i < n:
        boundary = i == 0 or not _word(text[i - 1])
        hit = _detect(text, i) if boundary and ord(text[i]) < 128 else None
        if hit:
            kind, start, end = hit
            out.append(text[copied:start])
            out.append(MARKERS[kind])
            counts[kind] = counts.get(kind, 0) + 1
            copied = i = end
        else:
            i += 1
    out.append(text[copied:])
    return "".join(out), counts
