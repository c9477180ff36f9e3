#!/usr/bin/env python3
"""layers-check.py SRC_DIR: every #include "..." in the project's own C names
its layer, and no layer includes one above it.

The project root is the only include path (CMakeLists.txt), so a quoted
include is a path from the root: "format/profile.h", never "profile.h"
(which would still compile from its own folder, through the compiler's
same-directory lookup). The layers point downward only:

    tools -> export -> symbolize -> format        sampler -> format

Inside sampler/, the same rule between its folders, low to high
(docs/ARCHITECTURE.md):

    base < core < capture < writer < sources < life

A sampler file includes headers of its own folder or a lower one only, and
every sampler file is in one of these folders.

tests/, workloads/ and bench/ sit outside the layers and may include any of
them. Prints each violation; exit 1 if any.
"""
import os
import re
import sys

src = sys.argv[1]
quiet = "--quiet" in sys.argv[2:]  # the build's own run: violations only
below = {
    "format": {"format"},
    "sampler": {"sampler", "format"},
    "symbolize": {"symbolize", "format"},
    "export": {"export", "symbolize", "format"},
    "tools": {"tools", "export", "symbolize", "format"},
}
outside = ["tests", "workloads", "bench"]
# sampler/'s folders, low to high: each may include its own and lower ones
sampler_order = ["base", "core", "capture", "writer", "sources", "life"]
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
            folder = None
            if top == "sampler":
                parts = rel.split(os.sep)
                folder = parts[1] if len(parts) > 2 else None
                if folder not in sampler_order:
                    bad.append("%s: not in one of sampler/'s folders (%s)" %
                               (rel, ", ".join(sampler_order)))
                    folder = None
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
                    continue
                if folder and layer == "sampler":
                    to = inc.split("/")[1] if inc.count("/") >= 2 else None
                    if to not in sampler_order:
                        bad.append("%s: not in one of sampler/'s folders" % where)
                    elif sampler_order.index(to) > sampler_order.index(folder):
                        bad.append("%s: sampler/%s/ includes sampler/%s/, which is above it "
                                   "(%s)" % (where, folder, to, " < ".join(sampler_order)))

if n == 0:
    sys.exit("layers-check: no includes found under %s" % src)
for b in bad:
    print(b)
if bad or not quiet:
    print("layers-check: %d includes, %d violations" % (n, len(bad)))
sys.exit(1 if bad else 0)
