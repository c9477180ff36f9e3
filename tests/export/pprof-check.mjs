// pprof-check.mjs - decodes a stackprof pprof export with the npm package
// pprof-format (Datadog's pure-JS profile.proto decoder) and checks that
// every reference resolves. With --fixture it also checks the values of
// fixtures/base.prof: totals, labels, names and one full stack.
//
// usage: node pprof-check.mjs FILE NODE_PREFIX [--fixture]
// NODE_PREFIX is where `npm install --prefix` put pprof-format; exits 77
// (skip) when it is not there.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { check, finish, requireOrSkip } from './harness.mjs';

const [file, prefix, mode] = process.argv.slice(2);
const { Profile } = requireOrSkip(prefix, 'pprof-format');


const raw = readFileSync(file);
check(raw[0] === 0x1f && raw[1] === 0x8b, 'file is gzip-compressed');
const p = Profile.decode(gunzipSync(raw));
const S = p.stringTable.strings;
const str = (i) => S[Number(i)];
check(S[0] === '', 'string_table[0] is ""');
check(p.sampleType.length === 2, 'two sample types');
check(str(p.sampleType[0].type) === 'samples' && str(p.sampleType[0].unit) === 'count',
	'sample type 0 is samples/count');
check(str(p.sampleType[1].type) === 'cpu' && str(p.sampleType[1].unit) === 'nanoseconds',
	'sample type 1 is cpu/nanoseconds');
check(p.periodType && str(p.periodType.type) === 'cpu' && str(p.periodType.unit) === 'nanoseconds',
	'period type is cpu/nanoseconds');
check(str(p.defaultSampleType) === 'cpu', 'default sample type is cpu');

const fn = new Map(p.function.map((f) => [Number(f.id), f]));
const loc = new Map(p.location.map((l) => [Number(l.id), l]));
const map = new Map(p.mapping.map((m) => [Number(m.id), m]));
check(p.sample.length > 0, 'there are samples');
for (const f of p.function)
	check(Number(f.id) > 0 && str(f.name) !== undefined && str(f.filename) !== undefined,
		`function ${f.id} has a name and file`);
for (const l of p.location) {
	check(Number(l.id) > 0 && l.line.length > 0, `location ${l.id} has lines`);
	check(!Number(l.mappingId) || map.has(Number(l.mappingId)), `location ${l.id} mapping exists`);
	for (const ln of l.line)
		check(fn.has(Number(ln.functionId)), `location ${l.id} function ${ln.functionId} exists`);
}
let count = 0n, ns = 0n;
const stackNames = (s) => s.locationId.flatMap((id) =>
	loc.get(Number(id)).line.map((ln) => str(fn.get(Number(ln.functionId)).name)));
const labels = (s) => Object.fromEntries(s.label.map((l) =>
	[str(l.key), Number(l.str) ? str(l.str) : Number(l.num)]));
for (const s of p.sample) {
	check(s.value.length === 2, 'each sample has two values');
	count += BigInt(s.value[0]);
	ns += BigInt(s.value[1]);
	for (const id of s.locationId)
		check(loc.has(Number(id)), `sample location ${id} exists`);
	const lab = labels(s);
	check(typeof lab.thread === 'string' && typeof lab.thread_id === 'number',
		'sample has thread and thread_id labels');
}

if (mode === '--fixture') {
	check(count === 126n, `126 samples (got ${count})`);
	check(ns === 146005000n, `146005000 ns (got ${ns})`);
	check(Number(p.period) === 1000000, 'period is 1 ms (1000 Hz)');
	check(BigInt(p.timeNanos) === 1700000000000000000n, 'time_nanos is the start time');
	check(p.mapping.length === 1 && str(p.mapping[0].filename) === '/nonexistent/libfixture.so' &&
		str(p.mapping[0].buildId) === 'deadbeef01020304', 'the mapping and its build id');
	const names = new Set(p.function.map((f) => str(f.name)));
	for (const n of ['std::vector<int, std::allocator<int> >::push_back(int const&)',
		'batch norm; fused', 'relu\tinplace\nv2', 'model_inference', 'LINEAR PASS'])
		check(names.has(n), `function ${JSON.stringify(n)} is there`);
	const linear = p.sample.filter((s) => labels(s).range === 'LINEAR PASS');
	check(linear.length === 1, 'one sample group in LINEAR PASS');
	if (linear.length) {
		check(JSON.stringify(stackNames(linear[0])) === JSON.stringify([
			'gemm_kernel<float, 8>(float const*, float*)', 'conv2d_forward',
			'run_model(int)', 'main', '_start', 'LINEAR PASS', 'model_inference']),
			'LINEAR PASS stack, leaf first: ' + JSON.stringify(stackNames(linear[0])));
		check(Number(linear[0].value[0]) === 40, '40 samples in LINEAR PASS');
		check(labels(linear[0]).thread === 'resnet18' && labels(linear[0]).thread_id === 1000,
			'its thread labels');
	}
}
finish('pprof-check', `${p.sample.length} samples, ${p.location.length} locations, ` +
	`${p.function.length} functions`);
