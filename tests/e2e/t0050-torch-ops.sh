#!/bin/bash
# The operator view on Debian's torch (python3-torch 1.13, torchvision ResNet18):
# - every at::_ops::NAME::call/redispatch symbol libtorch_cpu exports parses
#   as the operator torch's own registry names (aten::NAME and its overload);
# - table --aggregate-by op has the key_averages() layout and footer, its
#   operators nest (conv2d > convolution > _convolution > mkldnn_convolution)
#   and the convolution dominates; samples outside operators are one
#   "[no operator]" row;
# - --group-by-stack-n N: with Python frames in the profile (the default),
#   an operator's Source Location is the N Python lines that called it, as
#   torch.profiler's with_stack shows them (the convolution under
#   conv.py's _conv_forward, its rows split by the ResNet lines that called
#   it, no Python function as a row); in a profile without Python frames
#   (STACKPROF_PYTHON=0), the operator stack of the convolution;
# - the stripped libtorch's unnamed code (libtorch_cpu.so.1.13+0x...) is
#   counted for the operator it runs under: no such row in the op view, and
#   the innermost operator over each unnamed leaf gets those samples;
# - collapse --ops prints operator stacks only, over the same samples;
# - diff --aggregate-by op between ResNet18 and a variant without max pool
#   and with GELU for ReLU: gelu added, max_pool2d_with_indices removed,
#   mkldnn_convolution increased.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
unset PYTHONPATH

# --- names: libtorch's own symbols against torch's operator registry
LIBTORCH=$("$TORCH_PY" -c 'import torch, os; print(os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")))')
nm -D -C --defined-only "$LIBTORCH" | sed -n 's/^[0-9a-f]* T //p' |
	grep -E '^at::_ops::[A-Za-z0-9_]+::(call|redispatch)\(' >ops-symbols.txt
"$TORCH_PY" - ops-symbols.txt >names.txt <<'EOF'
import sys, torch
ops = {}
for s in torch._C._jit_get_all_schemas():
    if s.name.startswith("aten::"):
        ops[s.name[6:] + ("_" + s.overload_name if s.overload_name else "")] = (s.name, s.overload_name)
missing = 0
for line in open(sys.argv[1]):
    func = line.rstrip("\n")
    struct = func[len("at::_ops::"):].split("::")[0]
    if struct not in ops:
        missing += 1
        continue
    print("%s\t%s\t%s" % (func, ops[struct][0], ops[struct][1]))
print("registry has no schema for %d symbols" % missing, file=sys.stderr)
EOF
say "$(wc -l <ops-symbols.txt) operator symbols in $(basename "$LIBTORCH"), $(wc -l <names.txt) with a schema"
"$BUILD/tests/test-ops" --names names.txt >names.out 2>&1
rc=$?
tail -3 names.out
named() { [ $rc -eq 0 ] && [ "$(wc -l <names.txt)" -ge 5000 ]; }
check "every operator symbol (>= 5000) is named as torch's registry names it" named

# --- profiles of two models, only the loop sampled
cat >model.py <<'EOF'
import sys
import torch
import torchvision
from torch import nn
import stackprof

torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
if sys.argv[1] == "variant":
    model.maxpool = nn.Identity()  # no max pool: layer1 runs at 4x the pixels
    for name, m in list(model.named_modules()):
        for child, c in list(m.named_children()):
            if isinstance(c, nn.ReLU):
                setattr(m, child, nn.GELU())
x = torch.randn(2, 3, 224, 224)
with torch.no_grad():
    model(x)  # oneDNN makes its kernels here
    with stackprof.profile():
        for _ in range(int(sys.argv[2])):
            y = model(x)
print("done", tuple(y.shape))
EOF
ran() { [ "$1" -eq 0 ] && grep -q '^done (2, 1000)' "$2"; }
"$SP" run --no-summary -F 1000 -o a.prof -- "$TORCH_PY" model.py resnet18 10 >a.txt 2>&1
check "ResNet18 ran under stackprof" ran $? a.txt
"$SP" run --no-summary -F 1000 -o b.prof -- "$TORCH_PY" model.py variant 10 >b.txt 2>&1
check "the variant ran under stackprof" ran $? b.txt
STACKPROF_PYTHON=0 "$SP" run --no-summary -F 1000 -o c.prof -- "$TORCH_PY" model.py resnet18 3 >c.txt 2>&1
check "ResNet18 ran under stackprof without Python frames" ran $? c.txt

# --- the table
"$SP" table a.prof --aggregate-by op --row-limit 0 >ops.txt
head -12 ops.txt
check "the key_averages() header" \
	awk 'NR == 2 { exit !($0 ~ /^ +Name    Self CPU %      Self CPU   CPU total %     CPU total       Samples  $/) }' ops.txt
