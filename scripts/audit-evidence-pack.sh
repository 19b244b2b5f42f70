#!/usr/bin/env bash
# Verifies an evidence pack with openssl, sha256sum, tar and bash only (SPEC Appendix).
# Usage: audit-evidence-pack.sh pack-<id>.tar.gz [expected public key hex]. Exit 0 when everything matches.
set -eu
pack=$(realpath "$1"); expect=${2:-}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
tar -xzf "$pack" -C "$dir"; cd "$dir"
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" manifest.json; }
key=$(field signing_public_hex)
[ -z "$expect" ] || [ "$key" = "$expect" ] || { echo "FAIL key: $key is not the pinned key"; exit 1; }
# 1. Ed25519 signature over the exact manifest.json bytes (DER prefix of an Ed25519 public key).
printf "$(printf '302a300506032b6570032100%s' "$key" | sed 's/../\\x&/g')" > pub.der
openssl pkey -pubin -inform DER -in pub.der -out pub.pem
base64 -d manifest.sig > sig.bin
openssl pkeyutl -verify -pubin -inkey pub.pem -rawin -in manifest.json -sigfile sig.bin
# 2. traces.jsonl and spans.jsonl against the signed hashes.
echo "$(field traces_sha256)  traces.jsonl" | sha256sum -c -
echo "$(field spans_sha256)  spans.jsonl" | sha256sum -c -
# 3. Every blob of the signed index: its file hashes to its name (a pack may have none).
{ grep -o '"hash":"[0-9a-f]*","sha256":"[0-9a-f]*"' manifest.json || true; } | while IFS='"' read -r _ _ _ h _ _ _ s _; do
  echo "$s  blobs/$h.txt"
done > blobs.sha256
if [ -s blobs.sha256 ]; then
  sha256sum -c --quiet blobs.sha256 && echo "blobs: OK ($(wc -l < blobs.sha256) files)"
else
  echo "blobs: none in this pack"
fi
if [ -n "$expect" ]; then
  echo "key: pinned $key"
else
  echo "key: NOT pinned — signed by $key; compare it with GET /api/v1/ai/evidence-key or pass it as the second argument"
fi
