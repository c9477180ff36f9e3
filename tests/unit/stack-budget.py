#!/usr/bin/env python3
"""stack-budget.py SRC SAMPLER_CI_DIR FORMAT_CI_DIR: stackprof's own stack
use on the program's threads stays within its stated budget (issue 30;
docs/RELIABILITY.md, "Budgets"; docs/SAMPLER.md, "Stacks").

gcc writes each object's call graph with frame sizes (-fcallgraph-info=su,
as for unit/sigsafe). From each entry point stackprof runs on a program's
thread, the deepest chain of stackprof's own frames (libc's and zlib's are
not counted: they are the same with or without stackprof) must fit the
entry's budget. The finish of a profile (sp_finish) runs on a thread of
stackprof's own (sp_finish_aside); its fallback on the caller's stack, when
no thread can be started, is not counted.
"""
import glob
import os
import re
import sys

KIB = 1024
# entry: budget. Every entry stackprof runs on a thread of the program's.
BUDGET = {
    "sp_init": 9 * KIB,  # the constructor
    "sp_thread_start": 9 * KIB,  # a new thread's set-up
    "sp_fork_child": 9 * KIB,
    "sp_fork_prepare": 9 * KIB,
    "sp_fork_parent": 9 * KIB,
    "pthread_create": 9 * KIB,
    "execve": 9 * KIB,
    "execv": 9 * KIB,
    "execvp": 9 * KIB,
    "fopen": 9 * KIB,  # of /proc/self/stat: an 8 KiB buffer
    "fopen64": 9 * KIB,
    "sigprocmask": 9 * KIB,
    "pthread_sigmask": 9 * KIB,
    "sigaction": 9 * KIB,
    "close": 9 * KIB,
    "dup2": 9 * KIB,
    "_exit": 9 * KIB,  # the finish itself runs aside
    "prctl": 9 * KIB,  # a seccomp filter: the same
    "syscall": 9 * KIB,
    "raise": 9 * KIB,
    "kill": 9 * KIB,
    # the one exception: a module's unload record is deflated on the spot
    "dlclose": 17 * KIB,
}
# calls that run the callee on a thread of stackprof's own
ASIDE = {("sp_finish_aside", "sp_finish")}


def main():
    src, dirs = sys.argv[1], sys.argv[2:]
    edges, frame = {}, {}
    cis = [c for d in dirs for c in glob.glob(os.path.join(d, "**", "*.ci"), recursive=True)]
    if not cis:
        print("no call graphs (*.ci) under %s: build first" % " ".join(dirs))
        return 1
    for ci in cis:
        for line in open(ci):
            n = re.match(r'node: \{ title: "([^"]+)" label: "[^"]*\\n(\d+) bytes', line)
            if n:
                frame[n.group(1).rsplit(":", 1)[-1]] = int(n.group(2))
            m = re.match(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', line)
            if m:
                a, b = (x.rsplit(":", 1)[-1] for x in m.groups())
                if (a, b) not in ASIDE:
                    edges.setdefault(a, set()).add(b)
    memo = {}

    def depth(f, stack=()):
        if f in memo:
            return memo[f]
        if f in stack:
            return (0, [f + "(recursion)"])
        best = (0, [])
        for g in edges.get(f, ()):
            if g in frame:
                d = depth(g, stack + (f,))
                if d[0] > best[0]:
                    best = d
        r = (frame.get(f, 0) + best[0], [f] + best[1])
        memo[f] = r
        return r

    bad = 0
    for entry, budget in BUDGET.items():
        if entry not in frame:
            print("FAIL: %s: no such function in the preload library's call graph" % entry)
            bad = 1
            continue
        d, path = depth(entry)
        chain = " > ".join("%s(%d)" % (p, frame.get(p, 0)) for p in path)
        if d > budget:
            print("FAIL: %s needs %d bytes of stackprof's frames, over its %d: %s" % (entry, d, budget, chain))
            bad = 1
        else:
            print("ok: %-16s %6d of %6d bytes  %s" % (entry, d, budget, chain))
    return bad


sys.exit(main())
