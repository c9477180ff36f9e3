// chrome-check.mjs - parses a stackprof Chrome trace export and checks what
// Perfetto's and chrome://tracing's JSON importers need: a traceEvents
// array; every event with ph, pid, tid; process_name and thread_name
// metadata; complete ("X") events with numeric ts and dur >= 0; and, per
// thread, slices that nest (a slice that starts inside another ends inside
// it), since a trace viewer draws each thread as one stack of slices.
//
// usage: node chrome-check.mjs FILE [--fixture]
import { readFileSync } from 'node:fs';
import { check, finish } from './harness.mjs';

const [file, mode] = process.argv.slice(2);
const doc = JSON.parse(readFileSync(file, 'utf8'));
check(Array.isArray(doc.traceEvents), 'traceEvents is an array');
const ev = doc.traceEvents;
const byTid = new Map();
let meta = { process_name: 0, thread_name: 0 };
for (const e of ev) {
	check(typeof e.ph === 'string' && Number.isInteger(e.pid) && Number.isInteger(e.tid),
		'event has ph, pid, tid: ' + JSON.stringify(e));
	if (e.ph === 'M') {
		check(e.name in meta && typeof e.args.name === 'string', 'metadata event ' + e.name);
		meta[e.name]++;
	} else if (e.ph === 'X') {
		check(typeof e.name === 'string' && typeof e.ts === 'number' &&
			typeof e.dur === 'number' && e.dur >= 0, 'complete event: ' + JSON.stringify(e));
		if (!byTid.has(e.tid))
			byTid.set(e.tid, []);
		byTid.get(e.tid).push(e);
	} else {
		check(false, 'unexpected phase ' + e.ph);
	}
}
check(meta.process_name === 1, 'one process_name');
check(meta.thread_name === byTid.size, 'a thread_name per thread with slices');
const eps = 1e-6;
for (const [tid, list] of byTid) {
	list.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
	const open = [];
	for (const e of list) {
		while (open.length && open[open.length - 1].ts + open[open.length - 1].dur <= e.ts + eps)
			open.pop();
		if (open.length) {
			const p = open[open.length - 1];
			check(e.ts + e.dur <= p.ts + p.dur + eps,
				`tid ${tid}: ${e.name} at ${e.ts} overlaps ${p.name} without nesting`);
		}
		open.push(e);
	}
}
if (mode === '--fixture') {
	const main = byTid.get(1000) || [];
	const roots = main.filter((e) => e.name === '_start');
	const busy = roots.reduce((a, e) => a + e.dur, 0);
	check(Math.abs(busy - 123005) < 0.01, `_start covers 123.005 ms on tid 1000 (got ${busy} us)`);
	check(main.some((e) => e.name === 'LINEAR PASS' && e.cat === 'range'), 'ranges are slices');
}
finish('chrome-check', `${ev.length} events on ${byTid.size} threads`);
