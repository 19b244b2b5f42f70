#!/usr/bin/env bash
# Dependency discovery (issue 37): the real agent binary's `dependencies` command on a host
# with 50 projects and 20,000 installed packages — 20 npm projects (node_modules of 600
# packages each, a third nested, some scoped, and the package-lock.json that lists them), 20
# Python projects (a virtualenv of 250 distributions with full METADATA, and a uv.lock) and
# 10 Ruby projects (a Bundler gem home of 300 gemspecs, and the Gemfile.lock) — run RUNS
# times under /usr/bin/time: CPU (user + sys) and peak RSS. In the same run, the raw ceiling:
# `cat` of every metadata file and lockfile the agent has to read (the I/O alone).
# Run by hand: bash bench/deps.sh   (RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p trusthub-agent --bin trusthub-agent >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir/host" <<'PY'
import json, os, sys
root = sys.argv[1]
def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
desc = "".join(f"Line {i} of a package's long description, as READMEs are.\n" for i in range(60))
total = 0
for p in range(20):
    proj = f"{root}/srv/node-{p:02}"
    packages = {"": {"name": f"node-{p}", "version": "1.0.0"}}
    for i in range(600):
        name = f"@scope{i % 7}/pkg-{i}" if i % 10 == 0 else f"pkg-{i}"
        path = f"node_modules/{name}" if i % 3 else f"node_modules/pkg-{i - 1}/node_modules/{name}"
        meta = {"name": name, "version": f"{i % 9}.{i % 13}.{i % 5}", "description": desc[:800],
                "main": "index.js", "license": "MIT", "scripts": {"test": "tap"},
                "repository": {"type": "git", "url": f"https://example.com/{name}.git"},
                "dependencies": {f"pkg-{j}": "^1.0.0" for j in range(i % 6)}}
        write(f"{proj}/{path}/package.json", json.dumps(meta, indent=2))
        packages[path] = {"version": meta["version"], "resolved": f"https://registry.npmjs.org/{name}/-/x.tgz",
                          "integrity": "sha512-" + "A" * 86 + "=="}
        total += 1
    write(f"{proj}/package-lock.json", json.dumps({"name": f"node-{p}", "lockfileVersion": 3,
          "requires": True, "packages": packages}, indent=2))
for p in range(20):
    proj = f"{root}/srv/py-{p:02}"
    sp = f"{proj}/.venv/lib/python3.11/site-packages"
    lock = ['version = 1', 'requires-python = ">=3.11"', '']
    for i in range(250):
        name, ver = f"dist_{i}", f"{i % 4}.{i % 11}.{i % 3}"
        write(f"{sp}/{name}-{ver}.dist-info/METADATA",
              f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\nSummary: a distribution\n"
              f"Home-page: https://example.com/{name}\nAuthor: someone\nLicense: MIT\n"
              + "".join(f"Classifier: Programming Language :: Python :: 3.{k}\n" for k in range(8, 14))
              + f"Requires-Python: >=3.8\n\n{desc}")
        write(f"{sp}/{name}-{ver}.dist-info/RECORD", "")
        lock += ['[[package]]', f'name = "{name}"', f'version = "{ver}"',
                 'source = { registry = "https://pypi.org/simple" }', '']
        total += 1
    write(f"{proj}/uv.lock", "\n".join(lock))
for p in range(10):
    proj = f"{root}/srv/rb-{p:02}"
    home = f"{proj}/vendor/bundle/ruby/3.1.0"
    specs = []
    for i in range(300):
        name, ver = f"gem-{i}", f"{i % 5}.{i % 7}.{i % 3}"
        write(f"{home}/specifications/{name}-{ver}.gemspec",
              f"# -*- encoding: utf-8 -*-\n# stub: {name} {ver} ruby lib\n\nGem::Specification.new do |s|\n"
              f"  s.name = \"{name}\".freeze\n  s.version = \"{ver}\"\n  s.summary = \"a gem\".freeze\n"
              + "".join(f"  s.add_runtime_dependency(%q<gem-{j}>.freeze, [\">= 0\"])\n" for j in range(i % 8))
              + "end\n")
        specs.append(f"    {name} ({ver})")
        total += 1
    write(f"{proj}/Gemfile.lock", "GEM\n  remote: https://rubygems.org/\n  specs:\n" + "\n".join(specs)
          + "\n\nPLATFORMS\n  ruby\n\nBUNDLED WITH\n   2.3.15\n")
print(f"tree: 50 projects, {total} installed packages")
PY
files=$(find "$dir/host" \( -name package.json -o -name METADATA -o -name '*.gemspec' -o -name '*.lock' \
  -o -name package-lock.json \) | wc -l)
echo "files the agent reads: $files"
# Warm the page cache once, as on a host whose inventory runs every few hours it may or may not be.
find "$dir/host" -type f -exec cat {} + >/dev/null
for run in $(seq 1 "${RUNS:-5}"); do
  /usr/bin/time -f "%U %S %M" -o "$dir/agent.time" target/release/trusthub-agent dependencies \
    --project-path "$dir/host/srv" --binary-path "$dir/none" --no-process-discovery --no-system \
    >"$dir/out.jsonl" 2>"$dir/summary.txt"
  /usr/bin/time -f "%U %S %M" -o "$dir/raw.time" sh -c \
    "find '$dir/host' \\( -name package.json -o -name METADATA -o -name '*.gemspec' -o -name '*.lock' -o -name package-lock.json \\) -exec cat {} + >/dev/null"
  read -r au as am <"$dir/agent.time"
  read -r ru rs rm <"$dir/raw.time"
  python3 -c "
a, r = $au + $as, $ru + $rs
print(f'run $run: agent {a:.2f} s CPU ({$au:.2f} user + {$as:.2f} sys), peak RSS {$am / 1024:.1f} MiB, '
      f'{sum(1 for _ in open(\"$dir/out.jsonl\"))} entries; raw read {r:.2f} s CPU; ratio {a / max(r, 0.01):.1f}x')"
done
tail -n 1 "$dir/summary.txt"
