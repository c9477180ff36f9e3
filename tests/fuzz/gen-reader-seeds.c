/*
 * gen-reader-seeds.c - writes the seed inputs of fuzz-reader with the
 * writer API the sampler uses: small valid profiles of every record type,
 * the same cut short and bit-flipped, and each one's plain record stream
 * in the harness' "mode byte + records" form (see fuzz-reader.c).
 *
 *   gen-reader-seeds DIR
 *
 * Run once by hand when the format changes (docs/FUZZING.md); the output
 * is committed under tests/fuzz/corpus/reader/.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "format/profile.h"

static const char *outdir;

static void die(const char *what)
{
	fprintf(stderr, "gen-reader-seeds: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void ok(int rc, const char *what)
{
	if (rc) {
		errno = -rc;
		die(what);
	}
}

static void put(const char *name, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f))
		die(path);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path);
	size_t cap = 1 << 16, n = 0;
	uint8_t *p = malloc(cap);
	size_t got;
	while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			p = realloc(p, cap *= 2);
	}
	if (!p)
		die("malloc");
	fclose(f);
	*len = n;
	return p;
}

/* The zlib stream behind the magic, inflated as far as it goes. */
static uint8_t *records_of(const uint8_t *file, size_t len, size_t *out_len)
{
	size_t cap = 1 << 16;
	uint8_t *out = malloc(cap);
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (!out || inflateInit(&z) != Z_OK)
		die("inflate");
	z.next_in = (Bytef *)file + SP_PROFILE_MAGIC_LEN;
	z.avail_in = (uInt)(len - SP_PROFILE_MAGIC_LEN);
	for (;;) {
		z.next_out = out + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		int rc = inflate(&z, Z_SYNC_FLUSH);
		if (rc == Z_STREAM_END || (rc != Z_OK && rc != Z_BUF_ERROR))
			break;
		if (z.avail_out)
			break;
		out = realloc(out, cap *= 2);
		if (!out)
			die("realloc");
	}
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

struct w {
	int fd;
	struct sp_prof_writer *w;
	char tmp[4096];
};

static void begin(struct w *w, const char *exe)
{
	snprintf(w->tmp, sizeof(w->tmp), "%s/.tmp.prof", outdir);
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (w->fd < 0)
		die(w->tmp);
	w->w = sp_prof_writer_new(w->fd);
	if (!w->w)
		die("sp_prof_writer_new");
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION,
	    .pid = 1234,
	    .ppid = 1,
	    .start_realtime_ns = 1700000000000000000ull,
	    .start_mono_ns = 5000000000ull,
	    .freq_hz = 997,
	    .max_depth = 128,
	    .timer = (char *)"posix-cputimer",
	    .cmdline = (char *)"./seed --n 3",
	    .exe = (char *)exe,
	    .hostname = (char *)"fuzz",
	};
	ok(sp_prof_writer_header(w->w, &h), "header");
}

/* Emits NAME (the file) and NAME.rec (mode byte + records), then cut and flipped copies. */
static void finish(struct w *w, const char *name, int close_it, int variants)
{
	if (close_it)
		ok(sp_prof_writer_close(w->w), "close");
	else
		sp_prof_writer_abandon(w->w);
	close(w->fd);
	size_t len;
	uint8_t *file = slurp(w->tmp, &len);
	unlink(w->tmp);
	char n[256];
	snprintf(n, sizeof(n), "%s.prof", name);
	put(n, file, len);

	size_t rlen;
	uint8_t *rec = records_of(file, len, &rlen);
	uint8_t *moded = malloc(rlen + 1);
	if (!moded)
		die("malloc");
	moded[0] = close_it ? 0x3 : 0x1; /* fix CRCs; end the stream if closed */
	memcpy(moded + 1, rec, rlen);
	snprintf(n, sizeof(n), "%s.rec", name);
	put(n, moded, rlen + 1);

	if (variants) {
		/* cut: just after the magic, mid-stream, one byte short (a cut
		 * inside the magic is short-magic.asis) */
		size_t cuts[] = {SP_PROFILE_MAGIC_LEN + 3, len / 2, len - 1};
		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			snprintf(n, sizeof(n), "%s-cut%zu.prof", name, cuts[i]);
			put(n, file, cuts[i]);
		}
		/* a flipped bit in the compressed data, early and late */
		size_t flips[] = {SP_PROFILE_MAGIC_LEN + 6, len * 3 / 4};
		for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
			file[flips[i]] ^= 0x10;
			snprintf(n, sizeof(n), "%s-flip%zu.prof", name, flips[i]);
			put(n, file, len);
			file[flips[i]] ^= 0x10;
		}
		/* a bad checkpoint in the plain stream: CRCs kept as they are */
		moded[0] = 0x2;
		snprintf(n, sizeof(n), "%s-nofix.rec", name);
		put(n, moded, rlen + 1);
	}
	free(moded);
	free(rec);
	free(file);
}

