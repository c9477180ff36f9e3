// speedscope-check.mjs - validates a stackprof speedscope export against
// speedscope.schema.json with ajv, then checks what a schema cannot say:
// frame indexes in range, one weight per sample, weights adding up to
// endValue - startValue, and the unit. With --fixture, the totals of
// fixtures/base.prof (cpu: nanoseconds); with --events-user, those of
// fixtures/events.prof's user samples (counts: speedscope's unit "none").
//
// usage: node speedscope-check.mjs FILE SCHEMA NODE_PREFIX [--fixture|--events-user]
// Exits 77 (skip) when ajv is not installed under NODE_PREFIX.
import { readFileSync } from 'node:fs';
import { check, finish, requireOrSkip } from './harness.mjs';

const [file, schemaPath, prefix, mode] = process.argv.slice(2);
let Ajv = requireOrSkip(prefix, 'ajv');
Ajv = Ajv.default || Ajv;
const doc = JSON.parse(readFileSync(file, 'utf8'));
const validate = new Ajv({ allErrors: true }).compile(JSON.parse(readFileSync(schemaPath, 'utf8')));
if (!validate(doc))
	check(false, 'schema: ' + JSON.stringify(validate.errors.slice(0, 5)));
const nframes = doc.shared.frames.length;
let total = 0, samples = 0;
for (const prof of doc.profiles) {
	check(prof.samples.length === prof.weights.length, `${prof.name}: one weight per sample`);
	for (const s of prof.samples)
		for (const i of s)
			check(i < nframes, `${prof.name}: frame index ${i} < ${nframes}`);
	const sum = prof.weights.reduce((a, b) => a + b, 0);
	check(sum === prof.endValue - prof.startValue, `${prof.name}: weights add up to the span`);
	total += sum;
	samples += prof.samples.length;
}
const units = [...new Set(doc.profiles.map((p) => p.unit))].join('|');
if (mode === '--fixture') {
	check(units === 'nanoseconds', `cpu weights in nanoseconds (got ${units})`);
	check(total === 146005000, `146005000 ns in all (got ${total})`);
	check(doc.profiles.map((p) => p.name).join('|') === 'resnet18-1000|worker pool-1001|1002',
		'one profile per thread: ' + doc.profiles.map((p) => p.name).join('|'));
	const names = doc.shared.frames.map((f) => f.name);
	check(names.includes('batch norm; fused') && names.includes('LINEAR PASS'),
		'frame names kept verbatim');
}
if (mode === '--events-user') {
	check(units === 'none', `user weights are counts, unit none (got ${units})`);
	check(total === 7, `7 counts in all (got ${total})`);
	check(doc.profiles.map((p) => p.name).join('|') === 'resnet18-1000|worker pool-1001',
		'the two threads with user samples: ' + doc.profiles.map((p) => p.name).join('|'));
}
finish('speedscope-check', `${doc.profiles.length} profiles, ${nframes} frames, ` +
	`${samples} sample runs`);
