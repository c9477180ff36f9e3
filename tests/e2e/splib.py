"""splib.py - shared by the Python end-to-end tests (t004x), as lib.sh is by
the shell scripts. Known native work for each region of a test program, and
a probe of the sampler's range depth on the calling thread.

Each work_* function keeps the CPU busy in one C library, whose exported
function names the samples: zlib's `deflate`, libbz2's `BZ2_bzCompress`,
liblzma's `lzma_code`. They run for the calling thread's CPU time, not wall
time, so a loaded machine changes how long they take, never how many
samples they get.
"""
import bz2
import ctypes
import lzma
import random
import sys
import time
import zlib

# compressible, so that every compressor searches for matches
DATA = bytes(random.Random(1).choices(b"abcdefghij", k=1 << 16))


# The CPU each work_* function really took in this process (seconds), for
# tests that bound a profile by what the program got, not by what it asked
# for: print_burned() prints one "burned NAME SECONDS" line per function.
BURNED = {}


def _burn(name, fn, seconds):
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        fn()
    BURNED[name] = BURNED.get(name, 0.0) + time.thread_time() - t0


def print_burned():
    for name, cpu in sorted(BURNED.items()):
        print("burned %s %.6f" % (name, cpu))


def work_zlib(seconds):
    _burn("work_zlib", lambda: zlib.compress(DATA, 9), seconds)


def work_bz2(seconds):
    _burn("work_bz2", lambda: bz2.compress(DATA, 9), seconds)


def work_lzma(seconds):
    _burn("work_lzma", lambda: lzma.compress(DATA, preset=1), seconds)


_lib = ctypes.CDLL(None)
_push = getattr(_lib, "stackprof_range_push", None)
if _push is not None:
    _push.argtypes = [ctypes.c_char_p]
    _push.restype = ctypes.c_int


def depth():
    """How many ranges are open on this thread (None without the sampler)."""
    if _push is None:
        return None
    d = _push(b"probe")
    _lib.stackprof_range_pop()
    return d - 1


class FakeModule:
    """Calls hooks as torch.nn.Module.__call__ does, for interpreters
    without torch: pre-hooks, forward, then forward hooks, all from one
    frame; a forward that raises skips the forward hooks (torch 1.13). The
    forward hook takes no always_call, as in torch 1.13."""

    def __init__(self, forward=None, **children):
        self._fwd = forward
        self._children = children
        self._pre, self._post = {}, {}
        for name, child in children.items():
            setattr(self, name, child)

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self._children.items():
            yield from child.named_modules(prefix + "." + name if prefix else name)

    class _Handle:
        def __init__(self, table, key):
            self.table, self.key = table, key

        def remove(self):
            self.table.pop(self.key, None)

    def register_forward_pre_hook(self, hook):
        key = object()
        self._pre[key] = hook
        return self._Handle(self._pre, key)

    def register_forward_hook(self, hook):
        key = object()
        self._post[key] = hook
        return self._Handle(self._post, key)

    def hooks(self):
        """The hooks registered on this module and all below it."""
        return sum(len(m._pre) + len(m._post) for _, m in self.named_modules())

    def __call__(self, *args):
        for hook in list(self._pre.values()):
            hook(self, args)
        out = self._fwd(self, *args)
        for hook in list(self._post.values()):
            hook(self, args, out)
        return out


# Checks of a test script: each failed one is printed at once; finish() ends
# the script with "NAME ok" or "NAME FAILED" (what the shell greps) and
# its exit status.
_fails = []


def expect(cond, what):
    if not cond:
        print("FAILED:", what)
        _fails.append(what)


def finish(name):
    print(f"{name} FAILED" if _fails else f"{name} ok")
    sys.exit(1 if _fails else 0)
