#!/usr/bin/env python3
"""The include rules ARCHITECTURE.md states, checked on every ./dev lint:
no cycle of folders anywhere (folder A -> B when a file in A includes a
header in B); no cycle of modules of any length in the product code (a
module is a .hpp and its .cpp; A -> B when a file of A includes a header of
B; tests/ aside); no product source file (tests/ aside) over 600 lines; the
libraries never include a program's headers; daemon/fleet_link reaches nothing
of the API layer, even through other headers; the daemon's core never
includes the API layer, which it meets only in wiring/ and main.cpp; the
API's HTTP machinery knows neither the routes nor the rendering; the
rendering formats answers, it neither asks for them nor reads a request;
and the answer layer (daemon/answers) uses only the core's values, never
code of the rest of the core (its library links none).
Prints each break of a rule, naming the files, and exits 1."""
import os, re, subprocess, sys
from collections import defaultdict
root = sys.argv[1] if len(sys.argv) > 1 else "."
# Tracked and new files alike, so a check before the commit sees what it adds.
listed = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
                        capture_output=True, text=True, check=True).stdout.split()
listed = [f for f in listed if os.path.isfile(os.path.join(root, f))]
files = [f for f in listed if f.endswith((".hpp", ".cpp", ".h", ".c"))]
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
# Which includes make an edge of a graph, to name them in a finding.
def why(key_of, a, b, limit=3):
    pairs = sorted(f"{f} includes {h}" for f, hs in edges.items() if key_of(f) == a for h in hs if key_of(h) == b)
    return "; ".join(pairs[:limit]) + (f"; and {len(pairs) - limit} more" if len(pairs) > limit else "")
def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v: break
            if len(comp) > 1: found.append(sorted(comp))
    sys.setrecursionlimit(max(1000, 4 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index: visit(v)
    return found
def report_cycles(kind, graph, key_of):
    for comp in cycles(graph):
        inside = set(comp)
        links = [f"{a} -> {b} ({why(key_of, a, b)})" for a in comp for b in sorted(graph[a]) if b in inside]
        problems.append(f"a cycle of {kind}: {', '.join(comp)}: " + "; ".join(links))
# Modules of the product code, any length of cycle.
product = lambda p: not p.startswith("tests/")
report_cycles("modules", {a: {b for b in bs if product(b)} for a, bs in medges.items() if product(a)}, module)
# Folders, everywhere (tests/ too): a folder's files include nothing that includes them back.
folder = os.path.dirname
fedges = defaultdict(set)
for f, hs in edges.items():
    for h in hs:
        if folder(h) != folder(f) and os.path.isfile(os.path.join(root, h)): fedges[folder(f)].add(folder(h))
report_cycles("folders", fedges, folder)
# A product source over 600 lines is more than one idea: split it by responsibility.
max_lines = 600
sources = (".hpp", ".cpp", ".h", ".c", ".py", ".sh")
for f in listed:
    if product(f) and f.endswith(sources):
        with open(os.path.join(root, f), errors="replace") as text:
            n = sum(1 for _ in text)
        if n > max_lines:
            problems.append(f"{f} has {n} lines, over {max_lines}: split it by responsibility")
libraries = ("api/", "base/", "chunk/", "fleet/", "index/", "shard/", "swh/", "xetcache/")
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
