#!/bin/bash
# gen-man.sh STACKPROF OUT - writes stackprof(1) from the CLI's own help
# texts (`stackprof --help` and `stackprof help CMD` for every command), so
# that the manual page can never disagree with --help. Run at build time.
set -eu
sp=$1
out=$2
version=$("$sp" --version | awk '{ print $2 }')
# roff escapes: a backslash, and a line starting with . or ' would be a request
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
cmds=$("$sp" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
tmp=$out.tmp
{
	printf '.TH STACKPROF 1 "" "stackprof %s" "User Commands"\n' "$version"
	printf '.SH NAME\nstackprof \\- a sampling CPU profiler for native and model-inference programs\n'
	printf '.SH SYNOPSIS\n.B stackprof\n.I command\n[\\fIoptions\\fR] [\\fIargs\\fR]\n'
	printf '.SH DESCRIPTION\n.nf\n'
	"$sp" --help | esc
	printf '.fi\n'
	for c in $cmds; do
		printf '.SH "STACKPROF %s"\n.nf\n' "$(printf '%s' "$c" | tr a-z A-Z)"
		"$sp" help "$c" | esc
		printf '.fi\n'
	done
	printf '.SH FILES\n.TP\n.I lib/stackprof/libstackprof.so\n'
	printf 'the sampler that \\fBstackprof run\\fR preloads (found next to the binary, or in ../lib/stackprof/)\n'
	printf '.TP\n.I lib/stackprof/python/stackprof\n'
	printf 'the Python package that \\fBstackprof run\\fR puts first on PYTHONPATH\n'
	printf '.TP\n.I include/stackprof.h\n, \\fIlib/libstackprof-api.so\\fR\n'
	printf 'the C API, and its no-op library for programs run without the sampler\n'
} >"$tmp"
[ -n "$cmds" ] || { echo "gen-man.sh: no commands in '$sp --help'" >&2; exit 1; }
mv "$tmp" "$out"