static void modules(struct w *w)
{
	static const uint8_t image[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	struct sp_prof_module m = {
	    .id = 1,
	    .flags = SP_MOD_MAIN,
	    .start = 0x400000,
	    .end = 0x401000,
	    .bias = 0,
	    .path = (char *)"/usr/bin/seed",
	    .build_id = {0xde, 0xad, 0xbe, 0xef, 1,  2,	 3,  4,	 5,  6,
			 7,    8,    9,	   10,	 11, 12, 13, 14, 15, 16},
	    .build_id_len = 20,
	};
	ok(sp_prof_writer_module(w->w, &m), "module");
	struct sp_prof_module v = {
	    .id = 2,
	    .flags = SP_MOD_VDSO,
	    .start = 0x7fff0000,
	    .end = 0x7fff2000,
	    .bias = 0x7fff0000,
	    .path = (char *)"[vdso]",
	    .image = (uint8_t *)image,
	    .image_len = sizeof(image),
	};
	ok(sp_prof_writer_module(w->w, &v), "vdso");
	struct sp_prof_module d = {
	    .id = 3,
	    .flags = SP_MOD_DLOPEN,
	    .start = 0x7f0000000000,
	    .end = 0x7f0000010000,
	    .bias = 0x7f0000000000,
	    .time_ns = 1000,
	    .path = (char *)"/tmp/libplugin.so",
	};
	ok(sp_prof_writer_module(w->w, &d), "dlopen");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-reader-seeds DIR\n");
		return 2;
	}
	outdir = argv[1];
	mkdir(outdir, 0755);
	struct w w;

	/* the smallest complete profile: a header */
	begin(&w, "/bin/true");
	finish(&w, "header-only", 1, 0);

	/* every record type, one flush */
	begin(&w, "/usr/bin/seed");
	modules(&w);
	struct sp_prof_thread t1 = {.tid = 1234, .time_ns = 0, .name = (char *)"main"};
	struct sp_prof_thread t2 = {.tid = 1235, .time_ns = 10, .name = (char *)"worker 1"};
	struct sp_prof_thread t3 = {.tid = 1234, .time_ns = 20, .name = (char *)"renamed"};
	ok(sp_prof_writer_thread(w.w, &t1), "thread");
	ok(sp_prof_writer_thread(w.w, &t2), "thread");
	ok(sp_prof_writer_thread(w.w, &t3), "thread");
	struct sp_prof_range r1 = {.id = 1, .parent = 0, .name = (char *)"model_inference"};
	struct sp_prof_range r2 = {.id = 2, .parent = 1, .name = (char *)"LINEAR PASS"};
	struct sp_prof_range r3 = {.id = 3, .parent = 2, .name = (char *)"gemm"};
	ok(sp_prof_writer_range(w.w, &r1), "range");
	ok(sp_prof_writer_range(w.w, &r2), "range");
	ok(sp_prof_writer_range(w.w, &r3), "range");
	struct sp_prof_range r4 = {
	    .id = 4, .parent = 1, .name = (char *)"conv1", .flags = SP_RANGE_MODULE};
	ok(sp_prof_writer_range(w.w, &r4), "range");
	/* two windows, the second left open; sample i is at i ms */
	const struct sp_prof_mark marks[] = {{SP_MARK_WINDOW_BEGIN, 500000},
					     {SP_MARK_WINDOW_END, 2500000},
					     {SP_MARK_WINDOW_BEGIN, 4000000}};
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		ok(sp_prof_writer_mark(w.w, &marks[i]), "mark");
	uint64_t pcs1[] = {0x400123, 0x400456, 0x400010};
	uint64_t pcs2[] = {0x7fff0100, 0x400789, 0x400456, 0x400010};
	uint64_t pcs3[] = {0x7f0000001000, 0x10, 0xffffffffffffff00ull}; /* big negative deltas */
	struct sp_prof_stack s1 = {.id = 1, .depth = 3, .pcs = pcs1};
	struct sp_prof_stack s2 = {.id = 2, .flags = SP_STACK_TRUNCATED, .depth = 4, .pcs = pcs2};
	struct sp_prof_stack s3 = {.id = 3, .flags = SP_STACK_UNWIND_ERR, .depth = 3, .pcs = pcs3};
	struct sp_prof_stack s4 = {.id = 4, .depth = 0, .pcs = pcs1};
	ok(sp_prof_writer_stack(w.w, &s1), "stack");
	ok(sp_prof_writer_stack(w.w, &s2), "stack");
	ok(sp_prof_writer_stack(w.w, &s3), "stack");
	ok(sp_prof_writer_stack(w.w, &s4), "stack");
	for (int i = 0; i < 6; i++) {
		struct sp_prof_sample s = {.tid = i & 1 ? 1235 : 1234,
					   .stack = (uint32_t)(i % 4) + 1,
					   .range = (uint32_t)(i % 5),
					   .time_ns = 1000000ull * (uint64_t)i,
					   .weight_ns = 1003009};
		ok(sp_prof_writer_sample(w.w, &s), "sample");
	}
	struct sp_prof_jit j = {.start = 0x10000, .size = 0x100, .name = (char *)"jit_kernel<8>"};
	ok(sp_prof_writer_jit(w.w, &j), "jit");
	ok(sp_prof_writer_unload(w.w, 3, 5000000), "unload");
	struct sp_prof_stats st = {.flags = SP_STATS_FINAL,
				   .time_ns = 6000000,
				   .samples = 6,
				   .drops = 1,
				   .unwind_errors = 1,
				   .truncated = 1,
				   .skipped = 2,
				   .weight_ns = 6018054,
				   .signals = 7,
				   .overruns = 1,
				   .timer = (char *)"posix-cputimer"};
	ok(sp_prof_writer_stats(w.w, &st), "stats");
	finish(&w, "all-records", 1, 1);

	/* several flushes: a reader of a killed program keeps the first blocks */
	begin(&w, "/usr/bin/seed");
	modules(&w);
	uint32_t next = 1;
	for (int blk = 0; blk < 3; blk++) {
		struct sp_prof_thread t = {.tid = 100 + blk, .name = (char *)"t"};
		ok(sp_prof_writer_thread(w.w, &t), "thread");
		uint64_t pcs[2] = {0x400100 + (uint64_t)blk, 0x400200};
		struct sp_prof_stack s = {.id = next, .depth = 2, .pcs = pcs};
		ok(sp_prof_writer_stack(w.w, &s), "stack");
		struct sp_prof_sample smp = {.tid = 100 + blk, .stack = next, .weight_ns = 1000};
		ok(sp_prof_writer_sample(w.w, &smp), "sample");
		next++;
		struct sp_prof_stats stb = {.samples = (uint64_t)blk + 1,
					    .timer = (char *)"itimer-prof"};
		ok(sp_prof_writer_stats(w.w, &stb), "stats");
		ok(sp_prof_writer_flush(w.w), "flush");
	}
	finish(&w, "three-flushes", 1, 1);

	/* version 2: stacks made from another's outer frames, samples in
	 * batches (two threads, one sleeping between samples) */
	begin(&w, "/usr/bin/seed");
	modules(&w);
	uint64_t d1[] = {0x400123, 0x400456, 0x400789, 0x400010};
	uint64_t d2[] = {0x7fff0100, 0x400456, 0x400789, 0x400010};
	uint64_t d3[] = {0x400aaa, 0x7fff0100, 0x400456, 0x400789, 0x400010};
	struct sp_prof_stack ds1 = {.id = 1, .depth = 4, .pcs = d1};
	struct sp_prof_stack ds2 = {.id = 2, .flags = SP_STACK_JIT_SCAN, .depth = 4, .pcs = d2};
	struct sp_prof_stack ds3 = {.id = 3, .depth = 5, .pcs = d3};
	ok(sp_prof_writer_stack(w.w, &ds1), "stack");
	ok(sp_prof_writer_stack_diff(w.w, &ds2, 1, 3), "stack_diff");
	ok(sp_prof_writer_stack_diff(w.w, &ds3, 2, 4), "stack_diff");
	struct sp_prof_sample b1[5], b2[3];
	for (int i = 0; i < 5; i++)
		b1[i] = (struct sp_prof_sample){.stack = (uint32_t)(i % 3) + 1,
						.time_ns = 1003000ull * (uint64_t)i,
						.weight_ns = 1000000 + (uint64_t)i * 1500};
	for (int i = 0; i < 3; i++)
		b2[i] = (struct sp_prof_sample){.stack = 3 - (uint32_t)i,
						.time_ns = 40000000ull * (uint64_t)i,
						.weight_ns = 990000};
	ok(sp_prof_writer_samples(w.w, 1234, 1000000, b1, 5), "samples");
	ok(sp_prof_writer_samples(w.w, 1235, 1000000, b2, 3), "samples");
	struct sp_prof_stats sv = {.samples = 8, .timer = (char *)"perf-sigtrap"};
	ok(sp_prof_writer_stats(w.w, &sv), "stats");
	finish(&w, "v2-records", 1, 1);

	/* version 3: event kinds. cpu samples (SAMPLES) and runs of other
	 * kinds (EVENT_SAMPLES): built-in ones, whose EVENT records the writer
	 * adds (wall: timed with a payload; alloc, user: payload), and one
	 * declared by hand, as a later source would, with no payload */
	begin(&w, "/usr/bin/seed");
	modules(&w);
	struct sp_prof_event gpu = {
	    .id = 9, .flags = SP_EVENT_TIMED, .name = (char *)"gpu", .unit = (char *)"ns"};
	ok(sp_prof_writer_event(w.w, &gpu), "event");
	uint64_t e1[] = {0x400123, 0x400456, 0x400010};
	uint64_t e2[] = {0x400789, 0x400010};
	struct sp_prof_stack es1 = {.id = 1, .depth = 3, .pcs = e1};
	struct sp_prof_stack es2 = {.id = 2, .depth = 2, .pcs = e2};
	ok(sp_prof_writer_stack(w.w, &es1), "stack");
	ok(sp_prof_writer_stack(w.w, &es2), "stack");
	static const uint32_t kinds[] = {SP_EVENT_CPU,
					 SP_EVENT_WALL,
					 SP_EVENT_WALL,
					 SP_EVENT_ALLOC,
					 SP_EVENT_FREE,
					 SP_EVENT_USER,
					 9,
					 SP_EVENT_CPU};
	struct sp_prof_sample ev[8];
	for (int i = 0; i < 8; i++)
		ev[i] = (struct sp_prof_sample){
		    .event = kinds[i],
		    .stack = (uint32_t)(i % 2) + 1,
		    .range = 0,
		    .time_ns = 2000000ull * (uint64_t)(i + 1),
		    .weight_ns = kinds[i] == SP_EVENT_ALLOC || kinds[i] == SP_EVENT_FREE ? 4096
				 : kinds[i] == SP_EVENT_USER				 ? 3
											 : 1000000,
		    .payload = kinds[i] == SP_EVENT_WALL ? 1 : 0x7f0000001000ull + (uint64_t)i};
	ok(sp_prof_writer_samples(w.w, 1234, 1000000, ev, 8), "samples");
	ok(sp_prof_writer_samples(w.w, 1235, 0, ev + 3, 2), "samples");
	struct sp_prof_stats sx = {
	    .flags = SP_STATS_FINAL, .samples = 10, .timer = (char *)"posix-cputimer"};
	ok(sp_prof_writer_stats(w.w, &sx), "stats");
	finish(&w, "v3-events", 1, 1);

	/* a few bytes each that copy a deep stack again and again: refused
	 * once they copy more frames than the file's size can hold */
	begin(&w, "/usr/bin/seed");
	{
		static uint64_t deep[4096];
		for (size_t i = 0; i < 4096; i++)
			deep[i] = 0x400000 + i * 4;
		struct sp_prof_stack sb = {.id = 1, .depth = 4096, .pcs = deep};
		ok(sp_prof_writer_stack(w.w, &sb), "stack");
		for (uint32_t i = 2; i < 402; i++) {
			struct sp_prof_stack sd = {.id = i, .depth = 4096, .pcs = deep};
			ok(sp_prof_writer_stack_diff(w.w, &sd, i - 1, 4096), "stack_diff");
		}
	}
	finish(&w, "v2-diff-bomb", 1, 0);

	/* killed: flushed twice, never closed */
	begin(&w, "/usr/bin/seed");
	struct sp_prof_thread tk = {.tid = 7, .name = (char *)"killed"};
	ok(sp_prof_writer_thread(w.w, &tk), "thread");
	ok(sp_prof_writer_flush(w.w), "flush");
	uint64_t pk[1] = {0x1234};
	struct sp_prof_stack sk = {.id = 1, .depth = 1, .pcs = pk};
	ok(sp_prof_writer_stack(w.w, &sk), "stack");
	ok(sp_prof_writer_flush(w.w), "flush");
	finish(&w, "killed", 0, 0);

	/* exec: the last flush carries an EXEC stats record, no zlib end */
	begin(&w, "/usr/bin/seed");
	struct sp_prof_stats se = {
	    .flags = SP_STATS_EXEC, .samples = 0, .timer = (char *)"perf-task-clock"};
	ok(sp_prof_writer_stats(w.w, &se), "stats");
	ok(sp_prof_writer_flush(w.w), "flush");
	finish(&w, "exec", 0, 0);

	/* a newer minor revision: an unknown record type is skipped */
	{
		static const uint8_t rec[] = {
		    0x3,				      /* mode: fix CRCs, end the stream */
		    1,	 11, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* header, version 1, empty strings */
		    42,	 3,  1, 2, 3,			      /* type 42, 3 bytes */
		    9,	 0, /* checkpoint, filled in by the harness */
		};
		put("unknown-type.rec", rec, sizeof(rec));
	}

	/* not profiles at all */
	put("magic-only.prof", SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN);
	put("empty.prof", "", 0);
	/* mode 0x80: the file as it is, without the magic */
	put("junk.asis", "\x80junk", 5);
	put("short-magic.asis", "\x80STKPR", 6);
	return 0;
}
