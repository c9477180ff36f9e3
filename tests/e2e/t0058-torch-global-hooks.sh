#!/bin/bash
# stackprof.torch.label_modules stores nothing on the model (issue: under
# stackprof a labelled model failed to script, save and pickle, and its
# copies carried the hooks). torchvision ResNet18 under Debian's torch:
# - while labelled, no module holds a hook; torch.jit.script(model) compiles
#   and runs, torch.save + torch.load and pickle work, the loaded model and
#   a deepcopy give the same output and are not labelled (their samples
#   carry no module path);
# - the module paths are in the profile: ResNet/layer1/0/conv1 and the like,
#   for two models labelled at once (ResNet/..., Other/...);
# - labelling a labelled module again (layer1 as "L1") renames it without a
#   second range per call, and removing that label brings "layer1" back;
# - a labelled model that is dropped without remove() is collected (the
#   registry keeps none alive) and leaves the registry;
# - after remove(), no global hook of stackprof's is left in torch.
# The same script runs without stackprof, where nothing is registered.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"

cat >globalhooks.py <<'PYEOF'
import copy
import gc
import io
import pickle
import sys
import weakref

import torch
import torchvision
from torch.nn.modules import module as torch_module

import splib
import stackprof
import stackprof.torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(2, 3, 224, 224)
present = stackprof.active()


expect = splib.expect


def attempt(what, fn):
    try:
        return fn()
    except Exception as e:
        expect(False, "%s: %s: %s" % (what, type(e).__name__, str(e).splitlines()[0][:200]))


def own_hooks(m):
    """Hooks stored on m and its submodules: the state pickle and TorchScript see."""
    return sum(len(s._forward_pre_hooks) + len(s._forward_hooks) for s in m.modules())


def ours():
    """stackprof's process-wide hooks registered in torch."""
    hooks = (*torch_module._global_forward_pre_hooks.values(), *torch_module._global_forward_hooks.values())
    return sum(1 for h in hooks if getattr(h, "__module__", "") == "stackprof.torch")


def depth_in(m, run):
    """The range depth inside m.layer1[0].conv1 while run() calls it."""
    got = []
    probe = m.layer1[0].conv1.register_forward_pre_hook(lambda mod, a: got.append(splib.depth()))
    run()
    probe.remove()
    return got[0] if got else "not called"


def want(d):
    return d if present else None


with torch.no_grad():
    ref = model(x)
    h = stackprof.torch.label_modules(model)
    n = len(list(model.named_modules()))
    expect(len(h) == (n if present else 0), "labelled %d of %d modules" % (len(h), n))
    expect(own_hooks(model) == 0, "no hook stored on the labelled model (%d)" % own_hooks(model))
    expect(ours() == (2 if present else 0), "stackprof's global hooks: %d" % ours())
    expect(depth_in(model, lambda: model(x)) == want(4), "depth inside ResNet/layer1/0/conv1")

    s = attempt("torch.jit.script", lambda: torch.jit.script(model))
    if s is not None:
        ys = attempt("the scripted model runs", lambda: s(x))
        expect(ys is not None and torch.allclose(ys, ref, atol=1e-4), "the scripted model's output")

    buf = io.BytesIO()
    attempt("torch.save", lambda: torch.save(model, buf))
    buf.seek(0)
    loaded = attempt("torch.load", lambda: torch.load(buf))
    if loaded is not None:
        expect(own_hooks(loaded) == 0, "the loaded model carries no hook (%d)" % own_hooks(loaded))
        expect(torch.equal(loaded(x), ref), "the loaded model's output")
        expect(depth_in(loaded, lambda: loaded(x)) == want(0), "the loaded model is not labelled")
    p = attempt("pickle", lambda: pickle.loads(pickle.dumps(model)))
    expect(p is not None and own_hooks(p) == 0, "a pickled copy carries no hook")

    c = attempt("copy.deepcopy", lambda: copy.deepcopy(model))
    if c is not None:
        expect(own_hooks(c) == 0, "the deep copy carries no hook (%d)" % own_hooks(c))
        expect(depth_in(c, lambda: c(x)) == want(0), "the deep copy is not labelled")
    expect(depth_in(model, lambda: model(x)) == want(4), "the original is still labelled")

    other = torchvision.models.resnet18(weights=None).eval()
    h2 = stackprof.torch.label_modules(other, name="Other")
    expect(ours() == (2 if present else 0), "two labelled models share the global hooks")
    expect(depth_in(other, lambda: other(x)) == want(4), "depth inside Other/layer1/0/conv1")

    with stackprof.profile():
        for _ in range(6):
            model(x)
            other(x)
        with stackprof.record_function("copies"):
            for _ in range(3):
                loaded(x)
                c(x)
        h3 = stackprof.torch.label_modules(model.layer1, name="L1")
        expect(depth_in(model, lambda: model(x)) == want(4), "layer1 labelled twice: still one range")
        for _ in range(6):
            model(x)
        h3.remove()
        expect(depth_in(model, lambda: model(x)) == want(4), "after the second label's remove()")
        if present:
            name = stackprof.torch._names.get(id(model.layer1))
            expect(name == b"layer1\x1fSequential", "after the second label's remove(), layer1 is layer1 again (%r)" % name)
        for _ in range(2):
            model(x)

    # dropped without remove(): collected, and out of the registry
    third = torchvision.models.resnet18(weights=None)
    stackprof.torch.label_modules(third)
    gone = weakref.ref(third)
    labelled = len(stackprof.torch._names)
    del third
    gc.collect()
    expect(gone() is None, "a labelled model dropped without remove() is collected")
    expect(len(stackprof.torch._names) == labelled - (n if present else 0), "and leaves the registry")

    h.remove()
    expect(ours() == (2 if present else 0), "one labelled model left: the global hooks stay")
    expect(depth_in(model, lambda: model(x)) == want(0), "removed: ResNet is not labelled")
    h2.remove()
    expect(ours() == 0, "after every remove(), no global hook of stackprof's is left (%d)" % ours())
    expect(not stackprof.torch._names, "the registry is empty")
    expect(torch.equal(model(x), ref), "the same output once the labels are gone")
