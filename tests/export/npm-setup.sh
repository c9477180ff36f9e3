#!/bin/sh
# npm-setup.sh PREFIX - installs the npm packages the consumer tests decode
# with (pprof-format, ajv, jsdom) under PREFIX in the build tree. Never fails: a
# test that then finds its package missing skips (77) and says why.
PREFIX=$1
if ! command -v npm >/dev/null 2>&1; then
	echo "npm not found: the pprof and speedscope consumer tests will skip"
	exit 0
fi
if [ -d "$PREFIX/node_modules/pprof-format" ] && [ -d "$PREFIX/node_modules/ajv" ] &&
	[ -d "$PREFIX/node_modules/jsdom" ]; then
	echo "pprof-format, ajv and jsdom already installed in $PREFIX"
	exit 0
fi
mkdir -p "$PREFIX"
npm install --no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=60000 --prefix "$PREFIX" pprof-format@2 ajv@8 jsdom@24 ||
	echo "npm install failed: the pprof and speedscope consumer tests will skip"
exit 0
