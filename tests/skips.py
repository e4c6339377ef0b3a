#!/usr/bin/env python3
"""Every test that skipped in a run of ./dev test, against tests/skips.txt.

  tests/skips.py LIST JUNIT...

reads the JUnit files ctest wrote (ctest --output-junit) and finds two kinds
of skip: a ctest test that did not run (exit 77 under SKIP_RETURN_CODE, or
GTEST_SKIP, which gtest_discover_tests reports as skipped), and a Python
unittest test skipped inside a ctest test that passed (its verbose line
"name (...) ... skipped 'reason'"). ctest counts both as fine, so a test
that stopped running would go unnoticed: each must be named in LIST with
why it cannot run there (`<ctest name> [<test method>]: <reason>`).

Prints every skip with its reason, listed or not, and exits 1 when CI=true
and one is not listed (elsewhere an unlisted skip is a warning: a laptop
may lack what CI has).
"""

import os
import re
import sys
import xml.etree.ElementTree as ET

UNITTEST_SKIP = re.compile(r"^(\w+) \([\w.]+\) \.\.\. skipped '(.*)'$", re.M)
GTEST_SKIP = re.compile(r": Skipped\n(.*)")


def listed(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            head, _, reason = line.partition(": ")
            name, _, method = head.partition(" ")
            out[(name, method)] = reason
    return out


def skips_in(junit):
    """[(ctest name, method or "", what the test said)] of one JUnit file."""
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        out = case.findtext("system-out") or ""
        if case.get("status") in ("notrun", "disabled") or case.find("skipped") is not None:
            said = GTEST_SKIP.search(out) or re.search(r"(.+)\s*$", out)
            found.append((name, "", said.group(1).strip() if said else "(nothing said)"))
        for method, reason in UNITTEST_SKIP.findall(out):
            found.append((name, method, reason))
    return found


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: skips.py LIST JUNIT...")
    known = listed(argv[1])
    skips = []
    for junit in argv[2:]:
        if os.path.exists(junit):
            skips += skips_in(junit)
    unlisted = [s for s in skips if (s[0], s[1]) not in known]
    print("== ./dev test: %d skipped (%s):" % (len(skips), os.path.relpath(argv[1])), file=sys.stderr)
    for name, method, said in sorted(set(skips)):
        reason = known.get((name, method))
        where = name + (" " + method if method else "")
        if reason is None:
            print("   NOT LISTED  %s: %s" % (where, said), file=sys.stderr)
        else:
            print("   listed      %s: %s" % (where, reason), file=sys.stderr)
    if unlisted and os.environ.get("CI") == "true":
        print("== ./dev test: %d skip(s) not in %s: CI must run every other test" % (len(unlisted), argv[1]),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