splib.finish("globalhooks")
PYEOF

"$TORCH_PY" globalhooks.py >plain.txt 2>&1
cat plain.txt
check "without stackprof: runs, labels nothing" grep -q '^globalhooks ok$' plain.txt

"$SP" run --no-summary -F 1000 -o g.prof -- "$TORCH_PY" globalhooks.py >g.txt 2>&1
rc=$?
cat g.txt
check "under stackprof: script, save/load, pickle, deepcopy, two models, remove() (the script's checks)" \
	[ $rc -eq 0 ] && grep -q '^globalhooks ok$' g.txt

"$SP" table g.prof --aggregate-by module-path --no-module-class --sort-by cpu_time_total --row-limit 0 >paths.txt
head -8 paths.txt
# samples of row NAME, 0 when there is none
f() { awk -v n="$1" '$1 == n { print $NF; found = 1; exit } END { if (!found) print 0 }' paths.txt; }
for p in ResNet/layer1/0/conv1 ResNet/layer2/0/conv2 ResNet/layer4/1/conv1 Other/layer1/0/conv1 Other/layer3/0/conv1 \
	ResNet/L1/0/conv1 ResNet/L1/1/conv2; do
	check "$p has samples ($(f $p))" [ "$(f $p)" -ge 3 ]
done
check "every conv sits in its block (layer1 or L1)" \
	awk '$1 ~ /conv|downsample/ && $1 !~ /^(ResNet|Other)\/(conv1|(layer[1-4]|L1)\/[01]\/conv[12]|layer[2-4]\/0\/downsample(\/[01])?)$/ { print "misplaced:", $1; bad = 1 } END { exit bad }' paths.txt
check "no path has layer1 and L1 both (one range per call)" \
	awk '$1 ~ /layer1\/L1|L1\/layer1/ { print "twice:", $1; bad = 1 } END { exit bad }' paths.txt

# the loaded model and the deep copy ran inside "copies": no module there
"$SP" collapse --frame func --metric samples g.prof >g.folded
incopies=$(awk '/;copies;/ { n += $NF } END { print n + 0 }' g.folded)
labelled=$(awk '/;copies;/ && /;(ResNet|Other|L1|layer[1-4]|conv[12]);/ { n += $NF } END { print n + 0 }' g.folded)
say "samples in the copies' range: $incopies, with a module range: $labelled"
check "the loaded model and the deep copy are not labelled (>= 50 samples, none in a module)" \
	[ "$incopies" -ge 50 -a "$labelled" -eq 0 ]
finish
