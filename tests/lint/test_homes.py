#!/usr/bin/env python3
"""Tests find their code: every product .cpp over 60 lines (tests/ aside) has a
test file of its stem (<stem>_test.cpp or <stem>_test.py anywhere under
tests/), or a line in tests/lint/test_homes.txt naming where it is tested
instead and why it has no test of its own. Run by ./dev lint beside
layering.py.

A stem that several product files share (five lookup-ish files, two
merge.cpp) counts only for the file whose folder the test includes a header
of, so one index/merge_test.cpp does not pass for xetcache/merge.cpp too.
The list is kept true: a line for a file that has its own test now, that no
longer exists, or that names a test file that does not exist is an error.
Prints each break, naming the file, and exits 1."""
import os, re, subprocess, sys
from collections import defaultdict

root = sys.argv[1] if len(sys.argv) > 1 else "."
homes_file = "tests/lint/test_homes.txt"
max_untested_lines = 60
# Tracked and new files alike, so a check before the commit sees what it adds.
listed = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
                        capture_output=True, text=True, check=True).stdout.split()
listed = [f for f in listed if os.path.isfile(os.path.join(root, f))]
product = [f for f in listed if f.endswith(".cpp") and not f.startswith("tests/")]
test_re = re.compile(r"^(.*)_test\.(cpp|py)$")
tests_by_stem = defaultdict(list)
for f in listed:
    m = test_re.match(os.path.basename(f))
    if f.startswith("tests/") and m:
        tests_by_stem[m.group(1)].append(f)
stem_count = defaultdict(int)
for f in product:
    stem_count[os.path.basename(f)[:-4]] += 1
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def text(f):
    with open(os.path.join(root, f), errors="replace") as t:
        return t.read()


def lines(f):
    with open(os.path.join(root, f), errors="replace") as t:
        return sum(1 for _ in t)


def stem_test(f):
    """The test file of f's stem, or None."""
    stem, folder = os.path.basename(f)[:-4], os.path.dirname(f)
    for t in tests_by_stem.get(stem, ()):
        if stem_count[stem] == 1:
            return t
        if t.endswith(".cpp") and any(os.path.dirname(h) == folder for h in inc.findall(text(t))):
            return t
    return None


problems = []
homes = {}
try:
    raw = text(homes_file).splitlines()
except FileNotFoundError:
    raw = []
for n, line in enumerate(raw, 1):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    cols = [c.strip() for c in line.split("|")]
    where = f"{homes_file}:{n}"
    if len(cols) != 3 or not all(cols):
        problems.append(f"{where}: expected 'product file | test file [what in it] | why no test of its own'")
        continue
    path, tested_by, why = cols
    if path in homes:
        problems.append(f"{where}: {path} is listed twice")
    homes[path] = tested_by
    if path not in product:
        problems.append(f"{where}: {path} is not a product .cpp (moved or removed? drop or fix the line)")
        continue
    own = stem_test(path)
    if own:
        problems.append(f"{where}: {path} has its own test {own} now: drop the line")
    test_file = tested_by.split()[0]
    if not test_file.startswith("tests/") or test_file not in listed:
        problems.append(f"{where}: {path} is said to be tested by {test_file}, which is no test file here")

with_test = 0
for f in sorted(product):
    if stem_test(f):
        with_test += 1
        continue
    if f in homes:
        continue
    n = lines(f)
    if n > max_untested_lines:
        problems.append(f"{f} ({n} lines) has no test of its stem ({os.path.basename(f)[:-4]}_test.cpp or .py "
                        f"under tests/) and no line in {homes_file}: write its test, or say where it is tested")

for p in problems:
    print("== test homes:", p, file=sys.stderr)
if "-v" in sys.argv[2:]:
    print(f"{with_test} of {len(product)} product .cpp files have a test of their stem; "
          f"{len(homes)} are listed in {homes_file}", file=sys.stderr)
sys.exit(1 if problems else 0)
