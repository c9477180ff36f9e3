#!/bin/bash
# Silent empty answers get one line that says why and what to do (issue 31
# item 4), and the line stays away where the answer is right:
# - a module-path view of a profile without label_modules: all '[no module]';
# - label_modules on a TorchScript model: only the scripted module's calls
#   can be labelled (its children run without Python hooks);
# - a plain LD_PRELOAD run that found its output name taken wrote PATH.<pid>:
#   reading PATH then names the newer file;
# - `flamegraph` without -o on a terminal: refused, not pages of SVG;
# - the run's summary recognises OpenMP's runtime spin-waiting (libgomp
#   frames, stripped) and names the knobs; a program that waits passively
#   gets no such line.
. "$(dirname "$0")/lib.sh"

"$SP" run --no-summary -o chain.prof -- "$BIN/chain" 0.3 >/dev/null 2>&1
"$SP" top --aggregate-by module-path chain.prof >mp.out 2>mp.err
check "module-path without label_modules: the view still comes" grep -q '\[no module\]' mp.out
check "... with one line naming label_modules" \
	bash -c "[ \$(grep -c 'label_modules' mp.err) -eq 1 ] && grep -q 'no nn.Module ranges' mp.err"

need_python
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"
cat >labelled.py <<'PY'
import splib
import stackprof.torch

model = splib.FakeModule(lambda m, x: splib.work_zlib(0.2))
stackprof.torch.label_modules(model, "Net")
model(1)
PY
"$SP" run --no-summary -o labelled.prof -- "$PY" labelled.py >/dev/null 2>&1
"$SP" top --aggregate-by module-path labelled.prof >lab.out 2>lab.err
check "module-path with label_modules: the path, and no hint" \
	bash -c "grep -q 'Net' lab.out && ! grep -q 'label_modules' lab.err"

if have_torch; then
	cat >scripted.py <<'PY'
import sys
import torch
import stackprof.torch

model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
if sys.argv[1] == "script":
    model = torch.jit.script(model)
h = stackprof.torch.label_modules(model)
print(len(h))
PY
	for how in script eager; do
		"$SP" run --no-summary -o $how.prof -- "$TORCH_PY" scripted.py $how >$how.out 2>$how.err
		check "label_modules on the $how model runs" [ $? -eq 0 ]
	done
	check "label_modules on a TorchScript model says its children run unlabelled, once" \
		bash -c "[ \$(grep -c 'is TorchScript' script.err) -eq 1 ]"
	check "... and points at the caller's line" grep -q 'scripted.py:8' script.err
	check "label_modules on the eager model says nothing" [ ! -s eager.err ]
else
	say "Debian's python3-torch is not installed: the TorchScript hint not checked"
fi

# an earlier profile at the name: the library writes PATH.<pid> beside it
LD_PRELOAD="$BUILD/libstackprof.so" STACKPROF_OUT=plain.prof "$BIN/chain" 0.1 >/dev/null
sleep 0.05
LD_PRELOAD="$BUILD/libstackprof.so" STACKPROF_OUT=plain.prof "$BIN/chain" 0.1 >/dev/null
newer=$(ls plain.prof.* 2>/dev/null)
check "a second plain LD_PRELOAD run wrote PATH.<pid>" [ -n "$newer" ]
"$SP" top plain.prof >plain.out 2>plain.err
check "reading PATH names the newer profile and what to do" \
	bash -c "grep -q 'plain.prof is an earlier run.s: $newer was made after it' plain.err &&
		grep -q STACKPROF_OVERWRITE plain.err"
check "reading the newer one says nothing" bash -c "'$SP' top '$newer' 2>&1 >/dev/null | grep -qv . ; [ -z \"\$('$SP' top '$newer' 2>&1 >/dev/null)\" ]"
# a run's own children are not a later run
LD_PRELOAD="$BUILD/libstackprof.so" STACKPROF_OUT=kids.prof sh -c '"$0" 0.1; "$0" 0.1' "$BIN/chain" >/dev/null
check "a run whose children wrote PATH.<pid> reads without the note" \
	bash -c "[ -z \"\$('$SP' top kids.prof 2>&1 >/dev/null)\" ]"

# an OpenMP program whose second thread waits at the barrier while the first works
cat >omp.c <<'C'
#include <omp.h>
#include <stdio.h>
static double work(long n)
{
	volatile double x = 0;
	for (long i = 0; i < n; i++)
		x += i * 0.5;
	return x;
}
int main(void)
{
	double s = 0;
	for (int r = 0; r < 30; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
		if (omp_get_thread_num() == 0)
			s += work(3000000);
	}
	printf("%d\n", s > 0);
	return 0;
}
C
if cc -O1 -fopenmp omp.c -o omp 2>omp.cc.err; then
	OMP_WAIT_POLICY=active "$SP" run -o omp-active.prof -- ./omp >/dev/null 2>omp-active.err
	check "OpenMP spinning: the summary names libgomp's share and the knobs" \
		grep -q '^stackprof: hint: [0-9]*% of the CPU is in GNU OpenMP.s runtime (libgomp).*OMP_WAIT_POLICY=passive' omp-active.err
	OMP_WAIT_POLICY=passive "$SP" run -o omp-passive.prof -- ./omp >/dev/null 2>omp-passive.err
	check "OpenMP waiting passively: no hint" bash -c "! grep -q 'hint:' omp-passive.err"
	"$SP" run -o chain-sum.prof -- "$BIN/chain" 0.2 >/dev/null 2>chain-sum.err
	check "a program without OpenMP: no hint" bash -c "grep -q 'wrote' chain-sum.err && ! grep -q 'hint:' chain-sum.err"
else
	say "cc -fopenmp does not build here: the OpenMP hint not checked"
	cat omp.cc.err
fi

# a terminal on stdout: `script` gives the command one
script -qec "'$SP' flamegraph chain.prof; echo \"rc=\$?\"" /dev/null >tty.out 2>&1
check "flamegraph to a terminal is refused (exit 2), and says to give -o" \
	bash -c "grep -q 'rc=2' tty.out && grep -q -- '-o FILE.svg' tty.out && ! grep -q '<svg' tty.out"
"$SP" flamegraph chain.prof >piped.svg
check "flamegraph to a pipe or file still writes the SVG" grep -q '<svg' piped.svg
finish
