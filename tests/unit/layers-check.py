#!/usr/bin/env python3
"""layers-check.py SRC_DIR: every #include "..." in the project's own C names
its layer, and no layer includes one above it.

The project root is the only include path (CMakeLists.txt), so a quoted
include is a path from the root: "format/profile.h", never "profile.h"
(which would still compile from its own folder, through the compiler's
same-directory lookup). The layers point downward only:

    tools -> export -> symbolize -> format        sampler -> format

tests/, workloads/ and bench/ sit outside the layers and may include any of
them. Prints each violation; exit 1 if any.
"""
import os
import re
import sys

src = sys.argv[1]
below = {
    "format": {"format"},
    "sampler": {"sampler", "format"},
    "symbolize": {"symbolize", "format"},
    "export": {"export", "symbolize", "format"},
    "tools": {"tools", "export", "symbolize", "format"},
}
outside = ["tests", "workloads", "bench"]
include = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)

bad = []
n = 0
for top in list(below) + outside:
    for d, _, names in os.walk(os.path.join(src, top)):
        for name in sorted(names):
            if not name.endswith((".c", ".h", ".inc")):
                continue
            path = os.path.join(d, name)
            rel = os.path.relpath(path, src)
            with open(path, errors="replace") as f:
                text = f.read()
            for m in include.finditer(text):
                n += 1
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                where = "%s:%d: \"%s\"" % (rel, line, inc)
                if "/" not in inc or not os.path.isfile(os.path.join(src, inc)):
                    bad.append("%s does not name a file from the project root" % where)
                    continue
                layer = inc.split("/", 1)[0]
                if top in below and layer not in below[top]:
                    bad.append("%s: %s/ includes %s/, which is not below it" % (where, top, layer))

if n == 0:
    sys.exit("layers-check: no includes found under %s" % src)
for b in bad:
    print(b)
print("layers-check: %d includes, %d violations" % (n, len(bad)))
sys.exit(1 if bad else 0)
