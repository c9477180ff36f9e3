#!/bin/bash
# label_modules on a stand-in shaped like torch 2.1+'s Module._call_impl (as
# read in torch's source; Debian's torch is 1.13): the pre-hooks and forward
# hooks run inside a closure, inner(), and when forward raises, _call_impl
# itself runs the forward hooks registered with always_call. The range of a
# forward that raised is then closed at once, by that hook, in the frame
# that called the one that opened it: right after the parent catches its
# child's exception, only the parent's range is open, before any other
# module call. Checked on every interpreter here (frames that finished keep
# their caller differently before and after 3.11).
. "$(dirname "$0")/lib.sh"
need_pythons
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"

cat >always.py <<'PYEOF'
import sys

import splib
import stackprof
import stackprof.torch

present = stackprof.active()


expect = splib.expect


class Torch2Module(splib.FakeModule):
    """Calls its hooks the way torch 2.1+'s Module._call_impl does."""

    def __init__(self, forward, **children):
        super().__init__(forward, **children)
        self._always = set()

    def register_forward_hook(self, hook, *, always_call=False):
        key = object()
        self._post[key] = hook
        if always_call:
            self._always.add(key)
        return self._Handle(self._post, key)

    def __call__(self, *args):
        return self._call_impl(*args)

    def _call_impl(self, *args):
        result = None
        called = set()

        def inner():
            nonlocal result
            for hook in list(self._pre.values()):
                hook(self, args)
            result = self._fwd(self, *args)
            for key, hook in list(self._post.items()):
                if key in self._always:
                    called.add(key)
                hook(self, args, result)
            return result

        try:
            return inner()
        except Exception:
            for key, hook in list(self._post.items()):
                if key in self._always and key not in called:
                    hook(self, args, result)
            raise


def boom(m, x):
    raise ValueError("forward failed")


seen = []


def parent_forward(m, x):
    seen.append(("in parent", splib.depth()))
    try:
        m.bad(x)
    except ValueError:
        seen.append(("after the child raised", splib.depth()))
    m.good(x)
    seen.append(("after good", splib.depth()))
    return x


net = Torch2Module(
    parent_forward, bad=Torch2Module(boom), good=Torch2Module(lambda m, x: seen.append(("in good", splib.depth())))
)
h = stackprof.torch.label_modules(net)
for _ in range(3):
    net(1)
    seen.append(("after the call", splib.depth()))
want = [("in parent", 1), ("after the child raised", 1), ("in good", 2), ("after good", 1), ("after the call", 0)] * 3
if not present:
    want = [(w, None) for w, _ in want]
expect(seen == want, "range depths: %r" % seen)
h.remove()
expect(sum(len(m._pre) + len(m._post) for _, m in net.named_modules()) == 0, "remove() takes every hook off")
splib.finish("always")
PYEOF

for py in "${PYTHONS[@]}"; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	"$py" always.py >plain.txt 2>&1
	grep -q '^always ok$' plain.txt || cat plain.txt
	check "$py ($v) without stackprof: runs, labels nothing" grep -q '^always ok$' plain.txt
	"$SP" run --no-summary -o a.prof -- "$py" always.py >a.txt 2>&1
	rc=$?
	grep -q '^always ok$' a.txt || cat a.txt
	check "$py ($v): a forward that raised has its range closed by the always_call hook, at once" \
		[ $rc -eq 0 ] && grep -q '^always ok$' a.txt
done
finish
