#!/usr/bin/env python3
"""sigsafe-check.py SRC_DIR CI_DIR...: holds the sampler to sampler/base/sigsafe.h,
and the handler's own code to a bounded stack.

The CI_DIRs hold the .ci call graphs that gcc -fcallgraph-info wrote for every
sampler source. From the handler's entry points (and each target of a call
through a pointer), every function reachable by a call edge must be listed
in SP_SIGSAFE_FUNCTIONS or SP_SIGSAFE_LIBC; every listed function of the
sampler's must carry SP_SIGSAFE where it is declared; and every reachable
function that calls through a pointer must be listed in
SP_SIGSAFE_CALLS_THROUGH; and every reachable function of stackprof's is
defined in sampler/capture/ or listed in SP_SIGSAFE_OUTSIDE_CAPTURE (the
leaves of base/ and core/, the sources' ops reached through pointers, the
format's decoders): the signal boundary is a folder (docs/ARCHITECTURE.md).
Where a function is defined comes from its node in the .ci files (the file
and line of its definition), else from the folder of the object that holds
it (an interposed libc function, whose first declaration is libc's header).
Prints each violation; exit 1 if any.
"""
import glob
import os
import re
import subprocess
import sys

src, ci_dirs = sys.argv[1], sys.argv[2:]
hdr = os.path.join(src, "sampler", "base", "sigsafe.h")


def expand(macro):
    """The names in an X-macro list of sigsafe.h, through the preprocessor."""
    code = '#include "%s"\n#define X(n) @n@\n%s(X)\n' % (hdr, macro)
    out = subprocess.run(["cpp", "-P"], input=code, capture_output=True, text=True, check=True)
    return set(re.findall(r"@(\w+)@", out.stdout))


entries = expand("SP_SIGSAFE_ENTRY") | expand("SP_SIGSAFE_INDIRECT")
funcs = expand("SP_SIGSAFE_FUNCTIONS")
libc = expand("SP_SIGSAFE_LIBC")
through = expand("SP_SIGSAFE_CALLS_THROUGH")
outside = expand("SP_SIGSAFE_OUTSIDE_CAPTURE")

edges = {}
frame = {}  # function -> (bytes, qualifier) from -fcallgraph-info=su
defined = {}  # function -> the files under src that define it ("sampler/capture/unwind.c")
root = os.path.realpath(src) + os.sep
stale = 0


def is_stale(ci):
    """A call graph left by an older layout of the tree (a build directory
    that outlived a move): the source it names is gone."""
    for line in open(ci):
        at = re.match(r'node: \{ title: "[^"]+" label: "[^"\\]*\\n([^:"]+):\d+', line)
        if at:
            return os.path.isabs(at.group(1)) and not os.path.exists(at.group(1))
    return False


