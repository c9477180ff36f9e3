// harness.mjs - what the consumer checks share: loading the consumer
// library from the test prefix (or skipping, exit 77, when it is not
// installed there), counting failed checks, and the last line and status.
import { createRequire } from 'node:module';

// Only the package installed under the prefix counts: node would otherwise
// find a distribution's copy (Debian's npm pulls in ajv 6) and test the
// wrong library.
export function requireFromPrefix(prefix, name) {
	const req = createRequire(prefix + '/package.json');
	const path = req.resolve(name);
	if (!path.startsWith(prefix + '/node_modules/')) {
		const e = new Error(`${name} resolves to ${path}, outside ${prefix}`);
		e.code = 'MODULE_NOT_FOUND';
		throw e;
	}
	return req(name);
}

// requireFromPrefix, or SKIP (exit 77, CTest's skip code) saying why.
export function requireOrSkip(prefix, name) {
	try {
		return requireFromPrefix(prefix, name);
	} catch (e) {
		console.log(`SKIP: ${name} is not installed under ${prefix} (${e.code || e.message})`);
		process.exit(77);
	}
}

let failures = 0;

export function check(cond, what) {
	if (!cond) {
		console.error('FAIL: ' + what);
		failures++;
	}
}

// Prints "NAME: SUMMARY: ok|FAILED" and exits 0 or 1.
export function finish(name, summary) {
	console.log(`${name}: ${summary}: ${failures ? 'FAILED' : 'ok'}`);
	process.exit(failures ? 1 : 0);
}
