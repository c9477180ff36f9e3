"""layout-runtime.py PROBE_SO LAYOUT_DUMP - run by layout-check.sh with each
interpreter. Checks, inside this running CPython, that:
  - 3.13's _Py_DebugOffsets, parsed by sp_pylayout_from_debug_offsets(),
    equal the compiled table; older versions have no cookie (-ENOENT);
  - autoTSSkey leads, through glibc's struct pthread, to the thread state
    PyGILState_GetThisThreadState() returns, on the main thread and in a
    threading.Thread, with the GIL held and released;
  - the table walks this thread's frames to the names, files, first lines,
    instruction offsets and current lines Python reports for them, with
    the eval-call boundaries (3.11 is_entry, 3.12+ shim frames) where C
    called into Python.
Prints what it saw; exits 1 naming the first thing that differs.
"""
import ctypes
import errno
import subprocess
import sys
import threading

PROBE_SO, DUMP = sys.argv[1], sys.argv[2]
MINOR = sys.version_info.minor
# CDLL drops the GIL around each call, PyDLL keeps it
NOGIL = ctypes.CDLL(PROBE_SO)
GIL = ctypes.PyDLL(PROBE_SO)
for lib in (NOGIL, GIL):
    lib.sp_probe_debug_offsets.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
    lib.sp_probe_tss.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint64)]
    lib.sp_probe_walk.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
api = ctypes.pythonapi
api.PyGILState_GetThisThreadState.restype = ctypes.c_void_p
RT = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))

failed = []


def fail(msg):
    print("FAIL:", msg)
    failed.append(msg)


def check_debug_offsets():
    buf = ctypes.create_string_buffer(8192)
    rc = GIL.sp_probe_debug_offsets(RT, MINOR, buf, len(buf))
    if MINOR < 13:
        if rc != -errno.ENOENT:
            fail(f"3.{MINOR} has no _Py_DebugOffsets, yet the parser returned {rc}")
        else:
            print(f"_Py_DebugOffsets: none on 3.{MINOR} (-ENOENT), as expected")
        return
    if rc != 0:
        fail(f"sp_pylayout_from_debug_offsets() returned {rc}")
        return
    got = buf.value.decode().splitlines()
    want = [ln for ln in subprocess.run([DUMP, str(MINOR)], capture_output=True, text=True,
                                        check=True).stdout.splitlines()
            if ln.startswith(f"3.{MINOR} ")]
    if got == want:
        print(f"_Py_DebugOffsets parsed at run time: all {len(want)} fields equal the 3.{MINOR} table")
    for g, w in zip(got, want):
        if g != w:
            fail(f"_Py_DebugOffsets give '{g}', the table '{w}'")
    if len(got) != len(want):
        fail(f"_Py_DebugOffsets gave {len(got)} fields, the table has {len(want)}")


def check_tss(where):
    ts = api.PyGILState_GetThisThreadState()
    for name, lib in (("GIL held", GIL), ("GIL released", NOGIL)):
        out = (ctypes.c_uint64 * 4)()
        rc = lib.sp_probe_tss(RT, MINOR, out)
        if rc != 0:
            fail(f"{where}, {name}: autoTSSkey {out[1]} (initialized {out[0]}): rc {rc}")
            continue
        ok = out[0] == 1 and out[2] == ts and out[3] == ts
        print(f"autoTSSkey {out[1]}: {where}, {name}: specific_1stblock holds {out[2]:#x}, "
              f"PyGILState_GetThisThreadState() {ts:#x}: {'same' if ok else 'DIFFERENT'}")
        if not ok:
            fail(f"{where}, {name}: the TSS path gives {out[2]:#x} "
                 f"(pthread_getspecific {out[3]:#x}), PyGILState {ts:#x}")


def name_of(code):
    s = getattr(code, "co_qualname", code.co_name)
    return s.encode("ascii", "backslashreplace").decode()


