#!/bin/bash
# Signal safety (libunwind's Gtest-nomalloc): with a malloc interposer that
# aborts when called inside the SIGPROF handler, malloc-heavy threads,
# thread churn and dlopen/dlclose run at a high rate without a single
# allocation in the handler; and errno survives every sample.
. "$(dirname "$0")/lib.sh"
LIB="$BUILD/libstackprof.so"
GUARD="$BIN/libmallocguard.so"

run_guarded() {
	LD_PRELOAD="$LIB:$GUARD" STACKPROF_OUT="$1" STACKPROF_FREQ=1000 STACKPROF_QUIET=1 "${@:2}"
}
# the guard itself works: it aborts on an allocation with SIGPROF blocked
cat >blocked.c <<'C'
#include <signal.h>
#include <stdlib.h>
int main(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	sigprocmask(SIG_BLOCK, &s, NULL);
	free(malloc(10));
	return 0;
}
C
cc -o blocked blocked.c && LD_PRELOAD="$GUARD" ./blocked 2>/dev/null
check "the guard can fail (aborts on malloc with SIGPROF blocked)" [ $? -ne 0 ]

run_guarded m.prof "$BIN/stress" malloc
check "malloc-heavy threads: no allocation in the handler" [ $? -eq 0 ]
run_guarded c.prof "$BIN/stress" churn
check "thread churn: no allocation in the handler" [ $? -eq 0 ]
run_guarded d.prof "$BIN/dlopen_main" "$BIN/libsp_plugin.so" loop >/dev/null
check "dlopen/dlclose loop: no allocation in the handler" [ $? -eq 0 ]
run_guarded e.prof "$BIN/stress" errno
check "errno survives samples" [ $? -eq 0 ]
"$SP" info m.prof >info.txt
check "the malloc run was really sampled (> 500 samples at 1 kHz)" \
	has info.txt '/^samples:/' '$2 > 500'
finish