# lines 1, 3 and the one before the footer: the name column's dashes, then five of 12
layout() {
	local sep='^-+  (-{12}  ){5}$'
	sed -n '1p;3p' ops.txt | grep -qvE "$sep" && return 1
	tail -2 ops.txt | head -1 | grep -qE "$sep" || return 1
	[ "$(grep -vc '  $' ops.txt)" -eq 1 ] # the footer is the only line without
}
check "separator lines of dashes, every line but the footer ending in two spaces" layout
check "the footer" bash -c "tail -1 ops.txt | grep -qE '^Self CPU time total: [0-9]+\.[0-9]{3}(us|ms|s)$'"
# row NAME: its fields (self%, self, total%, total, samples)
row() { awk -v n="$1" '$1 == n { print; exit }' ops.txt; }
col() { row "$1" | awk -v c="$2" '{ x = $c; sub(/%$/, "", x); print x + 0 }'; }
tot() { col "$1" 6; }
for op in conv2d convolution _convolution mkldnn_convolution batch_norm native_batch_norm \
	max_pool2d max_pool2d_with_indices relu_ add_ linear addmm; do
	check "a row for aten::$op" [ -n "$(row aten::$op)" ]
done
check "operators nest: conv2d >= convolution >= _convolution >= mkldnn_convolution (samples)" \
	[ "$(tot aten::conv2d)" -ge "$(tot aten::convolution)" -a "$(tot aten::convolution)" -ge "$(tot aten::_convolution)" \
	-a "$(tot aten::_convolution)" -ge "$(tot aten::mkldnn_convolution)" ]
check "the convolution is most of the time (mkldnn_convolution self >= 50%)" \
	awk -v p="$(col aten::mkldnn_convolution 2)" 'BEGIN { exit !(p >= 50) }'
check "conv2d's self time is small (<= 3%): it only calls down" \
	awk -v p="$(col aten::conv2d 2)" 'BEGIN { exit !(p <= 3) }'
no_op() {
	[ "$(grep -c '^ *\[no operator\] ' ops.txt)" -eq 1 ] &&
		awk -v p="$(grep '^ *\[no operator\] ' ops.txt | awk '{ print $3 + 0 }')" 'BEGIN { exit !(p < 25) }'
}
check "one [no operator] row, under 25% of the loop" no_op
check "self shares add up to 100%" \
	awk '$0 ~ /%/ && !/Name/ { s += $(NF - 4) } END { exit !(s > 99.8 && s < 100.2) }' ops.txt

# --- operator stacks: without Python frames, the operators around it
"$SP" table c.prof --aggregate-by op --group-by-stack-n 4 --row-limit 1 >stack4.txt
cat stack4.txt
check "--group-by-stack-n 4 without Python frames: the convolution's operator stack, innermost first" \
	awk 'NR > 3 && NR <= 7 { s = s $NF " " } END { exit !(s == "aten::mkldnn_convolution aten::_convolution aten::convolution aten::conv2d ") }' stack4.txt

# --- with Python frames: the Python lines that called each operator
"$SP" table a.prof --aggregate-by op --group-by-stack-n 5 --row-limit 0 >pystack.txt
head -16 pystack.txt
# rows TABLE: one line per row, NAME<TAB>its Source Location lines joined by " | "
rows() {
	awk 'NR > 3 && / [0-9.]+%  / { if (r) print r; n = $0; sub(/^ +/, "", n); sub(/  +[0-9.]+%.*/, "", n)
		src = $0; sub(/^.*  [0-9]+  /, "", src); sub(/ +$/, "", src); r = n "\t" src; next }
		NR > 3 && /^ +[^ -]/ && r { l = $0; sub(/^ +/, "", l); sub(/ +$/, "", l); r = r " | " l }
		END { if (r) print r }' "$1"
}
rows pystack.txt >pyrows.txt
check "the convolution's first Source Location line is conv.py's _conv_forward" \
	awk -F'\t' '$1 == "aten::mkldnn_convolution" { split($2, l, / \| /); ok = l[1] ~ /^torch\/nn\/modules\/conv\.py\([0-9]+\): [A-Za-z0-9_.]*_conv_forward$/; exit }
		END { exit !ok }' pyrows.txt
check "the convolution's rows split by the ResNet lines that called it (>= 3 rows, one with resnet.py)" \
	awk -F'\t' '$1 == "aten::mkldnn_convolution" { n++; if ($2 ~ /torchvision\/models\/resnet\.py\([0-9]+\)/) r++ } END { exit !(n >= 3 && r >= 1) }' pyrows.txt
check "every row is an operator or [no operator], never a Python function" \
	awk -F'\t' '!($1 ~ /^aten::/ || $1 == "[no operator]") { bad++ } END { exit !(NR > 5 && !bad) }' pyrows.txt
