#!/bin/bash
# The C API (stackprof.h): named ranges appear as frames like
# record_function, each just inside the function that pushed it (issue 17
# point 5); a wait,warmup,active,repeat schedule keeps only the active
# steps; the same binary runs without the profiler (stub library); ranges
# pushed while the writer drains reach the profile before their samples.
. "$(dirname "$0")/lib.sh"

"$BIN/api_user" ranges >plain.txt
check "runs without the profiler" grep -q 'profiler absent' plain.txt

"$SP" run --no-summary -o r.prof -- "$BIN/api_user" ranges >r.txt
check "runs under the profiler" grep -q 'profiler active' r.txt
"$SP" collapse --frame func r.prof >r.folded
# the shares: each pass's samples all carry the whole chain, in place
lin=$(share r.folded ';main;model_inference;run_passes;LINEAR_PASS;work_linear;')
conv=$(share r.folded ';main;model_inference;run_passes;CONV_PASS;work_conv;')
say "main;model_inference;run_passes;LINEAR_PASS;work_linear: $lin%; ...CONV_PASS;work_conv: $conv%"
check "LINEAR PASS sits between run_passes and work_linear (>= 40% of samples)" awk -v v="$lin" 'BEGIN { exit !(v >= 40) }'
check "CONV PASS sits between run_passes and work_conv (>= 40% of samples)" awk -v v="$conv" 'BEGIN { exit !(v >= 40) }'
check "no range at the root of any stack" bash -c "! grep -qE '^(model_inference|LINEAR_PASS|CONV_PASS)' r.folded"
check "--no-ranges leaves them out" \
	bash -c "'$SP' collapse --frame func --no-ranges r.prof | grep -q ';main;run_passes;work_linear;'"
check "--range filters to one range" \
	bash -c "'$SP' collapse --frame func --range 'LINEAR PASS' r.prof | grep -v work_conv | grep -q work_linear"

"$SP" run --no-summary -o s.prof -- "$BIN/api_user" schedule >/dev/null
"$SP" collapse --frame func s.prof >s.folded
active=$(share s.folded ';step_active;')
idle=$(share s.folded ';step_idle;')
say "schedule: step_active $active%, step_idle $idle%"
check "only active steps are sampled" awk -v a="$active" -v i="$idle" 'BEGIN { exit !(a > 90 && i < 5) }'

# ranges that appear while the writer drains: each sample's range is
# written before the sample (the reader refuses a sample whose range it
# has not read); 4 threads push 20,000 new names in all
"$SP" run --no-summary -F 3000 -o f.prof -- "$BIN/api_user" fresh >/dev/null
"$SP" info f.prof >f.info 2>f.err
check "new ranges as the writer drains: the profile reads whole" \
	bash -c "[ ! -s f.err ] && grep -q '^samples: *[0-9]' f.info"
"$SP" collapse --frame func f.prof >f.folded
fresh=$(grep -o ';fresh_[0-9.]*;' f.folded | sort -u | wc -l)
say "distinct fresh ranges in the samples: $fresh"
check "and its samples carry them (>= 1,000 distinct)" [ "$fresh" -ge 1000 ]

STACKPROF_SCHEDULE=0,0,0 "$SP" run --no-summary -o bad.prof -- "$BIN/api_user" ranges >/dev/null 2>bad.err
check "a bad STACKPROF_SCHEDULE is reported, the program still runs" grep -q 'STACKPROF_SCHEDULE=0,0,0 ignored' bad.err
"$SP" run -F 0 -- true 2>usage.err
check "bad -F is a usage error (exit 2)" [ $? -eq 2 ]
"$SP" run -- /nonexistent/prog 2>nx.err
check "a missing program exits 127 like a shell" [ $? -eq 127 ]
check "and says why" grep -q 'No such file' nx.err
finish
