#!/bin/bash
# The Python package (python/stackprof) on every interpreter here: Debian's
# python3 and pyenv's 3.10-3.13.
# - without the preload: every call works and does nothing (no hooks, the
#   decorator returns the function itself);
# - under `stackprof run`: record_function ranges nest and close on
#   exceptions, label_modules' module ranges nest and survive a forward
#   that raised (checked on hook-calling stand-ins for nn.Module, so that no
#   torch is needed), and in the profile the ranges are frames where they
#   were opened (inside the with statement's frame, inside the __call__
#   that ran the hooks), and the profile() block is a window;
# - every call but flush keeps the GIL: ctypes' CDLL would hand it to any
#   busy thread on each range push and pop;
# - `pip install ./python` works offline.
. "$(dirname "$0")/lib.sh"
need_pythons
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"

cat >api.py <<'EOF'
import sys

import splib
import stackprof
import stackprof.torch

present = sys.argv[1] == "present"


expect = splib.expect


def depth_is(n, what):
    d = splib.depth()
    expect(d == (n if present else None), "%s: range depth %s, not %s" % (what, d, n))


expect(stackprof.active() is present, "active() is %s" % present)
for fn in (stackprof.start, stackprof.stop, stackprof.flush, stackprof.step):
    expect(fn() is None, fn.__name__ + "() returns None")
stackprof.start()

for bad in ({"active": 0}, {"active": 1, "wait": -1}, {"active": 1.5}, {"active": True}):
    kw = dict({"wait": 0, "warmup": 0}, **bad)
    try:
        stackprof.schedule(**kw)
        expect(False, "schedule(%s) is refused" % kw)
    except ValueError:
        pass
s = stackprof.schedule(wait=1, warmup=1, active=2, repeat=2)
expect([s(i) for i in range(10)] == [0, 0, 1, 1, 0, 0, 1, 1, 0, 0], "schedule steps: %r" % s)
stackprof.schedule(wait=0, warmup=0, active=1)  # every step sampled again


def f(x):
    return x + 1


g = stackprof.record_function("DECO")(f)
expect(g(1) == 2 and g.__name__ == "f", "the decorated function")
expect((g is f) is not present, "without the profiler the decorator returns the function itself")

# record_function: nesting, and closing on exceptions
with stackprof.record_function("A"):
    depth_is(1, "inside A")
    try:
        with stackprof.record_function("B"):
            depth_is(2, "inside A, B")
            raise KeyError("x")
    except KeyError:
        pass
    depth_is(1, "after B raised")


@stackprof.record_function("RAISES")
def raises():
    depth_is(1, "inside the decorated function")
    raise KeyError("y")


try:
    raises()
except KeyError:
    pass
depth_is(0, "after the decorated function raised")

# label_modules: a module's range per call, nested as the calls nest
seen = []
net = splib.FakeModule(
    lambda m, x: m.block(x),
    block=splib.FakeModule(
        lambda m, x: m.leaf(x), leaf=splib.FakeModule(lambda m, x: seen.append(splib.depth()) or x)
    ),
)
h = stackprof.torch.label_modules(net)
expect(len(h) == (3 if present else 0), "modules labelled: %d" % len(h))
expect(net.hooks() == (6 if present else 0), "hooks registered: %d" % net.hooks())
net(1)
net(2)
expect(seen == ([3, 3] if present else [None, None]), "depth in the leaf: %r" % seen)
depth_is(0, "after the model")
h.remove()
expect(net.hooks() == 0, "remove() takes every hook off")


def boom(m, x):
    raise ValueError("boom")


# a child raises, its parent catches it and calls another child
def catcher(m, x):
    try:
        m.bad(x)
    except ValueError:
        pass
    return m.good(x)


seen = []
c = splib.FakeModule(
    catcher,
    bad=splib.FakeModule(boom),
    good=splib.FakeModule(lambda m, x: seen.append(splib.depth()) or x),
)
stackprof.torch.label_modules(c)
c(1)
expect(seen == ([2] if present else [None]), "good runs under its parent only: %r" % seen)
depth_is(0, "after the parent caught its child's exception")

# the whole model raises to the caller; the next call starts from scratch
seen = []
flaky = splib.FakeModule(
    lambda m, x: m.inner(x),
    inner=splib.FakeModule(lambda m, x: boom(m, x) if x < 0 else seen.append(splib.depth())),
)
stackprof.torch.label_modules(flaky)
try:
    flaky(-1)
except ValueError:
    pass
flaky(1)
expect(seen == ([2] if present else [None]), "after a failed call, the next nests from 0: %r" % seen)

# Every call but flush keeps the GIL. A call that lets it go hands it to a
# thread that wants it, and getting it back waits out a switch interval:
# two waits per module call under label_modules. With a long interval and
# the GIL just taken back (after the sleep), a busy thread runs in the
# block below only if a call lets the GIL go.
import threading

