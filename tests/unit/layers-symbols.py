#!/usr/bin/env python3
"""layers-symbols.py OBJ_DIR: the folder rule of sampler/ (layers-check.py)
for what includes can't show: no object of a folder uses a symbol that an
object of a higher folder defines (a function or variable reached through
an extern declaration, or one of the libc functions stackprof interposes,
called from below). OBJ_DIR is the preload library's object directory,
holding <folder>/<name>.c.o. Prints each such use; exit 1 if any.
"""
import collections
import glob
import os
import subprocess
import sys

order = ["base", "core", "capture", "writer", "sources", "life"]
objdir = sys.argv[1]
defs = {}
uses = collections.defaultdict(set)
objs = [o for o in glob.glob(os.path.join(objdir, "*", "*.o")) if os.path.basename(os.path.dirname(o)) in order]
if not objs:
    sys.exit("layers-symbols: no objects under %s/<folder>/: build first" % objdir)
for o in objs:
    name = "%s/%s" % (os.path.basename(os.path.dirname(o)), os.path.basename(o)[:-2])
    for line in subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRVWC":
            defs[p[2]] = name
        elif len(p) == 2 and p[0] == "U":
            uses[name].add(p[1])
bad = []
for user, syms in sorted(uses.items()):
    for s in sorted(syms):
        d = defs.get(s)
        if d and order.index(d.split("/")[0]) > order.index(user.split("/")[0]):
            bad.append("%s uses %s, defined in %s, which is above it (%s)" % (user, s, d, " < ".join(order)))
for b in bad:
    print(b)
print("layers-symbols: %d objects, %d upward uses" % (len(objs), len(bad)))
sys.exit(1 if bad else 0)
