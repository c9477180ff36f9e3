#!/bin/bash
# A known call chain: main -> chain_a -> chain_b -> chain_c -> leaf_spin,
# a callback through libc's qsort, an always_inline helper that must come
# out as a frame of its own, and a signal handler's work, whose stacks go
# through the kernel's signal frame back to main and _start.
. "$(dirname "$0")/lib.sh"

"$SP" run --no-summary -o c.prof -- "$BIN/chain" 1.5 >/dev/null
check "chain exits 0" [ $? -eq 0 ]
"$SP" collapse --frame func c.prof >c.folded
"$SP" collapse --frame func --inline-mark c.prof >ci.folded
check "main;chain_a;chain_b;chain_c;leaf_spin in that order" \
	grep -qE '(^|;)main;chain_a;chain_b;chain_c;leaf_spin [0-9]+$' c.folded
check "the chain starts at _start" grep -qE '^_start;__libc_start_main[^;]*;.*main;chain_a' c.folded
check "callback through libc: chain_sort;...qsort...;cmp_cb;leaf_spin" \
	grep -qE 'chain_sort;([^;]*;)*[^;]*(qsort|msort)[^;]*;([^;]*;)*cmp_cb;leaf_spin [0-9]+$' c.folded
check "through a signal frame: chain_signal;...;<signal handler called>;on_signal;leaf_spin, from _start" \
	grep -qE '^_start;.*;main;chain_signal;([^;]*;)*<signal_handler_called>;on_signal;leaf_spin [0-9]+$' c.folded
check "the inlined helper is a frame under chain_inl" grep -qE 'chain_inl;inl_helper [0-9]+$' c.folded
check "--inline-mark marks it" grep -qE 'chain_inl;inl_helper_\[i\] [0-9]+$' ci.folded
"$SP" collapse c.prof >cl.folded
check "file:line form names chain.c" grep -qE 'chain_c_\(.*chain\.c:[0-9]+\)' cl.folded
a=$(share c.folded ';chain_a;')
s=$(share c.folded ';chain_sort;')
i=$(share c.folded ';chain_inl;')
g=$(share c.folded ';chain_signal;')
say "shares: chain_a $a%, chain_sort $s%, chain_inl $i%, chain_signal $g%"
check "all four branches sampled" \
	awk -v a="$a" -v s="$s" -v i="$i" -v g="$g" 'BEGIN { exit !(a > 5 && s > 5 && i > 5 && g > 5) }'
finish
