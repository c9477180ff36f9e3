#!/bin/bash
# Programs nobody here wrote: xz (threads that start with every signal
# blocked; 2 MiB blocks, so that both of its workers have work), gzip,
# sqlite3 and python3.11d (full DWARF). Each must give the same output and
# exit status as without stackprof, and a profile whose
# frames are named and reach a thread root. xz and sqlite3 run again at
# 1 kHz, where `auto` takes the perf-sigtrap timer when the kernel allows it
# (SIGTRAP instead of SIGPROF, shared with the program).
. "$(dirname "$0")/lib.sh"

head -c 12000000 /dev/urandom >data.bin
base64 data.bin | head -c 8000000 >data.txt

rooted_ok() { # PROFILE: >= 95% of samples reach a thread root
	"$SP" info "$1" >"$1.info"
	has "$1.info" '/^thread root:/' '$3 + 0 >= 95'
}

if command -v xz >/dev/null; then
	xz -T2 --block-size=2MiB -6 -c data.txt >plain.xz
	"$SP" run --no-summary -o xz.prof -- xz -T2 --block-size=2MiB -6 -c data.txt >prof.xz
	check "xz: same exit status" [ $? -eq 0 ]
	check "xz: same output" cmp -s plain.xz prof.xz
	check "xz: >= 95% rooted" rooted_ok xz.prof
	check "xz: its worker threads (started with every signal blocked) are sampled" \
		[ "$(sampled_threads xz.prof.info 20)" -ge 2 ]
	"$SP" collapse --frame func xz.prof >xz.folded
	# liblzma's encoder is static and Debian ships no symbols for it: each of
	# its functions must stay one frame, named by its start from .eh_frame
	check "xz: liblzma's functions are frames of their own" grep -qE ';liblzma\.so\.5\+0x[0-9a-f]+;' xz.folded
	n=$(grep -oE 'liblzma\.so\.5\+0x[0-9a-f]+' xz.folded | sort -u | wc -l)
	say "xz: $n distinct liblzma frames"
	check "xz: one frame per function, not per address (< 80 distinct)" [ "$n" -lt 80 ]
	"$SP" run --no-summary -F 1000 -o xz1k.prof -- xz -T2 --block-size=2MiB -6 -c data.txt >prof1k.xz
	check "xz at 1 kHz: same exit status" [ $? -eq 0 ]
	check "xz at 1 kHz: same output" cmp -s plain.xz prof1k.xz
	check "xz at 1 kHz: >= 95% rooted" rooted_ok xz1k.prof
	check "xz at 1 kHz: its worker threads are sampled" [ "$(sampled_threads xz1k.prof.info 200)" -ge 2 ]
	say "xz at 1 kHz: $(grep '^timer:' xz1k.prof.info)"
else
	say "xz not installed: skipped"
fi

if command -v gzip >/dev/null; then
	gzip -9 -c data.txt >plain.gz
	"$SP" run --no-summary -o gz.prof -- gzip -9 -c data.txt >prof.gz
	check "gzip: same exit status" [ $? -eq 0 ]
	check "gzip: same output" cmp -s plain.gz prof.gz
	check "gzip: >= 95% rooted" rooted_ok gz.prof
	"$SP" run --no-summary -o gzbad.prof -- gzip -d -c data.txt >/dev/null 2>gzbad.err
	check "gzip: its failure status (1) passes through" [ $? -eq 1 ]
fi

if command -v sqlite3 >/dev/null; then
	q="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000)
	   SELECT sum(x % 7), count(*) FROM c;"
	sqlite3 :memory: "$q" >plain.sql
	"$SP" run --no-summary -o sql.prof -- sqlite3 :memory: "$q" >prof.sql
	check "sqlite3: same exit status" [ $? -eq 0 ]
	check "sqlite3: same output" cmp -s plain.sql prof.sql
	check "sqlite3: >= 95% rooted" rooted_ok sql.prof
	"$SP" collapse --frame func sql.prof >sql.folded
	check "sqlite3: the VDBE is named" grep -q 'sqlite3VdbeExec' sql.folded
	"$SP" run --no-summary -F 1000 -o sql1k.prof -- sqlite3 :memory: "$q" >prof1k.sql
	check "sqlite3 at 1 kHz: same exit status" [ $? -eq 0 ]
	check "sqlite3 at 1 kHz: same output" cmp -s plain.sql prof1k.sql
	check "sqlite3 at 1 kHz: >= 95% rooted" rooted_ok sql1k.prof
fi

if [ -x /usr/bin/python3.11d ]; then
	py='import hashlib
s = 0
for i in range(300000):
    s += len(hashlib.sha256(str(i).encode()).hexdigest())
print(s)'
	/usr/bin/python3.11d -c "$py" >plain.py
	"$SP" run --no-summary -o py.prof -- /usr/bin/python3.11d -c "$py" >prof.py
	check "python3.11d: same exit status" [ $? -eq 0 ]
	check "python3.11d: same output" cmp -s plain.py prof.py
	check "python3.11d: >= 95% rooted" rooted_ok py.prof
	"$SP" collapse py.prof >py.folded
	check "python3.11d: the eval loop by file:line" grep -qE '_PyEval_EvalFrameDefault_\(.*ceval\.c:[0-9]+\)' py.folded
else
	say "python3.11-dbg not installed: skipped"
fi

# The inlined frames of an -O3 build: Debian's python3.11 (LTO, PGO), whose
# debug info python3.11-dbg installs. Its eval loop is reached through
# inlined calls (pymain_run_command, _PyEval_Vector), so every sample of a
# pure-Python loop has some: a fixed shape, unlike the -Og python3.11d's few.
py=/usr/bin/python3.11
id=$(eu-readelf -n "$(readlink -f $py)" 2>/dev/null | awk '/Build ID/ {print $NF}')
if [ -x $py ] && [ -n "$id" ] && [ -f "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ]; then
	"$SP" run --no-summary -o o3.prof -- $py -c 'print(sum(i * i % 7 for i in range(12000000)))' >/dev/null
	"$SP" collapse --inline-mark --frame func o3.prof >o3.folded
	total=$(awk '{s += $NF} END {print s + 0}' o3.folded)
	inl=$(grep '_\[i\]' o3.folded | awk '{s += $NF} END {print s + 0}')
	say "python3.11 -O3: $inl of $total us of sampled CPU carry inlined frames"
	check "python3.11 -O3: inlined frames expanded (>= 90% of samples)" \
		[ "$total" -gt 0 -a $((inl * 10)) -ge $((total * 9)) ]
	check "python3.11 -O3: _PyEval_Vector, inlined into its caller, is marked" \
		grep -qE '(^|;)_PyEval_Vector_\[i\]' <("$SP" collapse --inline-mark --frame func \
		--python-plumbing o3.prof)
else
	say "python3.11 or its debug info (python3.11-dbg) not installed: skipped"
fi
finish
