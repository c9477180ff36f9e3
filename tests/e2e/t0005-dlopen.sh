#!/bin/bash
# A library dlopen()ed half way through the run (built without frame
# pointers): its frames are named from its own DWARF and unwind to main.
. "$(dirname "$0")/lib.sh"

"$SP" run --no-summary -o d.prof -- "$BIN/dlopen_main" "$BIN/libsp_plugin.so" >/dev/null
check "dlopen_main exits 0" [ $? -eq 0 ]
"$SP" collapse --frame func d.prof >d.folded
"$SP" info -m d.prof >info.txt
check "the plugin is recorded as a dlopen'ed module" grep -qE 'libsp_plugin.so \(dlopen\)' info.txt
check "plugin frames are named and unwind to main" \
	grep -qE '^_start;.*;main;plugin_work;plugin_inner [0-9]+$' d.folded
check "code before the dlopen is there too" grep -qE ';main;before_dlopen' d.folded
p=$(share d.folded 'plugin_work')
say "plugin share: $p%"
check "the plugin has more than half the time" awk -v p="$p" 'BEGIN { exit !(p > 50) }'
finish
