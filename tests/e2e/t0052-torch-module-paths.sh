#!/bin/bash
# --aggregate-by module-path on torchvision ResNet18 labelled with
# stackprof.torch.label_modules, under Debian's torch:
# - table: the root ResNet's total is every sample of the model (all but
#   the "[no module]" ones), each module's total holds its children's, a
#   leaf module's self time is its total, and every conv sits under its
#   block (ResNet/layerN/B/convK, ResNet/layerN/0/downsample/0);
# - top agrees with the table;
# - a module called twice counts twice (a child called twice per forward
#   has about twice the time of its sibling called once);
# - diff against a variant whose layer1[1] is an Identity: that block's
#   convs and batch norms are removed, layer1 decreased;
# - pprof's samples carry the whole path as a module_path label.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
unset PYTHONPATH

cat >modules.py <<'EOF'
import sys
import torch
import torchvision
from torch import nn
import stackprof
import stackprof.torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
if sys.argv[1] == "variant":
    model.layer1[1] = nn.Identity()


class Twice(nn.Module):
    """Calls lin twice per forward and once once."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1024, 1024)
        self.once = nn.Linear(1024, 1024)

    def forward(self, x):
        self.lin(x)
        self.lin(x)
        self.once(x)
        return x


stackprof.torch.label_modules(model)
twice = Twice()
stackprof.torch.label_modules(twice)
x = torch.randn(2, 3, 224, 224)
v = torch.randn(16, 1024)
with torch.no_grad():
    model(x)
    with stackprof.profile():
        for _ in range(10):
            model(x)
        if sys.argv[1] != "variant":
            for _ in range(20):
                twice(v)
print("done")
EOF
ran() { [ "$1" -eq 0 ] && grep -q '^done$' "$2"; }
"$SP" run --no-summary -F 1000 -o m.prof -- "$TORCH_PY" modules.py resnet18 >m.txt 2>&1
check "ResNet18 with label_modules ran under stackprof" ran $? m.txt
"$SP" run --no-summary -F 1000 -o v.prof -- "$TORCH_PY" modules.py variant >v.txt 2>&1
check "the variant ran under stackprof" ran $? v.txt

# each path ends with its module's class, as torch's with_modules shows it
# (but the model's, whose segment is its class); the checks below read the
# bare paths (--no-module-class), one word each
"$SP" top m.prof --aggregate-by module-path --row-limit 0 >classes.txt
check "a path ends with its module's class: ResNet/layer1/0/conv1 (Conv2d)" \
	grep -q ' ResNet/layer1/0/conv1 (Conv2d)$' classes.txt
check "... a block's with its own: ResNet/layer1/0 (BasicBlock), ResNet/layer1 (Sequential)" \
	bash -c "grep -q ' ResNet/layer1/0 (BasicBlock)$' classes.txt && grep -q ' ResNet/layer1 (Sequential)$' classes.txt"
# a batch norm takes ~3 samples a run: one of the sixteen, whichever was
# sampled (CI's run once had none in layer1/0/bn1)
check "... and the path below goes on without it (ResNet/layerN/B/bnK (BatchNorm2d))" \
	grep -qE ' ResNet/layer[1-4]/[01]/bn[12] \(BatchNorm2d\)$' classes.txt
check "... nor any of its parents' classes" \
	bash -c "! grep -qE '\((BasicBlock|Sequential)\)/' classes.txt"
check "... but the model is just ResNet" bash -c "grep -q ' ResNet$' classes.txt && ! grep -q 'ResNet (ResNet)' classes.txt"
"$SP" table m.prof --aggregate-by module-path --no-module-class --sort-by cpu_time_total --row-limit 0 >paths.txt
head -16 paths.txt
check "--no-module-class leaves the classes out" bash -c "! grep -q '(Conv2d)' paths.txt"
# field F (2: self %, 4: total %, 6: samples) of row NAME, 0 when there is none
f() { awk -v n="$1" -v c="$2" '$1 == n { x = $c; sub(/%$/, "", x); print x + 0; found = 1; exit } END { if (!found) print 0 }' paths.txt; }
all=$("$SP" top m.prof --row-limit 1 | awk 'NR == 1 { print $(NF - 1) }')
nomod=$(awk '$1 == "[no" { print $7; exit }' paths.txt)
nomod=${nomod:-0}
say "samples: $all; ResNet $(f ResNet 6); Twice $(f Twice 6); [no module] $nomod"
check "ResNet's and Twice's totals and [no module] are every sample" \
	[ $(($(f ResNet 6) + $(f Twice 6) + nomod)) -eq "$all" ]
check "ResNet is the top row by total (the whole model)" \
	awk 'NR == 4 { exit !($1 == "ResNet") }' paths.txt
check "[no module] is small (<= 5% of the samples)" [ $((nomod * 20)) -le "$all" ]
check "ResNet/layer1 holds its blocks: total >= ResNet/layer1/0 + ResNet/layer1/1" \
	[ "$(f ResNet/layer1 6)" -ge $(($(f ResNet/layer1/0 6) + $(f ResNet/layer1/1 6))) ]
check "ResNet/layer1/0 holds its convs" \
	[ "$(f ResNet/layer1/0 6)" -ge $(($(f ResNet/layer1/0/conv1 6) + $(f ResNet/layer1/0/conv2 6))) ]
check "a leaf module's self time is its total (ResNet/layer2/1/conv2)" \
	[ "$(f ResNet/layer2/1/conv2 2)" = "$(f ResNet/layer2/1/conv2 4)" ]
for p in ResNet/conv1 ResNet/layer1/0/conv1 ResNet/layer2/0/conv2 ResNet/layer3/1/conv1 ResNet/layer4/0/conv1; do
	check "$p has samples ($(f $p 6))" [ "$(f $p 6)" -ge 5 ]
done
check "every conv sits in its block" \
	awk '$1 ~ /conv|downsample/ && $1 !~ /^ResNet\/(conv1|layer[1-4]\/[01]\/conv[12]|layer[2-4]\/0\/downsample(\/[01])?)$/ { print "misplaced:", $1; bad = 1 } END { exit bad }' paths.txt
check "ResNet/layer4 (>= 50 samples) and ResNet/fc are there" [ "$(f ResNet/fc 6)" -ge 1 -a "$(f ResNet/layer4 6)" -ge 50 ]
lin=$(f Twice/lin 6)
once=$(f Twice/once 6)
say "Twice/lin $lin samples, Twice/once $once"
check "a module called twice counts twice (lin / once within 1.5-2.7)" \
	awk -v a="$lin" -v b="$once" 'BEGIN { exit !(b >= 50 && a >= 1.5 * b && a <= 2.7 * b) }'

"$SP" top m.prof --aggregate-by module-path --no-module-class --row-limit 0 --sort-by total >top.txt
head -4 top.txt
check "top says module paths" grep -q ' module paths, ' top.txt
check "top and table agree on ResNet/layer1's samples" \
	[ "$(awk '$NF == "ResNet/layer1" { print $(NF - 1) }' top.txt)" -eq "$(f ResNet/layer1 6)" ]

"$SP" diff --aggregate-by module-path --no-module-class --compare total m.prof v.prof >diff.txt
grep -E 'ResNet/layer1/1|^Status|comparing' diff.txt
status() { awk -v n="$1" '$NF == n { print $1; exit }' diff.txt; }
# a batch norm takes a few samples at most: it can only be "removed" if
# the base run sampled it at all
for p in ResNet/layer1/1/conv1 ResNet/layer1/1/conv2 ResNet/layer1/1/bn1; do
	if [ "$(f $p 6)" -ge 3 ]; then
		check "diff: $p removed" [ "$(status $p)" = removed ]
	else
		say "diff: $p had $(f $p 6) samples in the base run: not checked"
	fi
done
check "diff: ResNet/layer1 decreased (one block of two left)" [ "$(status ResNet/layer1)" = decreased ]
check "diff: Twice removed (the variant does not run it)" [ "$(status Twice)" = removed ]
# pprof carries the whole path as a label, as go tool pprof -tags reads it
if command -v go >/dev/null 2>&1; then
	"$SP" export --format pprof -o m.pb.gz m.prof
	go tool pprof -tags m.pb.gz >tags.txt 2>go.err
	sed -n '/module_path:/,/^$/p' tags.txt | head -6
	check "pprof's module_path label holds whole paths (ResNet/layer1/0/conv1)" \
		grep -qE '^ +[0-9.]+m?s .*: ResNet/layer1/0/conv1$' tags.txt
else
	say "go is not installed: the pprof label is not checked"
fi

# PyTorch-style frames name Python files by their import path, as
# torch.profiler does, shortened once: not again by --strip-path auto
# (which gave "conv.py(459)"), and not at all with --strip-path none
for sp in default auto none; do
	opt=()
	[ $sp = default ] || opt=(--strip-path $sp)
	"$SP" collapse --frame pytorch "${opt[@]}" m.prof 2>/dev/null | tr ';' '\n' | sort -u >py.$sp
done
check "pytorch frames: torch's files by import path" grep -qE '^torch/nn/modules/conv\.py\([0-9]+\):' py.default
check "the same with --strip-path auto" grep -qE '^torch/nn/modules/conv\.py\([0-9]+\):' py.auto
check "never shortened twice" bash -c "! grep -qE '^conv\.py\(' py.auto"
check "--strip-path none keeps whole paths" grep -qE '^/.*/torch/nn/modules/conv\.py\([0-9]+\):' py.none
check "no standard-library file is left whole with auto" \
	bash -c "! grep -qE '^/.*/lib/python3\.[0-9]+/.*\.py\(' py.auto"
finish