for ci in [c for d in ci_dirs for c in glob.glob(os.path.join(d, "**", "*.ci"), recursive=True)]:
    if is_stale(ci):
        stale += 1
        continue
    # the object's own path: <target>.dir/<folder>/<name>.c.ci mirrors the source's
    obj_src = os.path.join(os.path.basename(os.path.dirname(os.path.dirname(ci))).rsplit(".dir", 1)[0],
                           os.path.basename(os.path.dirname(ci)), os.path.basename(ci)[:-3])
    for line in open(ci):
        n = re.match(r'node: \{ title: "([^"]+)" label: "[^"]*\\n(\d+) bytes \(([^)]*)\)"', line)
        if n:
            name = n.group(1).rsplit(":", 1)[-1]
            frame[name] = (int(n.group(2)), n.group(3))
            at = re.match(r'node: \{ title: "[^"]+" label: "[^"\\]*\\n([^:"]+):\d+', line)
            path = os.path.realpath(at.group(1)) if at else ""
            if path.startswith(root):
                rel = path[len(root):]
            elif os.path.basename(os.path.dirname(os.path.dirname(ci))) == "stackprof_preload.dir":
                rel = os.path.join("sampler", obj_src.split(os.sep, 1)[1])
            else:
                rel = obj_src
            defined.setdefault(name, set()).add(rel)
        m = re.match(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', line)
        if m:
            # a static function's title is "file:name"
            a, b = (n.rsplit(":", 1)[-1] for n in m.groups())
            edges.setdefault(a, set()).add(b)
if not edges:
    sys.exit("sigsafe-check: no call edges in %s" % " ".join(ci_dirs))

bad = []
seen, todo = set(), list(entries)
while todo:
    f = todo.pop()
    if f in seen:
        continue
    seen.add(f)
    for g in edges.get(f, ()):
        if g == "__indirect_call":
            if f not in through:
                bad.append("%s calls through a pointer but is not in SP_SIGSAFE_CALLS_THROUGH" % f)
            continue
        if g not in funcs and g not in libc:
            bad.append("the handler reaches %s (called by %s), which sigsafe.h does not list" % (g, f))
        todo.append(g)

# the boundary is a folder: what the handler reaches of ours is in
# sampler/capture/, or is a listed leaf below it (sigsafe.h says why)
for f in sorted(seen):
    for rel in sorted(defined.get(f, ())):
        if rel.startswith("sampler/capture/") or f in outside:
            continue
        bad.append("the handler reaches %s, defined in %s: outside sampler/capture/ and not in "
                   "SP_SIGSAFE_OUTSIDE_CAPTURE" % (f, rel))
for f in sorted(outside):
    if any(rel.startswith("sampler/capture/") for rel in defined.get(f, ())):
        bad.append("%s is in SP_SIGSAFE_OUTSIDE_CAPTURE but defined in sampler/capture/" % f)

# every listed function of ours is marked where it is declared or defined:
# SP_SIGSAFE, then the rest of the declaration up to the name and "("
text = ""
for p in glob.glob(os.path.join(src, "sampler", "*", "*.[ch]")) + glob.glob(os.path.join(src, "format", "*.h")):
    if not p.endswith("sigsafe.h"):
        text += open(p).read()
marked = set()
for m in re.finditer(r"\bSP_SIGSAFE\b", text):
    decl = re.split(r"[;{]", text[m.end():m.end() + 300], maxsplit=1)[0]
    marked.update(re.findall(r"\b(\w+)\s*\(", decl))
for f in sorted(funcs):
    if f not in marked:
        bad.append("%s is listed in sigsafe.h but no declaration marks it SP_SIGSAFE" % f)

# the stack the handler's own code needs: its deepest call path, frame by
# frame (libc and libunwind come on top; docs/SAMPLER.md measures them too)
def depth(f, path):
    if f in path:
        bad.append("recursion in the handler: %s" % " -> ".join(path + [f]))
        return 0
    size, kind = frame.get(f, (0, "static"))
    if kind.startswith("dynamic") and "bounded" not in kind:
        bad.append("%s grows its stack by a size it did not plan (%s)" % (f, kind))
    callees = [g for g in edges.get(f, ()) if g in funcs]
    return size + max((depth(g, path + [f]) for g in callees), default=0)

# a quarter of the handler's own 64 KiB stack (sigstack.h): the rest is
# for libunwind and the kernel's signal frame
BUDGET = 16384
need = max(depth(e, []) for e in expand("SP_SIGSAFE_ENTRY"))
budget = BUDGET
print("sigsafe-check: the handler's own code needs at most %d bytes of stack" % need)
if need > budget:
    bad.append("the handler's own code needs %d bytes of stack, over its %d budget" % (need, budget))

for b in bad:
    print("FAIL:", b)
if stale:
    print("sigsafe-check: %d call graphs left by an older layout of the tree, skipped" % stale)
print("sigsafe-check: %d functions reachable from the handler, %d problems" % (len(seen), len(bad)))
sys.exit(1 if bad else 0)
