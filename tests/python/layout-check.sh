#!/bin/bash
# layout-check.sh BUILD_DIR - sampler/capture/pylayout.c's tables against the truth:
#  1. for every CPython 3.10-3.13 on this machine (pyenv's builds, Debian's
#     /usr/bin/python3.11 with python3.11-dbg, and its python3.11d), gdb reads each field's offset
#     and size from the interpreter's DWARF, and they must equal the compiled
#     table (tests/python/layout-dump); a field the table leaves at 0 must be
#     one that version does not have;
#  2. each interpreter is then run (layout-runtime.py with the layout-probe
#     library): 3.13's _Py_DebugOffsets, parsed by
#     sp_pylayout_from_debug_offsets(), must equal the table, older ones
#     must have no cookie; the table must walk the running thread's frames
#     to what Python itself reports, on the main thread, in a
#     threading.Thread, with the GIL held and released; and the thread state
#     must be reachable through autoTSSkey and glibc's specific_1stblock.
# A mismatch fails naming the version and the field. When an interpreter is
# missing, the others are still checked and the test then exits 77 naming it.
set -u
BUILD=${1:?usage: $0 BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
DUMP="$BUILD/tests/layout-dump"
PROBE="$BUILD/tests/libsp-layout-probe.so"
TMP=$(mktemp -d /tmp/stackprof-layout.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILED=0
MISSING=()

say() { printf '%s\n' "$*"; }
fail() { say "FAIL: $*"; FAILED=1; }

command -v gdb >/dev/null || { say "SKIP: gdb is not installed"; exit 77; }
[ -x "$DUMP" ] && [ -f "$PROBE" ] || { say "FAIL: build $DUMP and $PROBE first"; exit 1; }

# What gdb is asked, per minor version. "F" rows: table field, C type, member
# path (or "sizeof" for the type's size), the size the header promises for the
# field (0: not checked). "A" rows: a field the table leaves at 0 because the
# version has no such member; gdb must agree it has none.
spec() {
	cat <<'EOF'
10 F rt_size           struct pyruntimestate  sizeof                 0
10 F rt_tss_key        struct pyruntimestate  gilstate.autoTSSkey    8
10 F rt_interp_head    struct pyruntimestate  interpreters.head      8
10 F is_tstate_head    struct _is             tstate_head            8
10 F ts_next           struct _ts             next                   8
10 F ts_interp         struct _ts             interp                 8
10 F ts_frame          struct _ts             frame                  8
10 F ts_thread_id      struct _ts             thread_id              8
10 A ts_native_tid     struct _ts             native_thread_id
10 A ts_root_cframe    struct _ts             root_cframe.current_frame
10 F fr_code           struct _frame          f_code                 8
10 F fr_previous       struct _frame          f_back                 8
10 F fr_instr          struct _frame          f_lasti                4
10 A fr_owner          struct _frame          owner
10 A fr_is_entry       struct _frame          is_entry
10 F fr_localsplus     struct _frame          f_localsplus           8
10 F co_firstlineno    PyCodeObject           co_firstlineno         4
10 F co_filename       PyCodeObject           co_filename            8
10 F co_name           PyCodeObject           co_name                8
10 A co_qualname       PyCodeObject           co_qualname
10 F co_linetable      PyCodeObject           co_linetable           8
10 F co_code           PyCodeObject           co_code                8
10 A co_code_adaptive  PyCodeObject           co_code_adaptive
10 A co_firsttraceable PyCodeObject           _co_firsttraceable
11 F rt_size           struct pyruntimestate  sizeof                 0
11 F rt_tss_key        struct pyruntimestate  gilstate.autoTSSkey    8
11 F rt_interp_head    struct pyruntimestate  interpreters.head      8
11 F is_tstate_head    struct _is             threads.head           8
11 F ts_next           struct _ts             next                   8
11 F ts_interp         struct _ts             interp                 8
11 F ts_frame          struct _ts             cframe                 8
11 F ts_thread_id      struct _ts             thread_id              8
11 F ts_native_tid     struct _ts             native_thread_id       8
11 F ts_root_cframe    struct _ts             root_cframe            24
11 F cf_current_frame  struct _PyCFrame       current_frame          8
11 F cf_previous       struct _PyCFrame       previous               8
11 F fr_code           struct _PyInterpreterFrame f_code             8
11 F fr_previous       struct _PyInterpreterFrame previous           8
11 F fr_instr          struct _PyInterpreterFrame prev_instr         8
11 F fr_owner          struct _PyInterpreterFrame owner              1
11 F fr_is_entry       struct _PyInterpreterFrame is_entry           1
11 F fr_localsplus     struct _PyInterpreterFrame localsplus         8
11 F co_firstlineno    PyCodeObject           co_firstlineno         4
11 F co_filename       PyCodeObject           co_filename            8
11 F co_name           PyCodeObject           co_name                8
11 F co_qualname       PyCodeObject           co_qualname            8
11 F co_linetable      PyCodeObject           co_linetable           8
11 A co_code           PyCodeObject           co_code
11 F co_code_adaptive  PyCodeObject           co_code_adaptive       1
11 F co_nunits         PyCodeObject           ob_base.ob_size        8
11 F co_firsttraceable PyCodeObject           _co_firsttraceable     4
12 F rt_size           struct pyruntimestate  sizeof                 0
12 F rt_tss_key        struct pyruntimestate  autoTSSkey             8
12 F rt_interp_head    struct pyruntimestate  interpreters.head      8
12 F is_tstate_head    struct _is             threads.head           8
12 F ts_next           struct _ts             next                   8
12 F ts_interp         struct _ts             interp                 8
12 F ts_frame          struct _ts             cframe                 8
12 F ts_thread_id      struct _ts             thread_id              8
12 F ts_native_tid     struct _ts             native_thread_id       8
12 F ts_root_cframe    struct _ts             root_cframe            16
12 F cf_current_frame  struct _PyCFrame       current_frame          8
12 F cf_previous       struct _PyCFrame       previous               8
12 F fr_code           struct _PyInterpreterFrame f_code             8
12 F fr_previous       struct _PyInterpreterFrame previous           8
12 F fr_instr          struct _PyInterpreterFrame prev_instr         8
12 F fr_owner          struct _PyInterpreterFrame owner              1
12 A fr_is_entry       struct _PyInterpreterFrame is_entry
12 F fr_localsplus     struct _PyInterpreterFrame localsplus         8
12 F co_firstlineno    PyCodeObject           co_firstlineno         4
12 F co_filename       PyCodeObject           co_filename            8
12 F co_name           PyCodeObject           co_name                8
12 F co_qualname       PyCodeObject           co_qualname            8
12 F co_linetable      PyCodeObject           co_linetable           8
12 A co_code           PyCodeObject           co_code
12 F co_code_adaptive  PyCodeObject           co_code_adaptive       1
12 F co_nunits         PyCodeObject           ob_base.ob_size        8
12 F co_firsttraceable PyCodeObject           _co_firsttraceable     4
13 F rt_size           struct pyruntimestate  sizeof                 0
13 F rt_tss_key        struct pyruntimestate  autoTSSkey             8
13 F rt_interp_head    struct pyruntimestate  interpreters.head      8
13 F is_tstate_head    struct _is             threads.head           8
13 F ts_next           struct _ts             next                   8
13 F ts_interp         struct _ts             interp                 8
13 F ts_frame          struct _ts             current_frame          8
13 F ts_thread_id      struct _ts             thread_id              8
13 F ts_native_tid     struct _ts             native_thread_id       8
13 A ts_root_cframe    struct _ts             root_cframe
13 A cf_current_frame  struct _PyCFrame       current_frame
13 A cf_previous       struct _PyCFrame       previous
13 F fr_code           struct _PyInterpreterFrame f_executable       8
13 F fr_previous       struct _PyInterpreterFrame previous           8
13 F fr_instr          struct _PyInterpreterFrame instr_ptr          8
13 F fr_owner          struct _PyInterpreterFrame owner              1
13 A fr_is_entry       struct _PyInterpreterFrame is_entry
13 F fr_localsplus     struct _PyInterpreterFrame localsplus         8
13 F co_firstlineno    PyCodeObject           co_firstlineno         4
13 F co_filename       PyCodeObject           co_filename            8
13 F co_name           PyCodeObject           co_name                8
13 F co_qualname       PyCodeObject           co_qualname            8
13 F co_linetable      PyCodeObject           co_linetable           8
13 A co_code           PyCodeObject           co_code
13 F co_code_adaptive  PyCodeObject           co_code_adaptive       1
13 F co_nunits         PyCodeObject           ob_base.ob_size        8
13 F co_firsttraceable PyCodeObject           _co_firsttraceable     4
EOF
	# the same in every version
	for m in 10 11 12 13; do
		cat <<EOF
$m F ob_type           PyObject               ob_type                8
$m F str_length        PyASCIIObject          length                 8
$m F str_state         PyASCIIObject          state                  4
$m F str_ascii_data    PyASCIIObject          sizeof                 0
$m F str_compact_data  PyCompactUnicodeObject sizeof                 0
$m F bytes_size        PyBytesObject          ob_base.ob_size        8
$m F bytes_data        PyBytesObject          ob_sval                1
EOF
	done
	# what 3.10 lacks besides the A rows, and 3.11's co_code (only _co_code, a cache)
	for f in cf_current_frame cf_previous co_nunits; do
		echo "10 Z $f"
	done
	echo "11 Z co_code"
}

# gdb_ask MINOR: gdb commands printing "F field offset size" and
# "P field offset" (present although the table says absent) lines.
gdb_ask() {
	spec | awk -v m="$1" '$1 == m && $2 == "F" {
		# the type may be two words ("struct _ts")
		n = split($0, w, /[ \t]+/)
		if (w[4] == "struct") { t = w[4] " " w[5]; path = w[6] } else { t = w[4]; path = w[5] }
		if (path == "sizeof")
			printf "-ex\nprintf \"F %s %%d 0\\n\", (long)sizeof(%s)\n", $3, t
		else
			printf "-ex\nprintf \"F %s %%d %%d\\n\", (long)&((%s *)0)->%s, (long)sizeof(((%s *)0)->%s)\n", $3, t, path, t, path
	}
	$1 == m && $2 == "A" {
		n = split($0, w, /[ \t]+/)
		if (w[4] == "struct") { t = w[4] " " w[5]; path = w[6] } else { t = w[4]; path = w[5] }
		printf "-ex\nprintf \"P %s %%d\\n\", (long)&((%s *)0)->%s\n", $3, t, path
	}'
}

# sizes the header promises, by field, for this minor
promised() {
	spec | awk -v m="$1" '$1 == m && $2 == "F" { print $3, $NF }'
}

# check_dwarf LABEL MINOR FILE: gdb on FILE (an ELF with DWARF) against the table
check_dwarf() {
	local label=$1 m=$2 file=$3 out="$TMP/gdb.$1"
	local -a args=()
	mapfile -t args < <(gdb_ask "$m")
	# the frame owners and the str state bits, straight from the types
	args+=(-ex 'printf "C SP_PY_OWNED_BY_THREAD %d\n", (int)FRAME_OWNED_BY_THREAD')
	args+=(-ex 'printf "C SP_PY_OWNED_BY_GENERATOR %d\n", (int)FRAME_OWNED_BY_GENERATOR')
	args+=(-ex 'printf "C SP_PY_OWNED_BY_CSTACK %d\n", (int)FRAME_OWNED_BY_CSTACK')
	args+=(-ex 'ptype/o PyASCIIObject')
	gdb -batch -nx "${args[@]}" "$file" >"$out" 2>"$out.err"
	"$DUMP" "$m" >"$TMP/table.$m" || {
		fail "$label: no compiled table for 3.$m"
		return
	}
	local bad=0
	# every F row must print, and equal the table
	while read -r field size; do
		local got want gsize
		got=$(awk -v f="$field" '$1 == "F" && $2 == f { print $3 }' "$out")
		gsize=$(awk -v f="$field" '$1 == "F" && $2 == f { print $4 }' "$out")
		want=$(awk -v f="$field" -v v="3.$m" '$1 == v && $2 == f { print $3 }' "$TMP/table.$m")
		if [ -z "$got" ]; then
			fail "$label: gdb could not read 3.$m's $field: $(head -c 300 "$out.err")"
			bad=1
		elif [ "$got" != "$want" ]; then
			fail "$label: 3.$m $field: the DWARF says $got, the table says ${want:-nothing}"
			bad=1
		elif [ "$size" != 0 ] && [ "$gsize" != "$size" ]; then
			fail "$label: 3.$m $field is $gsize bytes wide in the DWARF, the header reads $size"
			bad=1
		fi
	done < <(promised "$m")
	# every A row must fail in gdb, and be 0 in the table; Z rows just 0
	while read -r field; do
		if awk -v f="$field" '$1 == "P" && $2 == f { found = 1 } END { exit !found }' "$out"; then
			fail "$label: 3.$m has $field (the DWARF has the member), the table leaves it at 0"
			bad=1
		fi
	done < <(spec | awk -v m="$m" '$1 == m && $2 == "A" { print $3 }')
	while read -r field; do
		local want
		want=$(awk -v f="$field" -v v="3.$m" '$1 == v && $2 == f { print $3 }' "$TMP/table.$m")
		if [ "$want" != 0 ]; then
			fail "$label: 3.$m has no $field, yet the table says $want"
			bad=1
		fi
	done < <(spec | awk -v m="$m" '$1 == m && ($2 == "A" || $2 == "Z") { print $3 }')
	# the table lists nothing the spec does not check
	local unchecked
	unchecked=$(awk -v v="3.$m" '$1 == v && $2 != "kind" { print $2 }' "$TMP/table.$m" |
		grep -vxF -f <(spec | awk -v m="$m" '$1 == m { print $3 }'))
	if [ -n "$unchecked" ]; then
		fail "$label: 3.$m fields no gdb row checks: $unchecked"
		bad=1
	fi
	if ! grep -qx "3.$m kind $m" "$TMP/table.$m"; then
		fail "$label: 3.$m's frame kind is not SP_PYFRAMES_3$m"
		bad=1
	fi
	# constants: the frame owners the version has
	local c
	for c in SP_PY_OWNED_BY_THREAD SP_PY_OWNED_BY_GENERATOR SP_PY_OWNED_BY_CSTACK; do
		local g h
		g=$(awk -v c="$c" '$1 == "C" && $2 == c { print $3 }' "$out")
		h=$(awk -v c="$c" '$1 == "const" && $2 == c { print $3 }' "$TMP/table.$m")
		[ -z "$g" ] && continue # 3.10 has no owners, 3.11 no CSTACK
		if [ "$g" != "$h" ]; then
			fail "$label: 3.$m $c is $g in the DWARF, the header says $h"
			bad=1
		fi
	done
	if [ "$m" -ge 12 ] && ! grep -q '^C SP_PY_OWNED_BY_CSTACK' "$out"; then
		fail "$label: 3.$m: gdb does not know FRAME_OWNED_BY_CSTACK"
		bad=1
	fi
	# str state bits: "/*     32: 2   |       4 */ unsigned int kind : 3;"
	local bits
	bits=$(awk '/unsigned int (kind|compact|ascii) :/ {
		split($0, a, /[:|]/); gsub(/[^0-9]/, "", a[2]); name = $0
		sub(/.*unsigned int /, "", name); sub(/ :.*/, "", name); printf "%s=%d ", name, a[2] }' "$out")
	local want_bits
	want_bits="kind=$(awk '$2 == "SP_PYSTR_KIND_SHIFT" { print $3 }' "$TMP/table.$m") "
	want_bits+="compact=$(awk '$2 == "SP_PYSTR_COMPACT" { print log($3) / log(2) }' "$TMP/table.$m") "
	want_bits+="ascii=$(awk '$2 == "SP_PYSTR_ASCII" { print log($3) / log(2) }' "$TMP/table.$m") "
	if [ "$bits" != "$want_bits" ]; then
		fail "$label: 3.$m str state bits are '$bits' in the DWARF, the header says '$want_bits'"
		bad=1
	fi
	# the size of the exported _PyRuntime symbol: how a reader can tell, with
	# no DWARF at hand, that a build has the runtime this table describes
	local symsize want_size
	symsize=$(readelf -W --dyn-syms "$file" 2>/dev/null | awk '$8 == "_PyRuntime" { print $3; exit }')
	want_size=$(awk -v v="3.$m" '$1 == v && $2 == "rt_size" { print $3 }' "$TMP/table.$m")
	if [ -z "$symsize" ]; then
		fail "$label: no _PyRuntime in the dynamic symbols of $file"
		bad=1
	elif [ "$((symsize))" != "$want_size" ]; then
		fail "$label: _PyRuntime's st_size is $((symsize)), the table's rt_size $want_size"
		bad=1
	fi
	[ $bad -eq 0 ] && say "ok: $label: the DWARF agrees with the 3.$m table ($(promised "$m" | wc -l) offsets)"
}

# check_runtime LABEL PYTHON: run the interpreter with the probe library
check_runtime() {
	local label=$1 py=$2
	if "$py" "$HERE/layout-runtime.py" "$PROBE" "$DUMP" >"$TMP/rt.$label" 2>&1; then
		sed "s/^/  $label: /" "$TMP/rt.$label"
		say "ok: $label: the running interpreter agrees with the table"
	else
		sed "s/^/  $label: /" "$TMP/rt.$label"
		fail "$label: at run time (above)"
	fi
}

PYENV_ROOT=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}
for m in 10 11 12 13; do
	# the newest 3.m.N pyenv has, not a free-threaded "t" build
	dir=$(ls -d "$PYENV_ROOT"/versions/3."$m".* 2>/dev/null | grep -E "/3\.$m\.[0-9]+$" | sort -V | tail -n 1)
	lib="$dir/lib/libpython3.$m.so.1.0"
	if [ -z "$dir" ] || [ ! -x "$dir/bin/python3.$m" ] || [ ! -f "$lib" ]; then
		MISSING+=("pyenv 3.$m")
		continue
	fi
	v=$(basename "$dir")
	check_dwarf "pyenv-$v" "$m" "$lib"
	check_runtime "pyenv-$v" "$dir/bin/python3.$m"
done

DEB=/usr/bin/python3.11
if [ ! -x "$DEB" ]; then
	MISSING+=("Debian python3.11")
elif ! gdb -batch -nx -ex 'ptype struct _ts' "$DEB" >/dev/null 2>&1; then
	MISSING+=("python3.11-dbg (the DWARF of Debian's python3.11)")
else
	v=$("$DEB" -c 'import platform; print(platform.python_version())')
	check_dwarf "debian-$v" 11 "$DEB"
	check_runtime "debian-$v" "$DEB"
fi
# python3.11-dbg's Py_DEBUG build has the same layout for every field here:
# checked when it is installed, not missed when it is not
DEBD=/usr/bin/python3.11d
if [ -x "$DEBD" ] && gdb -batch -nx -ex 'ptype struct _ts' "$DEBD" >/dev/null 2>&1; then
	check_dwarf "debian-3.11d" 11 "$DEBD"
	check_runtime "debian-3.11d" "$DEBD"
fi

if [ $FAILED -ne 0 ]; then
	say "some checks failed"
	exit 1
fi
if [ ${#MISSING[@]} -gt 0 ]; then
	say "SKIP: not on this machine: ${MISSING[*]} (the others passed)"
	exit 77
fi
say "all checks passed"
exit 0
