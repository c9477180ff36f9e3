#!/bin/bash
# stackprof.torch.label_modules on torchvision ResNet18 under Debian's torch:
# - samples carry module paths such as ResNet/layer1/0/conv1: every conv
#   under its block, the downsample convs under theirs;
# - the model's output is the same with and without the hooks (and without
#   stackprof), and remove() takes every hook off;
# - a forward that raises (torch 1.13 skips its forward hooks) leaves no
#   range behind: neither when the caller catches it, nor when the parent
#   module does and goes on with another child;
# - a module called twice counts twice;
# - each module's range sits where its hooks ran: just inside
#   Module._call_impl, just outside the module's forward.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"

cat >modules.py <<'EOF'
import sys

import torch
import torchvision
from torch import nn

import splib
import stackprof
import stackprof.torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(2, 3, 224, 224)


expect = splib.expect


def checksum(t):
    return "%.6f" % float(t.double().abs().sum())


with torch.no_grad():
    ref = model(x)
    print("checksum without hooks", checksum(ref))
    h = stackprof.torch.label_modules(model)
    n = len(list(model.named_modules()))
    expect(len(h) == (n if stackprof.active() else 0), "labelled %d of %d modules" % (len(h), n))

    # the range depth where layer1[0].conv1 runs: ResNet, layer1, 0, conv1
    depths = []
    probe = model.layer1[0].conv1.register_forward_pre_hook(lambda m, a: depths.append(splib.depth()))
    with stackprof.profile():
        for i in range(16):
            y = model(x)
            expect(torch.equal(y, ref), "iteration %d: the same output as without hooks" % i)
    print("checksum with hooks", checksum(y))

    # conv1 raises (4 channels, not 3); the caller catches it
    for bad in range(2):
        try:
            model(torch.randn(1, 4, 32, 32))
            expect(False, "a 4-channel input raises")
        except RuntimeError:
            pass
        y = model(x)
    expect(torch.equal(y, ref), "the same output after failed calls")
    probe.remove()
    want = [4] * len(depths) if stackprof.active() else [None] * len(depths)
    expect(len(depths) == 18 and depths == want, "depth inside layer1.0.conv1: %r" % depths)

    h.remove()
    left = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    expect(left == 0, "remove() left %d hooks" % left)
    expect(torch.equal(model(x), ref), "the same output once the hooks are gone")


class Catcher(nn.Module):
    """Calls a child that raises, catches it and goes on with another."""

    def __init__(self):
        super().__init__()
        self.bad = nn.Conv2d(4, 8, 3)
        self.good = nn.Linear(1024, 1024)

    def forward(self, x):
        try:
            self.bad(x)
        except RuntimeError:
            pass
        for _ in range(4):
            x = self.good(x)
        return x


