#!/usr/bin/env python3
"""The include rules ARCHITECTURE.md states, checked on every ./dev lint:
the libraries never include a program's headers; no two modules of daemon/
(a .hpp and its .cpp) include each other's headers; daemon/fleet_link reaches
nothing of the API layer, even through other headers; the daemon's core
never includes the API layer, which it meets only in wiring/ and main.cpp;
the API's HTTP machinery knows neither the routes nor the rendering; the
rendering formats answers, it neither asks for them nor reads a request;
and the answer layer (daemon/answers) uses only the core's values, never
code of the rest of the core (its library links none).
Prints each break of a rule and exits 1."""
import os, re, subprocess, sys
from collections import defaultdict
root = sys.argv[1] if len(sys.argv) > 1 else "."
files = subprocess.run(["git", "-C", root, "ls-files", "*.hpp", "*.cpp", "*.h", "*.c"],
                       capture_output=True, text=True, check=True).stdout.split()
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
edges = defaultdict(set)
for f in files:
    for h in inc.findall(open(os.path.join(root, f), errors="replace").read()):
        edges[f].add(h)
problems = []
def module(p): return os.path.splitext(p)[0]
# module A -> module B when a file of A includes a header of B
medges = defaultdict(set)
for f, hs in edges.items():
    for h in hs:
        if module(h) != module(f): medges[module(f)].add(module(h))
for a, bs in medges.items():
    for b in bs:
        if a < b and a in medges.get(b, ()) and a.startswith("daemon/"):
            problems.append(f"{a} and {b} include each other's headers")
libraries = ("api/", "chunk/", "fleet/", "index/", "shard/", "swh/", "xetcache/")
# What asks for an answer or reads a request: the Service, the handlers'
# Context, the answer layer's sources and lookups, the request parameters.
asking = {"daemon/api/service.hpp", "daemon/api/http/context.hpp", "daemon/answers/sources.hpp",
          "daemon/answers/lookups.hpp", "api/routes.hpp"}
modules_with_code = {f for f in files if f.endswith(".cpp")}
for f, hs in edges.items():
    for h in hs:
        if f.startswith(libraries) and h.startswith(("daemon/", "cli/")):
            problems.append(f"{f}: a library includes the program header {h}")
        if (f.startswith("daemon/") and h.startswith("daemon/api/")
                and not f.startswith(("daemon/api/", "daemon/wiring/")) and f != "daemon/main.cpp"):
            problems.append(f"{f}: the daemon's core includes the API layer's {h}")
        if f.startswith("daemon/api/http/") and h.startswith(("daemon/api/routes/", "daemon/api/render/")):
            problems.append(f"{f}: the HTTP machinery includes {h}")
        if f.startswith("daemon/api/render/") and h.startswith("daemon/api/routes/"):
            problems.append(f"{f}: the rendering includes the routes' {h}")
        if f.startswith("daemon/api/render/") and h in asking:
            problems.append(f"{f}: the rendering asks for answers or reads a request: {h}")
        if (f.startswith("daemon/answers/") and h.startswith("daemon/") and not h.startswith("daemon/answers/")
                and module(h) + ".cpp" in modules_with_code):
            problems.append(f"{f}: the answer layer includes the core's code {h} (only its values)")
def reach(f, seen=None):
    seen = set() if seen is None else seen
    for h in edges.get(f, ()):
        if h not in seen:
            seen.add(h)
            reach(h, seen)
    return seen
# Through other headers too: daemon/fleet_link knows nothing of the API layer.
for f in files:
    if f.startswith("daemon/fleet_link/"):
        for h in sorted(reach(f)):
            if h.startswith("daemon/api/"):
                problems.append(f"{f}: daemon/fleet_link reaches the API layer's {h}")
for p in sorted(set(problems)): print("== layering:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