spins, going = [0], [True]


def spin():
    while going[0]:
        spins[0] += 1


lab = splib.FakeModule(lambda m: m.leaf(), leaf=splib.FakeModule(lambda m: None))
h = stackprof.torch.label_modules(lab)
sys.setswitchinterval(0.2)
spinner = threading.Thread(target=spin)
spinner.start()
import time

time.sleep(0.01)
before = spins[0]
for _ in range(3):
    with stackprof.record_function("GIL"):
        lab()
    stackprof.step()
    stackprof.stop()
    stackprof.start()
during = spins[0] - before
going[0] = False
spinner.join()
h.remove()
sys.setswitchinterval(0.005)
expect(during == 0, "a busy thread ran %d times between calls that keep the GIL" % during)

# sampled: the ranges become frames where they were opened, in the window
with stackprof.profile():
    with stackprof.record_function("OUTER"):
        with stackprof.record_function("INNER"):
            splib.work_zlib(0.4)
    work = splib.FakeModule(lambda m: m.body(), body=splib.FakeModule(lambda m: splib.work_bz2(0.4)))
    stackprof.torch.label_modules(work)
    work()
splib.finish("api")
EOF

# the module ranges, each just inside the __call__ that ran its hooks (3.10 names it without its class)
FAKE_BODY=';<module>;(FakeModule\.)?__call__;FakeModule;<lambda>;(FakeModule\.)?__call__;body;<lambda>;work_bz2;.*;BZ2_bzCompress;'
for py in "${PYTHONS[@]}"; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	t=py$v-$(echo "$py" | cksum | cut -c1-4)
	"$py" api.py absent >$t-absent.txt 2>&1
	rc=$?
	cat $t-absent.txt
	check "$py ($v) without the preload: every call works and does nothing" \
		[ $rc -eq 0 -a "$(tail -1 $t-absent.txt)" = "api ok" ]

	"$SP" run --no-summary -F 1000 -o $t.prof -- "$py" api.py present >$t.txt 2>&1
	rc=$?
	cat $t.txt
	check "$py ($v) under stackprof run: ranges nest and survive exceptions" \
		[ $rc -eq 0 -a "$(tail -1 $t.txt)" = "api ok" ]
	"$SP" collapse --frame func --metric samples $t.prof >$t.folded
	"$SP" info $t.prof >$t.info
	deflate=$(awk '/;deflate;/ { n += $NF } END { print n + 0 }' $t.folded)
	bz=$(awk '/;BZ2_bzCompress;/ { n += $NF } END { print n + 0 }' $t.folded)
	say "$v: deflate $deflate samples, $(share $t.folded ';<module>;OUTER;INNER;work_zlib;.*;deflate;')% of all under <module>;OUTER;INNER;work_zlib;" \
		"BZ2_bzCompress $bz samples, $(share $t.folded "$FAKE_BODY")% of all under FakeModule;body"
	check "$v: the zlib work was sampled (>= 100 samples)" [ "$deflate" -ge 100 ]
	check "$v: >= 95% of it under the ranges OUTER;INNER, inside <module>, around work_zlib" \
		awk -v a="$(awk '/;<module>;OUTER;INNER;work_zlib;.*;deflate;/ { n += $NF } END { print n + 0 }' $t.folded)" \
		-v b="$deflate" 'BEGIN { exit !(b > 0 && a >= 0.95 * b) }'
	check "$v: the bz2 work was sampled (>= 100 samples)" [ "$bz" -ge 100 ]
	check "$v: >= 95% of it under the module ranges, each inside the call that ran its hooks" \
		awk -v a="$(awk -v re="$FAKE_BODY" '$0 ~ re { n += $NF } END { print n + 0 }' $t.folded)" \
		-v b="$bz" 'BEGIN { exit !(b > 0 && a >= 0.95 * b) }'
	check "$v: the profile() block is a window" grep -q '^windows: *1 ' $t.info
done

# pip install ./python, offline, into a fresh venv of the newest interpreter
newest=${PYTHONS[${#PYTHONS[@]} - 1]}
if "$newest" -m venv venv >venv.txt 2>&1; then
	PYTHONPATH= venv/bin/python -m pip install --no-index --no-cache-dir -q "$SP_SOURCE_DIR/python" >pip.txt 2>&1
	rc=$?
	cat pip.txt
	check "pip install ./python works offline" [ $rc -eq 0 ]
	PYTHONPATH= venv/bin/python -c 'import stackprof, stackprof.torch; print(stackprof.__file__)' >where.txt 2>&1
	cat where.txt
	check "and installs the package into the venv" grep -q "^$TMP/venv/.*/site-packages/stackprof/__init__.py$" where.txt
else
	cat venv.txt
	say "no venv module in $newest: pip install not tested"
fi
finish