def walk_here(lib, label, expect_boundary_at=None):
    """Walks this thread and compares with the frames Python reports.
    expect_boundary_at: the name of a frame that C called (its caller
    is native code), so that its eval call must start there."""
    buf = ctypes.create_string_buffer(1 << 20)
    rc = lib.sp_probe_walk(MINOR, api.PyGILState_GetThisThreadState(), buf, len(buf))
    if rc:
        fail(f"{label}: sp_probe_walk returned {rc}")
    recs = [ln.split("\t") for ln in buf.value.decode().splitlines()]
    me = sys._getframe()
    py = [r for r in recs if r[0] == "py"]
    bad = [r for r in recs if r[0] not in ("py", "shim", "incomplete", "cframe")]
    if bad:
        fail(f"{label}: frames that are not code objects: {bad[:3]}")
    frames = []
    f = me
    while f is not None:
        frames.append(f)
        f = f.f_back
    if len(py) != len(frames):
        fail(f"{label}: the table found {len(py)} frames, Python has {len(frames)}: "
             f"{[r[1] for r in py]} vs {[name_of(x.f_code) for x in frames]}")
        return recs
    for i, (r, fr) in enumerate(zip(py, frames)):
        co = fr.f_code
        want = [name_of(co), co.co_filename.encode("ascii", "backslashreplace").decode(),
                str(co.co_firstlineno)]
        if r[1:4] != want:
            fail(f"{label}: frame {i}: the table reads {r[1:4]}, Python {want}")
        # the innermost frame has moved on since the walk; its callers have not
        if i > 0:
            if r[4] != str(fr.f_lasti // 2):
                fail(f"{label}: frame {i} ({r[1]}): instruction {r[4]}, Python's f_lasti/2 {fr.f_lasti // 2}")
            if r[5] != str(fr.f_lineno):
                fail(f"{label}: frame {i} ({r[1]}): line {r[5]}, Python's f_lineno {fr.f_lineno}")
    if MINOR >= 11:
        # where does each segment start? 3.11: is_entry; 3.12+: a shim outside it
        starts = set()
        for i, r in enumerate(recs):
            if r[0] != "py":
                continue
            nxt = next((x for x in recs[i + 1:] if x[0] in ("py", "shim")), None)
            if (MINOR == 11 and r[7] == "1") or (MINOR >= 12 and nxt is not None and nxt[0] == "shim"):
                starts.add(r[1])
        if "walk_here" in starts:
            fail(f"{label}: a Python-to-Python call started an eval call of its own")
        if expect_boundary_at and not any(s.endswith(expect_boundary_at) for s in starts):
            fail(f"{label}: {expect_boundary_at} was called from C, yet no eval call starts there")
        if MINOR >= 12 and recs and recs[-1][0] != "shim":
            fail(f"{label}: the bottom of the thread is not a shim frame: {recs[-1]}")
        if MINOR == 11 and not (recs and recs[-1][0] == "cframe" and recs[-1][2] == "root=1"):
            fail(f"{label}: the last cframe is not the thread state's root_cframe: {recs[-1:]}")
    return recs


def summary(label, recs):
    kinds = ["shim" if r[0] == "shim" else (r[1] + ("*" if r[0] == "py" and r[7] == "1" else ""))
             for r in recs if r[0] in ("py", "shim")]
    print(f"{label}: {len(kinds)} frames, innermost first: {' < '.join(kinds)}")


def scenarios(lib, tag):
    def c():
        return walk_here(lib, f"{tag}: plain calls")

    def b():
        return c()

    def a():
        return b()

    summary(f"{tag}: plain calls", a())

    def rec(n):
        return rec(n - 1) if n else walk_here(lib, f"{tag}: recursion")

    recs = rec(50)
    print(f"{tag}: recursion: {sum(r[0] == 'py' for r in recs)} frames read")

    def gen(expect):
        yield walk_here(lib, f"{tag}: generator", expect)

    summary(f"{tag}: generator via next()", next(gen("gen")))
    for _ in range(3):  # warm up, so 3.12+ may specialise FOR_ITER_GEN
        for recs in gen(None):
            pass
    summary(f"{tag}: generator via for", recs)
    got = []
    sorted([2, 1], key=lambda x: got.append(walk_here(lib, f"{tag}: sorted(key=)", "<lambda>")) or x)
    summary(f"{tag}: sorted(key=lambda)", got[0])
    recs = list(map(lambda x: walk_here(lib, f"{tag}: map", "<lambda>"), [1]))[0]
    summary(f"{tag}: map(lambda)", recs)

    class K:
        def method(self):
            return walk_here(lib, f"{tag}: method")

    summary(f"{tag}: method", K().method())
    # names and a file name beyond ASCII: 1-, 2- and 4-byte str kinds
    ns = {"walk_here": walk_here, "lib": lib, "tag": tag}
    src = ("def caf\u00e9():\n    return \u95a2\u6570()\n"
           "def \u95a2\u6570():\n    return \U00020000()\n"
           "def \U00020000():\n    return walk_here(lib, tag + ': non-ASCII')\n")
    exec(compile(src, "/tmp/\u30d5\u30a1\u30a4\u30eb.py", "exec"), ns)
    summary(f"{tag}: non-ASCII names", ns["caf\u00e9"]())


def main():
    print(f"CPython {sys.version.split()[0]} at {sys.executable}")
    check_debug_offsets()
    check_tss("main thread")
    scenarios(GIL, "main, GIL held")
    scenarios(NOGIL, "main, GIL released")

    def worker():
        check_tss("threading.Thread")
        scenarios(GIL, "thread, GIL held")
        scenarios(NOGIL, "thread, GIL released")

    t = threading.Thread(target=worker, name="py-worker")
    t.start()
    t.join()
    if failed:
        print(f"{len(failed)} check(s) failed")
        sys.exit(1)


main()