check "self shares still add up to 100% with the Python callers" \
	awk 'NR > 3 && / [0-9.]+%  / { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { s += $i; break } }
		END { exit !(s > 99.8 && s < 100.2) }' pystack.txt

# --- functions with their Python lines (--python-stack), as with_stack
# shows a sample's: every Source Location line is a Python one, and the
# convolution kernel's first is conv.py's _conv_forward
"$SP" table a.prof --group-by-stack-n 3 --python-stack --row-limit 0 >fpy.txt
head -12 fpy.txt
rows fpy.txt >fpyrows.txt
check "--python-stack: every Source Location line of every function row is a Python line" \
	awk -F'\t' '$2 != "" { k = split($2, l, / \| /); for (i = 1; i <= k; i++) if (l[i] !~ /\.py\([0-9]+\): /) bad++; n++ }
		END { exit !(n > 20 && !bad) }' fpyrows.txt
check "--python-stack: a convolution kernel's first line is conv.py's _conv_forward" \
	awk -F'\t' '$1 ~ /conv/ && $2 ~ /^torch\/nn\/modules\/conv\.py\([0-9]+\): [A-Za-z0-9_.]*_conv_forward( |$)/ { ok = 1 } END { exit !ok }' fpyrows.txt

# --- unnamed code counts for its operator
"$SP" collapse --frame func --metric samples a.prof >native.folded
"$SP" top a.prof --aggregate-by op --row-limit 0 >top-ops.txt
# per innermost operator: samples whose leaf is unnamed libtorch code
awk '{
	n = split($0, f, ";"); sub(/ [0-9]+$/, "", f[n])
	if (f[n] !~ /^libtorch_cpu\.so[.0-9]*\+0x[0-9a-f]+$/) next
	op = ""
	for (i = n; i >= 1; i--)
		if (f[i] ~ /^at::_ops::[A-Za-z0-9_]+::(call|redispatch)\(/) { op = f[i]; break }
	if (op == "") next
	sub(/^at::_ops::/, "", op); sub(/::(call|redispatch)\(.*/, "", op)
	u[op] += $NF
} END { for (o in u) print u[o], o }' native.folded | sort -nr >unnamed.txt
say "unnamed libtorch leaves under operators (samples, at::_ops struct):"
head -5 unnamed.txt
check "the profile has unnamed libtorch code under operators (>= 5 samples)" \
	awk '{ n += $1 } END { exit !(n >= 5) }' unnamed.txt
check "no unnamed code is a row of the op view" bash -c "! grep -q '+0x' top-ops.txt"
# the largest one, by name: its operator's self samples cover it
read -r n_unnamed struct < <(head -1 unnamed.txt)
name=aten::$(awk -F'\t' -v s="$struct" '{ split($1, a, "::"); if (a[3] == s) { print substr($2, 7); exit } }' names.txt)
"$SP" collapse --ops --metric samples a.prof >ops.folded
leafself=$(awk -v n="$name" '{ k = split($1, f, ";"); if (f[k] == n) s += $NF } END { print s + 0 }' ops.folded)
say "$n_unnamed unnamed leaf samples under at::_ops::$struct; $name is the leaf of $leafself"
check "they are $name's own samples (collapse --ops: $leafself >= $n_unnamed)" \
	[ "$leafself" -ge "$n_unnamed" ]

# --- collapse --ops
head -5 ops.folded
check "collapse --ops: operators and [no_operator] only" \
	awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); for (i = 1; i <= n; i++) if (f[i] !~ /^aten::[A-Za-z0-9_]+$/ && f[i] != "[no_operator]") exit 1 }' ops.folded
check "collapse --ops: the convolution stack is the heaviest line" \
	[ "$(sort -k2 -nr ops.folded | head -1 | cut -d' ' -f1)" = "aten::conv2d;aten::convolution;aten::_convolution;aten::mkldnn_convolution" ]
check "collapse --ops covers every sample of the plain collapse" \
	[ "$(awk '{ n += $NF } END { print n }' ops.folded)" -eq "$(awk '{ n += $NF } END { print n }' native.folded)" ]

# --- diff by operator
"$SP" diff --aggregate-by op a.prof b.prof >diff.txt
head -14 diff.txt
status() { awk -v n="$1" '$NF == n { print $1; exit }' diff.txt; }
check "diff: aten::gelu added" [ "$(status aten::gelu)" = added ]
check "diff: aten::max_pool2d_with_indices removed" [ "$(status aten::max_pool2d_with_indices)" = removed ]
check "diff: aten::clamp_min_ (ReLU's) removed" [ "$(status aten::clamp_min_)" = removed ]
check "diff: aten::mkldnn_convolution increased" [ "$(status aten::mkldnn_convolution)" = increased ]
check "diff: the heading says operators" grep -q '^comparing self time per operator, ' diff.txt
finish
