#!/bin/bash
# `stackprof run` and Python programs:
# - `import stackprof` works in the program with no set-up: run puts the
#   package first on PYTHONPATH and keeps what was there after it;
# - an installed tree (bin/stackprof, bin/libstackprof.so, python/) uses its
#   own copy of the package, not the checkout's;
# - a profile with profile() windows: the summary says how many samples were
#   outside them, the views leave those out, and --all-samples (every
#   symbolizing command, and run's summary) keeps them.
. "$(dirname "$0")/lib.sh"
need_python
unset PYTHONPATH

cat >where.py <<'EOF'
import os
import stackprof
print("package", os.path.dirname(os.path.dirname(os.path.abspath(stackprof.__file__))))
print("pythonpath", os.environ.get("PYTHONPATH", ""))
print("marker", getattr(stackprof, "MARKER", "none"))
print("active", stackprof.active())
EOF

"$SP" run --no-summary -o /dev/null -- "$PY" where.py >where.txt 2>&1
rc=$?
cat where.txt
imported() { [ $rc -eq 0 ] && grep -qx "package $SP_SOURCE_DIR/python" where.txt; }
check "the program imports stackprof with no PYTHONPATH set" imported
check "and the package sees the preloaded sampler" grep -qx 'active True' where.txt

PYTHONPATH=/opt/elsewhere:/opt/more "$SP" run --no-summary -o /dev/null -- "$PY" where.py >where2.txt 2>&1
cat where2.txt
check "the package comes first, the user's PYTHONPATH after it" \
	grep -qx "pythonpath $SP_SOURCE_DIR/python:/opt/elsewhere:/opt/more" where2.txt

# an installed tree: bin/ with the CLI and the library, python/ next to it
mkdir -p inst/bin inst/python/stackprof
cp "$SP" "$BUILD/libstackprof.so" inst/bin/
cp "$SP_SOURCE_DIR"/python/stackprof/*.py inst/python/stackprof/
echo 'MARKER = "installed"' >>inst/python/stackprof/__init__.py
inst/bin/stackprof run --no-summary -o /dev/null -- "$PY" where.py >where3.txt 2>&1
cat where3.txt
installed() { grep -qx "package $TMP/inst/python" where3.txt && grep -qx 'marker installed' where3.txt; }
check "an installed tree imports its own package (<bindir>/../python)" installed

# windows: work before the block is sampled but left out of the views
cat >win.py <<'EOF'
import stackprof, time
def burn(s):
    t0 = time.thread_time()
    n = 0
    while time.thread_time() - t0 < s:
        n += sum(i * i for i in range(1000))
burn(0.6)
with stackprof.profile():
    burn(0.4)
EOF
"$SP" run -F 500 -o win.prof -- "$PY" win.py >win.txt 2>win.err
check "the windowed program ran" [ $? -eq 0 ]
cat win.err
total=$(awk '/samples, .* of CPU/ { print $2; exit }' win.err)
outside=$(awk '/were outside the program.s profile\(\) windows/ { print $2; exit }' win.err)
say "run summary: $outside of $total samples outside the window"
counted() { [ -n "$outside" ] && [ "$outside" -ge 200 ] && [ "$outside" -lt "$total" ]; }
check "the summary counts the samples outside the window (~300 of ~500)" counted
"$SP" top win.prof --row-limit 1 >in.txt
"$SP" top win.prof --row-limit 1 --all-samples >all.txt
"$SP" table win.prof --all-samples --row-limit 1 >all-table.txt
in=$(awk 'NR == 1 { print $(NF - 1) }' in.txt)
all=$(awk 'NR == 1 { print $(NF - 1) }' all.txt)
say "top: $in samples by default, $all with --all-samples"
check "the views show the window's samples only: total - outside" [ "$in" -eq $((total - outside)) ]
check "--all-samples keeps every sample" [ "$all" -eq "$total" ]
for cmd in collapse table flamegraph diff export; do
	"$SP" help $cmd | grep -q -- '--all-samples' || fail "$cmd --help has no --all-samples"
done
cpu=$(awk '/samples, .* of CPU/ { print $4; exit }' win.err)
check "table --all-samples: its footer is the whole run's CPU ($cpu)" \
	grep -qx "Self CPU time total: $cpu" all-table.txt
"$SP" run -F 500 --all-samples -o win2.prof -- "$PY" win.py >/dev/null 2>win2.err
check "run --all-samples: the summary's top covers every sample, no line about windows" \
	bash -c "! grep -q 'were outside' win2.err"
"$SP" run -F 200 -o plain.prof -- "$PY" -c 'sum(range(10**7))' >/dev/null 2>plain.err
check "without windows the summary says nothing about them" bash -c "! grep -q 'were outside' plain.err"
finish