class Twice(nn.Module):
    """Calls lin twice and once once: lin's path gets twice the time."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1024, 1024)
        self.once = nn.Linear(1024, 1024)

    def forward(self, x):
        for _ in range(2):
            self.lin(x)
            self.lin(x)
            self.once(x)
        return x


with torch.no_grad():
    c, t = Catcher(), Twice()
    stackprof.torch.label_modules(c)
    stackprof.torch.label_modules(t)
    v = torch.randn(32, 1024)
    with stackprof.profile():
        for _ in range(10):
            c(v)
        for _ in range(10):
            t(v)
splib.finish("modules")
EOF

"$TORCH_PY" modules.py >plain.txt 2>&1
cat plain.txt
check "without stackprof: runs, labels nothing" grep -q '^modules ok$' plain.txt

"$SP" run --no-summary -F 1000 -o m.prof -- "$TORCH_PY" modules.py >m.txt 2>&1
rc=$?
cat m.txt
check "under stackprof: the script's own checks pass" [ $rc -eq 0 ] && grep -q '^modules ok$' m.txt
check "the output is the same as without stackprof" \
	[ "$(grep 'checksum without' plain.txt | cut -d' ' -f4)" = "$(grep 'checksum with hooks' m.txt | cut -d' ' -f4)" ]

# module paths: the range frames of each stack, joined by '/', with samples
"$SP" collapse --frame func --metric samples m.prof >m.folded
awk '{
	n = split($0, f, ";"); sub(/ [0-9]+$/, "", f[n]); p = ""
	for (i = 1; i <= n; i++)
		if (f[i] ~ /^(ResNet|Catcher|Twice|layer[1-4]|[0-9]|conv[12]|bn[12]|relu|maxpool|avgpool|fc|downsample|bad|good|lin|once)$/)
			p = p (p == "" ? "" : "/") f[i]
	s[p == "" ? "[none]" : p] += $NF
} END { for (p in s) print s[p], p }' m.folded | sort -k2 >paths.txt
say "$(wc -l <paths.txt) module paths; some:"
grep -E ' ResNet/(conv1|layer1/0/conv1|layer2/0/downsample/0)$| (Catcher|Twice)/' paths.txt

# at: samples of path P
at() { awk -v p="$1" '$2 == p { print $1; found = 1 } END { if (!found) print 0 }' paths.txt; }
for p in ResNet/conv1 ResNet/layer1/0/conv1 ResNet/layer1/1/conv2 ResNet/layer2/0/conv2 \
	ResNet/layer3/0/conv1 ResNet/layer4/1/conv2; do
	check "$p has samples ($(at $p))" [ "$(at $p)" -ge 5 ]
done
# the 1x1 downsample convs are ~1/18 of a 3x3 conv's work: together
ds=$(awk '$2 ~ /^ResNet\/layer[2-4]\/0\/downsample\/0$/ { n += $1 } END { print n + 0 }' paths.txt)
check "ResNet/layer[2-4]/0/downsample/0 have samples ($ds)" [ "$ds" -ge 3 ]
check "every conv sits in its block: ResNet/conv1, ResNet/layerN/B/convK, ResNet/layerN/0/downsample/0" \
	awk '$2 ~ /conv|downsample/ && $2 !~ /^ResNet\/(conv1|layer[1-4]\/[01]\/conv[12]|layer[2-4]\/0\/downsample(\/[01])?)$/ { bad = 1; print "misplaced:", $0 } END { exit bad }' paths.txt
check "every path starts at a model's root" \
	awk '$2 !~ /^(ResNet|Catcher|Twice)(\/|$)/ && $2 != "[none]" { bad = 1; print "rootless:", $0 } END { exit bad }' paths.txt
total=$(awk '{ n += $1 } END { print n }' paths.txt)
check ">= 95% of the samples in the windows are in a module ($(at '[none]') of $total are not)" \
	awk -v a="$(at '[none]')" -v t="$total" 'BEGIN { exit !(t > 0 && a <= 0.05 * t) }'
check "the parent caught its child's exception: good is Catcher/good, never under bad" \
	[ "$(at Catcher/good)" -ge 100 -a "$(grep -c 'bad/' paths.txt)" -eq 0 ]
# where the ranges sit (issue 17 point 5): each module's range just inside
# the Module._call_impl that ran its hooks, just outside its forward
in_resnet=$(awk '/;ResNet;/ { n += $NF } END { print n + 0 }' m.folded)
placed=$(awk '/;Module\._call_impl;ResNet;ResNet\.forward;ResNet\._forward_impl;/ { n += $NF } END { print n + 0 }' m.folded)
convs=$(awk '/;(conv[12]|downsample|0);Conv2d\.forward;/ { n += $NF } END { print n + 0 }' m.folded)
conv_placed=$(awk '/;Module\._call_impl;(conv[12]|0);Conv2d\.forward;/ { n += $NF } END { print n + 0 }' m.folded)
say "ResNet range inside Module._call_impl, outside ResNet.forward: $placed of $in_resnet samples; convs: $conv_placed of $convs"
check ">= 95% of ResNet's samples: ...;Module._call_impl;ResNet;ResNet.forward;..." \
	awk -v a="$placed" -v t="$in_resnet" 'BEGIN { exit !(t > 0 && a >= 0.95 * t) }'
check ">= 95% of the convs' samples: ...;Module._call_impl;conv1;Conv2d.forward;..." \
	awk -v a="$conv_placed" -v t="$convs" 'BEGIN { exit !(t > 0 && a >= 0.95 * t) }'
lin=$(at Twice/lin)
once=$(at Twice/once)
say "Twice: lin $lin samples, once $once"
check "a module called twice counts twice (lin / once within 1.5-2.7)" \
	awk -v a="$lin" -v b="$once" 'BEGIN { exit !(b >= 50 && a >= 1.5 * b && a <= 2.7 * b) }'
finish
