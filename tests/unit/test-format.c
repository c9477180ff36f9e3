/*
 * test-format.c - the raw profile: round trip of every record type, windows
 * made from marks, a cut
 * at every byte (never a crash; records up to the last flush kept), a
 * flush that does not end on a checkpoint (damage, never a cut), bit
 * flips (caught, never a crash), junk and empty files, and the writer's
 * batching: many small records and one larger than its buffer, in order,
 * and everything before a flush readable from the file at that moment; a
 * record that cannot be allocated ends the stream at the last flush;
 * version 2's STACK_DIFF and SAMPLES records, and the versions read;
 * version 3's event kinds: samples of several kinds with their payloads,
 * a kind the file declares by name, and their bad forms refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "format/profile.h"
#include "tests/unit/check.h"

static char dir[] = "/tmp/test-format-XXXXXX";

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		perror(path);
	close(fd);
}

static unsigned char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = malloc(1 << 20);
	*n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* Writes a profile with two flushes: 3 samples in the first block, 2 in the second. */
static void make_profile(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct sp_prof_writer *w = sp_prof_writer_new(fd);
	struct sp_prof_header h = {.version = SP_PROFILE_VERSION,
				   .pid = 42,
				   .ppid = 1,
				   .freq_hz = 100,
				   .max_depth = 512,
				   .timer = "posix-cputimer",
				   .cmdline = "prog --arg",
				   .exe = "/bin/prog",
				   .hostname = "host"};
	CHECK(sp_prof_writer_header(w, &h) == 0);
	struct sp_prof_module m = {.id = 1,
				   .flags = SP_MOD_MAIN,
				   .start = 0x400000,
				   .end = 0x500000,
				   .bias = 0,
				   .path = "/bin/prog",
				   .build_id = {0xde, 0xad, 0xbe, 0xef},
				   .build_id_len = 4};
	CHECK(sp_prof_writer_module(w, &m) == 0);
	struct sp_prof_thread t = {.tid = 42, .name = "main"};
	CHECK(sp_prof_writer_thread(w, &t) == 0);
	struct sp_prof_range r = {.id = 1, .parent = 0, .name = "LINEAR PASS"};
	CHECK(sp_prof_writer_range(w, &r) == 0);
	struct sp_prof_range r2 = {.id = 2,
				   .parent = 1,
				   .name = "conv1",
				   .cls = "Conv2d",
				   .flags = SP_RANGE_MODULE,
				   .anchor = SP_ANCHOR_MAKE(7, true)};
	CHECK(sp_prof_writer_range(w, &r2) == 0);
	struct sp_prof_mark mk = {.kind = SP_MARK_WINDOW_BEGIN, .time_ns = 500};
	CHECK(sp_prof_writer_mark(w, &mk) == 0);
	uint64_t pcs[3] = {0x401000, 0x402000, 0x400100};
	struct sp_prof_stack s = {.id = 1, .flags = SP_STACK_TRUNCATED, .depth = 3, .pcs = pcs};
	CHECK(sp_prof_writer_stack(w, &s) == 0);
	/* stack 2: a frame of its own, then stack 1's outer two */
	uint64_t pcs2[3] = {0x403000, 0x402000, 0x400100};
	struct sp_prof_stack s2 = {.id = 2, .depth = 3, .pcs = pcs2};
	CHECK(sp_prof_writer_stack_diff(w, &s2, 1, 2) == 0);
	struct sp_prof_sample xs[3];
	for (int i = 0; i < 3; i++)
		xs[i] = (struct sp_prof_sample){.stack = 1 + (i == 2),
						.range = 1,
						.time_ns = 1000u * i,
						.weight_ns = 10000000u + (uint64_t)i * 3};
	CHECK(sp_prof_writer_samples(w, 42, 10000000, xs, 3) == 0);
	struct sp_prof_jit j = {.start = 0x7f0000, .size = 0x100, .name = "jit_kernel"};
	CHECK(sp_prof_writer_jit(w, &j) == 0);
	struct sp_prof_stats st = {.samples = 3, .drops = 1, .timer = "posix-cputimer"};
	CHECK(sp_prof_writer_stats(w, &st) == 0);
	CHECK(sp_prof_writer_flush(w) == 0);
	for (int i = 0; i < 2; i++) {
		struct sp_prof_sample x = {.tid = 42, .stack = 1, .time_ns = 5000, .weight_ns = 7};
		CHECK(sp_prof_writer_sample(w, &x) == 0);
	}
	/* samples of another kind, with payloads: the cuts and flips below reach them */
	struct sp_prof_sample u[2] = {
	    {.event = SP_EVENT_USER, .stack = 2, .time_ns = 6000, .weight_ns = 1, .payload = 77},
	    {.event = SP_EVENT_USER,
	     .stack = 1,
	     .time_ns = 6500,
	     .weight_ns = 3,
	     .payload = 1ull << 40},
	};
	CHECK(sp_prof_writer_samples(w, 43, 0, u, 2) == 0);
	mk = (struct sp_prof_mark){.kind = SP_MARK_WINDOW_END, .time_ns = 4000};
	CHECK(sp_prof_writer_mark(w, &mk) == 0);
	st.samples = 5;
	st.flags = SP_STATS_FINAL;
	st.threads_missed = 2; /* the last fields, read back */
	st.missed_ns = 123456789;
	st.timer_why = "auto's first pick";
	st.timer_irq_ns = 18300;
	CHECK(sp_prof_writer_stats(w, &st) == 0);
	CHECK(sp_prof_writer_close(w) == 0);
	close(fd);
}

/* Writes a profile whose only content is these marks. */
static void make_marks(const char *path, const struct sp_prof_mark *mk, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct sp_prof_writer *w = sp_prof_writer_new(fd);
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION, .timer = "", .cmdline = "", .exe = "", .hostname = ""};
	CHECK(sp_prof_writer_header(w, &h) == 0);
	for (size_t i = 0; i < n; i++)
		CHECK(sp_prof_writer_mark(w, &mk[i]) == 0);
	CHECK(sp_prof_writer_close(w) == 0);
	close(fd);
}

/* Windows: begin/end pairs, an open one at the end, stray and unknown marks, disorder. */
static void test_windows(const char *path)
{
	char err[256];
	enum { B = SP_MARK_WINDOW_BEGIN, E = SP_MARK_WINDOW_END };
	const struct sp_prof_mark a[] = {
	    {E, 50},		 /* an end with nothing open: ignored */
	    {B, 100}, {B, 150},	 /* a begin while open: ignored */
	    {E, 200}, {99, 250}, /* an unknown kind: kept, ignored */
	    {B, 300},		 /* open to the end */
	};
	make_marks(path, a, sizeof(a) / sizeof(a[0]));
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL);
	if (p) {
		CHECK(p->n_marks == 6 && p->marks[4].kind == 99);
		CHECK(p->n_windows == 2);
		CHECK(p->n_windows == 2 && p->windows[0].begin_ns == 100 &&
		      p->windows[0].end_ns == 200 && p->windows[1].begin_ns == 300 &&
		      p->windows[1].end_ns == UINT64_MAX);
		CHECK(!sp_profile_window(p, 99) && sp_profile_window(p, 100) &&
		      sp_profile_window(p, 200) && !sp_profile_window(p, 201) &&
		      !sp_profile_window(p, 299) && sp_profile_window(p, 300) &&
		      sp_profile_window(p, UINT64_MAX - 1));
		sp_profile_free(p);
	}
	/* out of order and overlapping (a damaged file): sorted and merged */
	const struct sp_prof_mark b[] = {{B, 500}, {E, 600}, {B, 100}, {E, 550}, {B, 10}, {E, 20}};
	make_marks(path, b, sizeof(b) / sizeof(b[0]));
	p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL);
	if (p) {
		CHECK(p->n_windows == 2 && p->windows[0].begin_ns == 10 &&
		      p->windows[0].end_ns == 20 && p->windows[1].begin_ns == 100 &&
		      p->windows[1].end_ns == 600);
		CHECK(!sp_profile_window(p, 50) && sp_profile_window(p, 575));
		sp_profile_free(p);
	}
	/* no marks: no windows */
	make_marks(path, NULL, 0);
	p = sp_profile_read(path, err, sizeof(err));
	CHECK(p && p->n_windows == 0 && !sp_profile_window(p, 0));
	sp_profile_free(p);
}

/* Whether two reads hold the same stacks and the same samples. */
static bool same_samples(const struct sp_profile *a, const struct sp_profile *b)
{
	if (a->n_samples != b->n_samples || a->n_stacks != b->n_stacks)
		return false;
	for (size_t i = 0; i < a->n_stacks; i++) {
		const struct sp_prof_stack *x = &a->stacks[i], *y = &b->stacks[i];
		if (x->id != y->id || x->flags != y->flags || x->depth != y->depth ||
		    memcmp(x->pcs, y->pcs, x->depth * sizeof(*x->pcs)))
			return false;
	}
	for (size_t i = 0; i < a->n_samples; i++) {
		const struct sp_prof_sample *x = &a->samples[i], *y = &b->samples[i];
		if (x->tid != y->tid || x->stack != y->stack || x->range != y->range ||
		    x->time_ns != y->time_ns || x->weight_ns != y->weight_ns ||
		    x->event != y->event || x->payload != y->payload)
			return false;
	}
	return true;
}

/*
 * The writer keeps records back and gives them to zlib together: what a
 * flush promises must still hold (every record before it is in the file
 * when it returns), and order and content must survive records larger
 * than the batch.
 */
static void test_batching(const char *path, const char *copy)
{
	enum { N1 = 20000, N2 = 7000, TABLE = 200000 };
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct sp_prof_writer *w = sp_prof_writer_new(fd);
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION, .timer = "t", .cmdline = "", .exe = "", .hostname = ""};
	CHECK(sp_prof_writer_header(w, &h) == 0);
	uint64_t pcs[2] = {0x401000, 0x400100};
	struct sp_prof_stack st = {.id = 1, .depth = 2, .pcs = pcs};
	CHECK(sp_prof_writer_stack(w, &st) == 0);
	uint8_t *table = malloc(TABLE);
	for (size_t i = 0; i < TABLE; i++)
		table[i] = (uint8_t)(i * 2654435761u >> 13);
	for (uint32_t i = 0; i < N1; i++) {
		struct sp_prof_sample x = {
		    .tid = 7, .stack = 1, .time_ns = i, .weight_ns = 1000u + i * 37u};
		CHECK(sp_prof_writer_sample(w, &x) == 0);
		if (i == N1 / 2) {
			struct sp_prof_pycode c = {.id = 9,
						   .minor = 11,
						   .firstlineno = 3,
						   .name = "f",
						   .qualname = "C.f",
						   .filename = "big.py",
						   .linetable = table,
						   .linetable_len = TABLE};
			CHECK(sp_prof_writer_pycode(w, &c) == 0);
		}
	}
	CHECK(sp_prof_writer_flush(w) == 0);
	/* the file as a crash right after the flush would leave it */
	size_t n;
	unsigned char *data = read_file(path, &n);
	write_file(copy, data, n);
	free(data);
	for (uint32_t i = 0; i < N2; i++) {
		struct sp_prof_sample x = {.tid = 7, .stack = 1, .time_ns = N1 + i, .weight_ns = 5};
		CHECK(sp_prof_writer_sample(w, &x) == 0);
	}
	CHECK(sp_prof_writer_close(w) == 0);
	close(fd);

	char err[256];
	struct sp_profile *q = sp_profile_read(copy, err, sizeof(err));
	CHECK(q != NULL);
	if (q) {
		CHECK(q->status == SP_READ_TRUNCATED);
		CHECK(q->n_samples == N1 && q->n_pycodes == 1);
		sp_profile_free(q);
	}
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL);
	if (!p) {
		free(table);
		return;
	}
	CHECK(p->status == SP_READ_OK && p->n_samples == N1 + N2);
	bool ordered = p->n_samples == N1 + N2;
	for (size_t i = 0; ordered && i < p->n_samples; i++)
		ordered = p->samples[i].time_ns == i &&
			  p->samples[i].weight_ns == (i < N1 ? 1000u + i * 37u : 5u);
	CHECK(ordered);
	CHECK(p->n_pycodes == 1 && p->pycodes[0].linetable_len == TABLE &&
	      !memcmp(p->pycodes[0].linetable, table, TABLE) &&
	      !strcmp(p->pycodes[0].qualname, "C.f"));
	sp_profile_free(p);
	free(table);
}

/* A record the writer cannot allocate ends the stream at the last flush:
 * never a gap in the stack ids, which the reader refuses. */
static void test_oom(const char *path)
{
#if defined(__SANITIZE_ADDRESS__)
	(void)path; /* ASan aborts on the huge request instead of failing it */
#else
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct sp_prof_writer *w = sp_prof_writer_new(fd);
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION, .timer = "t", .cmdline = "", .exe = "", .hostname = ""};
	CHECK(sp_prof_writer_header(w, &h) == 0);
	uint64_t pcs[2] = {0x401000, 0x400100};
	struct sp_prof_stack st = {.id = 1, .depth = 2, .pcs = pcs};
	CHECK(sp_prof_writer_stack(w, &st) == 0);
	struct sp_prof_sample x = {.tid = 7, .stack = 1, .weight_ns = 1};
	CHECK(sp_prof_writer_sample(w, &x) == 0);
	CHECK(sp_prof_writer_flush(w) == 0);
	/* more than the address space: the buffer's growth fails, nothing is copied */
	uint8_t image[16] = {0};
	struct sp_prof_module m = {
	    .id = 1, .start = 0x400000, .end = 0x500000, .path = "[vdso]", .image = image};
	m.image_len = (size_t)1 << 48;
	CHECK(sp_prof_writer_module(w, &m) == -ENOMEM);
	st.id = 2;
	CHECK(sp_prof_writer_stack(w, &st) != 0);
	x.stack = 2;
	sp_prof_writer_sample(w, &x);
	CHECK(sp_prof_writer_close(w) != 0);
	close(fd);
	char err[256];
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL);
	if (p) {
		CHECK(p->status == SP_READ_TRUNCATED && p->n_samples == 1 && p->n_stacks == 1);
		sp_profile_free(p);
	}
#endif
}

static const uint64_t pcs2_want[3] = {0x403000, 0x402000, 0x400100};

/* Writes a header of this version and flushes (so that a bad record
 * after it leaves a profile to read), then fn's records, and closes. */
static void make_v(const char *path, uint32_t version, void (*fn)(struct sp_prof_writer *w))
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct sp_prof_writer *w = sp_prof_writer_new(fd);
	struct sp_prof_header h = {
	    .version = version, .timer = "t", .cmdline = "", .exe = "", .hostname = ""};
	CHECK(sp_prof_writer_header(w, &h) == 0);
	CHECK(sp_prof_writer_flush(w) == 0);
	if (fn)
		fn(w);
	CHECK(sp_prof_writer_close(w) == 0);
	close(fd);
}

static uint64_t pcs4[4] = {0x401000, 0x402000, 0x403000, 0x400100};

static void stack1(struct sp_prof_writer *w)
{
	struct sp_prof_stack s = {.id = 1, .depth = 4, .pcs = pcs4};
	CHECK(sp_prof_writer_stack(w, &s) == 0);
}

static void diff_unknown_base(struct sp_prof_writer *w)
{
	stack1(w);
	struct sp_prof_stack s = {.id = 2, .depth = 4, .pcs = pcs4};
	CHECK(sp_prof_writer_stack_diff(w, &s, 5, 2) == 0);
}

static void diff_keeps_too_much(struct sp_prof_writer *w)
{
	stack1(w);
	uint64_t pcs[6] = {1, 2, 0x401000, 0x402000, 0x403000, 0x400100};
	struct sp_prof_stack s = {.id = 2, .depth = 6, .pcs = pcs};
	CHECK(sp_prof_writer_stack_diff(w, &s, 1, 5) == 0);
}

static void diff_deep(struct sp_prof_writer *w)
{
	stack1(w);
	/* a stack sharing everything but its leaf, then one sharing all of stack 2 */
	uint64_t a[5] = {0x404000, 0x401000, 0x402000, 0x403000, 0x400100};
	struct sp_prof_stack s = {.id = 2, .depth = 5, .pcs = a};
	CHECK(sp_prof_writer_stack_diff(w, &s, 1, 4) == 0);
	struct sp_prof_stack t = {.id = 3, .flags = SP_STACK_JIT_SCAN, .depth = 5, .pcs = a};
	CHECK(sp_prof_writer_stack_diff(w, &t, 2, 5) == 0);
	/* samples far apart, sleeping (time gaps much larger than the weight)
	 * and heavier or lighter than the period */
	struct sp_prof_sample x[4] = {
	    {.stack = 1, .time_ns = 7000000000ull, .weight_ns = 1},
	    {.stack = 3, .time_ns = 7000000001ull, .weight_ns = 2000000},
	    {.stack = 2, .range = 0, .time_ns = 9000000000ull, .weight_ns = 999000},
	    {.stack = 2, .time_ns = 9000000000ull, .weight_ns = 0},
	};
	CHECK(sp_prof_writer_samples(w, -3, 1000000, x, 4) == 0);
}

/* 3,000 records of 8 bytes that each copy the 1,000 frames of stack 1:
 * 3 million frames from 25 KB, which the reader refuses to hold */
static void diff_bomb(struct sp_prof_writer *w)
{
	static uint64_t pcs[1000];
	for (size_t i = 0; i < 1000; i++)
		pcs[i] = 0x400000 + i;
	struct sp_prof_stack s = {.id = 1, .depth = 1000, .pcs = pcs};
	CHECK(sp_prof_writer_stack(w, &s) == 0);
	for (uint32_t i = 2; i < 3002; i++) {
		struct sp_prof_stack d = {.id = i, .depth = 1000, .pcs = pcs};
		CHECK(sp_prof_writer_stack_diff(w, &d, 1, 1000) == 0);
	}
}

static void samples_unknown_stack(struct sp_prof_writer *w)
{
	stack1(w);
	struct sp_prof_sample x[2] = {{.stack = 1, .time_ns = 10}, {.stack = 2, .time_ns = 20}};
	CHECK(sp_prof_writer_samples(w, 1, 0, x, 2) == 0);
}

/* Version 2's records: a stack made from another's outer frames, samples
 * in a batch; their bad forms refused; versions 1 and 2 read, 3 not. */
static void test_v2(const char *path)
{
	char err[256];
	make_v(path, 2, diff_deep);
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL);
	if (p) {
		CHECK(p->status == SP_READ_OK && p->n_stacks == 3 && p->n_samples == 4);
		uint64_t want[5] = {0x404000, 0x401000, 0x402000, 0x403000, 0x400100};
		CHECK(p->n_stacks == 3 && p->stacks[1].depth == 5 &&
		      !memcmp(p->stacks[1].pcs, want, sizeof(want)) && p->stacks[2].depth == 5 &&
		      !memcmp(p->stacks[2].pcs, want, sizeof(want)) &&
		      p->stacks[2].flags == SP_STACK_JIT_SCAN);
		bool same = p->n_samples == 4;
		uint64_t t[4] = {7000000000ull, 7000000001ull, 9000000000ull, 9000000000ull};
		uint64_t wt[4] = {1, 2000000, 999000, 0};
		uint32_t st[4] = {1, 3, 2, 2};
		for (size_t i = 0; same && i < 4; i++)
			same = p->samples[i].tid == -3 && p->samples[i].time_ns == t[i] &&
			       p->samples[i].weight_ns == wt[i] && p->samples[i].stack == st[i] &&
			       p->samples[i].event == SP_EVENT_CPU && p->samples[i].payload == 0;
		CHECK(same);
		/* a version 2 file's samples are cpu samples, the one kind it has */
		CHECK(p->n_events == 1 && p->events[0].id == 0 &&
		      !strcmp(p->events[0].name, "cpu") && !strcmp(p->events[0].unit, "ns") &&
		      sp_profile_event_named(p, "cpu") == &p->events[0] &&
		      !sp_profile_event_named(p, "user"));
		sp_profile_free(p);
	}
	void (*bad[])(struct sp_prof_writer *) = {diff_unknown_base, diff_keeps_too_much,
						  samples_unknown_stack, diff_bomb};
	const char *why[] = {"bad stack record", "bad stack record", "unknown stack", "more than"};
	for (size_t i = 0; i < 4; i++) {
		make_v(path, 2, bad[i]);
		p = sp_profile_read(path, err, sizeof(err));
		CHECK(p != NULL);
		if (p) {
			CHECK(p->status == SP_READ_CORRUPT && strstr(p->error, why[i]));
			sp_profile_free(p);
		}
	}
	make_v(path, 1, stack1);
	p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL && p->status == SP_READ_OK && p->n_stacks == 1);
	sp_profile_free(p);
	make_v(path, 2, stack1);
	p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL && p->status == SP_READ_OK && p->n_stacks == 1);
	sp_profile_free(p);
	make_v(path, 4, stack1);
	CHECK(sp_profile_read(path, err, sizeof(err)) == NULL &&
	      strstr(err, "profile version 4, this stackprof reads versions 1 to 3"));
}

/* The record stream inside a profile: the whole zlib stream inflated. */
static unsigned char *inflate_all(const unsigned char *data, size_t n, size_t *out_len)
{
	size_t cap = 1 << 20;
	unsigned char *out = malloc(cap);
	z_stream z;
	memset(&z, 0, sizeof(z));
	inflateInit(&z);
	z.next_in = (Bytef *)data + SP_PROFILE_MAGIC_LEN;
	z.avail_in = (uInt)(n - SP_PROFILE_MAGIC_LEN);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

/* Where the record at off ends (u8 type, uleb128 length, payload); its type in *type. */
static size_t record_end(const unsigned char *p, size_t off, unsigned *type)
{
	*type = p[off++];
	uint64_t len = 0;
	for (int shift = 0;; shift += 7) {
		unsigned char b = p[off++];
		len |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return off + (size_t)len;
}

/*
 * Writes the magic and raw's first n1 bytes then n2 more, each part ended
 * by a sync flush as the writer's flush does, then the first half of the
 * rest without a flush: a file cut off in its third part.
 */
static void write_reflushed(const char *path, const unsigned char *raw, size_t len, size_t n1,
			    size_t n2)
{
	size_t cap = 2 * len + 1024;
	unsigned char *out = malloc(cap);
	memcpy(out, SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN);
	z_stream z;
	memset(&z, 0, sizeof(z));
	deflateInit(&z, Z_DEFAULT_COMPRESSION);
	z.next_out = out + SP_PROFILE_MAGIC_LEN;
	z.avail_out = (uInt)(cap - SP_PROFILE_MAGIC_LEN);
	const size_t parts[3] = {n1, n2, (len - n1 - n2) / 2};
	const int flush[3] = {Z_SYNC_FLUSH, Z_SYNC_FLUSH, Z_NO_FLUSH};
	size_t off = 0;
	for (int i = 0; i < 3; i++) {
		z.next_in = (Bytef *)raw + off;
		z.avail_in = (uInt)parts[i];
		int rc = deflate(&z, flush[i]);
		CHECK(rc == Z_OK || (rc == Z_BUF_ERROR && !parts[i]));
		off += parts[i];
	}
	write_file(path, out, cap - z.avail_out);
	deflateEnd(&z);
	free(out);
}

/*
 * A file cut off after its last flush is whole up to that flush
 * (SP_READ_TRUNCATED, which the CLI reads with exit 0). One whose flush
 * ends inside a record, or without its checkpoint (a length field that
 * swallowed the checkpoint, a lost record), is damaged even if the file
 * then ends: SP_READ_CORRUPT, never taken for a cut.
 */
static void test_cut_or_damaged(const char *whole, const char *path)
{
	size_t n, len;
	unsigned char *data = read_file(whole, &n);
	unsigned char *raw = inflate_all(data, n, &len);
	/* the ends of the first two checkpoints, and of a record between them */
	size_t ck[2] = {0, 0}, mid = 0, off = 0;
	int found = 0;
	while (off < len && found < 2) {
		unsigned type;
		off = record_end(raw, off, &type);
		if (type == SP_REC_CHECKPOINT)
			ck[found++] = off;
		else if (found == 1 && !mid)
			mid = off;
	}
	CHECK(found == 2 && mid > ck[0] && mid < ck[1]);
	char err[256];
	/* flushes right after checkpoints, cut in the next part: a cut */
	write_reflushed(path, raw, len, ck[0], ck[1] - ck[0]);
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	CHECK(p && p->status == SP_READ_TRUNCATED && p->n_samples == 7);
	sp_profile_free(p);
	/* a flush after a record that is not a checkpoint */
	write_reflushed(path, raw, len, ck[0], mid - ck[0]);
	p = sp_profile_read(path, err, sizeof(err));
	CHECK(p && p->status == SP_READ_CORRUPT && p->n_samples == 3 &&
	      strstr(p->error, "does not end on a checkpoint"));
	sp_profile_free(p);
	/* a flush in the middle of a record */
	write_reflushed(path, raw, len, ck[0], mid - ck[0] - 1);
	p = sp_profile_read(path, err, sizeof(err));
	CHECK(p && p->status == SP_READ_CORRUPT && p->n_samples == 3);
	sp_profile_free(p);
	free(raw);
	free(data);
}

/* cpu, user and a kind of the file's own, interleaved in one batch; and
 * wall, whose time is stored less its weight */
static void events_mixed(struct sp_prof_writer *w)
{
	stack1(w);
	struct sp_prof_event gpu = {.id = 9, .name = "gpu", .unit = "launches"};
	CHECK(sp_prof_writer_event(w, &gpu) == 0);
	CHECK(sp_prof_writer_event(w, &gpu) == -EEXIST);
	struct sp_prof_event cpu = {.id = 0, .name = "cpu", .unit = "ns"};
	CHECK(sp_prof_writer_event(w, &cpu) == -EINVAL);
	struct sp_prof_sample x[6] = {
	    {.stack = 1, .time_ns = 1000000, .weight_ns = 1000000},
	    {.event = SP_EVENT_USER, .stack = 1, .time_ns = 1000100, .weight_ns = 1, .payload = 5},
	    {.event = SP_EVENT_USER,
	     .stack = 1,
	     .range = 0,
	     .time_ns = 1000200,
	     .weight_ns = 2,
	     .payload = UINT64_MAX},
	    {.stack = 1, .time_ns = 2000000, .weight_ns = 1000000},
	    {.event = 9, .stack = 1, .time_ns = 2500000, .weight_ns = 3, .payload = 123},
	    {.event = SP_EVENT_WALL,
	     .stack = 1,
	     .time_ns = 9000000,
	     .weight_ns = 7000000,
	     .payload = 2},
	};
	CHECK(sp_prof_writer_samples(w, 11, 1000000, x, 6) == 0);
	/* an id neither declared nor built in */
	struct sp_prof_sample y = {.event = 10, .stack = 1, .time_ns = 1};
	CHECK(sp_prof_writer_samples(w, 11, 0, &y, 1) == -EINVAL);
	y.event = 0;
	CHECK(sp_prof_writer_sample(w, &y) == 0);
	y.event = SP_EVENT_USER;
	CHECK(sp_prof_writer_sample(w, &y) == -EINVAL); /* a SAMPLE record has no kind */
}

static void events_unknown_stack(struct sp_prof_writer *w)
{
	stack1(w);
	struct sp_prof_sample x = {.event = SP_EVENT_ALLOC, .stack = 2, .weight_ns = 4096};
	CHECK(sp_prof_writer_samples(w, 1, 0, &x, 1) == 0);
}

/* Rewrites path's records with fn applied to the inflated stream. */
static void patch_records(const char *path, void (*fn)(unsigned char *raw, size_t len))
{
	size_t n, len;
	unsigned char *data = read_file(path, &n);
	unsigned char *raw = inflate_all(data, n, &len);
	fn(raw, len);
	write_reflushed(path, raw, len, len, 0);
	free(raw);
	free(data);
}

/* The EVENT record's id byte: the samples after it name an undeclared kind (4 -> 5), or it
 * declares cpu (4 -> 0). */
static unsigned char event_id_to;
static void patch_event_id(unsigned char *raw, size_t len)
{
	size_t off = 0;
	while (off < len) {
		unsigned type;
		size_t end = record_end(raw, off, &type);
		size_t payload = end - raw[off + 1]; /* a one-byte length */
		if (type == SP_REC_EVENT && raw[payload] == SP_EVENT_USER) {
			raw[payload] = event_id_to;
			return;
		}
		off = end;
	}
	CHECK(!"no EVENT record for user");
}

static void test_events(const char *path)
{
	char err[256];
	make_v(path, SP_PROFILE_VERSION, events_mixed);
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL);
	if (p) {
		CHECK(p->status == SP_READ_OK && p->n_samples == 7);
		/* cpu, then the kinds in the order the file declared them */
		CHECK(p->n_events == 4 && !strcmp(p->events[0].name, "cpu") &&
		      p->events[1].id == 9 && !strcmp(p->events[1].name, "gpu") &&
		      !strcmp(p->events[1].unit, "launches") && p->events[1].flags == 0 &&
		      p->events[2].id == SP_EVENT_USER && !strcmp(p->events[2].name, "user") &&
		      !strcmp(p->events[2].unit, "count") &&
		      p->events[2].flags == SP_EVENT_PAYLOAD && p->events[3].id == SP_EVENT_WALL &&
		      !strcmp(p->events[3].unit, "ns") &&
		      p->events[3].flags == (SP_EVENT_PAYLOAD | SP_EVENT_TIMED));
		uint32_t ev[7] = {0, SP_EVENT_USER, SP_EVENT_USER, 0, 9, SP_EVENT_WALL, 0};
		uint64_t t[7] = {1000000, 1000100, 1000200, 2000000, 2500000, 9000000, 1};
		uint64_t wt[7] = {1000000, 1, 2, 1000000, 3, 7000000, 0};
		uint64_t pl[7] = {0, 5, UINT64_MAX, 0, 0, 2, 0};
		bool same = p->n_samples == 7;
		for (size_t i = 0; same && i < 7; i++)
			same = p->samples[i].tid == (i < 6 ? 11 : 0) &&
			       p->samples[i].event == ev[i] && p->samples[i].time_ns == t[i] &&
			       p->samples[i].weight_ns == wt[i] && p->samples[i].payload == pl[i] &&
			       p->samples[i].stack == 1;
		CHECK(same);
		CHECK(sp_profile_event_named(p, "gpu") == &p->events[1] &&
		      sp_profile_event(p, SP_EVENT_WALL) == &p->events[3] &&
		      !sp_profile_event(p, SP_EVENT_ALLOC));
		sp_profile_free(p);
	}
	/* a sample of a kind with a stack that is not there */
	make_v(path, SP_PROFILE_VERSION, events_unknown_stack);
	p = sp_profile_read(path, err, sizeof(err));
	CHECK(p && p->status == SP_READ_CORRUPT && strstr(p->error, "unknown stack") &&
	      p->n_samples == 0 && p->n_events == 1);
	sp_profile_free(p);
	/* samples of a kind no EVENT record declared; an EVENT record for cpu */
	const unsigned char to[2] = {5, 0};
	const char *why[2] = {"samples of event 4, which no EVENT record declares",
			      "bad event record (id 0, user)"};
	for (int i = 0; i < 2; i++) {
		make_v(path, SP_PROFILE_VERSION, events_mixed);
		event_id_to = to[i];
		patch_records(path, patch_event_id);
		p = sp_profile_read(path, err, sizeof(err));
		CHECK(p && p->status == SP_READ_CORRUPT && strstr(p->error, why[i]));
		if (p && !strstr(p->error, why[i]))
			fprintf(stderr, "test_events: %s\n", p->error);
		sp_profile_free(p);
	}
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char path[256], cut[256];
	snprintf(path, sizeof(path), "%s/p.prof", dir);
	snprintf(cut, sizeof(cut), "%s/cut.prof", dir);
	make_profile(path);

	char err[256];
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	CHECK(p != NULL);
	if (p) {
		CHECK(p->status == SP_READ_OK);
		CHECK(p->header.pid == 42 && !strcmp(p->header.cmdline, "prog --arg"));
		CHECK(p->n_modules == 1 && p->modules[0].build_id_len == 4 &&
		      p->modules[0].build_id[0] == 0xde);
		CHECK(p->n_samples == 7 && p->n_stacks == 2 && p->n_ranges == 2 && p->n_jits == 1);
		CHECK(p->samples[5].tid == 43 && p->samples[5].event == SP_EVENT_USER &&
		      p->samples[5].stack == 2 && p->samples[5].time_ns == 6000 &&
		      p->samples[5].weight_ns == 1 && p->samples[5].payload == 77 &&
		      p->samples[6].payload == 1ull << 40 && p->samples[6].time_ns == 6500);
		CHECK(p->n_events == 2 && !strcmp(p->events[1].name, "user"));
		CHECK(p->stacks[0].depth == 3 && p->stacks[0].pcs[2] == 0x400100);
		CHECK(p->stacks[1].depth == 3 && p->stacks[1].flags == 0 &&
		      !memcmp(p->stacks[1].pcs, pcs2_want, sizeof(pcs2_want)));
		CHECK(p->samples[0].tid == 42 && p->samples[0].stack == 1 &&
		      p->samples[0].range == 1 && p->samples[0].time_ns == 0 &&
		      p->samples[0].weight_ns == 10000000);
		CHECK(p->samples[2].tid == 42 && p->samples[2].stack == 2 &&
		      p->samples[2].time_ns == 2000 && p->samples[2].weight_ns == 10000006);
		CHECK(p->samples[3].tid == 42 && p->samples[3].time_ns == 5000);
		CHECK(p->stacks[0].flags == SP_STACK_TRUNCATED);
		CHECK(p->has_stats && p->stats.samples == 5 && p->stats.flags == SP_STATS_FINAL);
		CHECK(p->stats.threads_missed == 2 && p->stats.missed_ns == 123456789);
		CHECK(p->stats.timer_why && !strcmp(p->stats.timer_why, "auto's first pick") &&
		      p->stats.timer_irq_ns == 18300);
		CHECK(!strcmp(p->ranges[0].name, "LINEAR PASS") && !p->ranges[0].cls);
		/* a module range's class comes back apart from its name */
		CHECK(!strcmp(p->ranges[1].name, "conv1") && p->ranges[1].cls &&
		      !strcmp(p->ranges[1].cls, "Conv2d"));
		CHECK(p->n_ranges == 2 && p->ranges[0].flags == 0 &&
		      p->ranges[1].flags == SP_RANGE_MODULE && p->ranges[1].parent == 1);
		CHECK(p->n_marks == 2 && p->marks[0].kind == SP_MARK_WINDOW_BEGIN &&
		      p->marks[1].time_ns == 4000);
		CHECK(p->n_windows == 1 && p->windows[0].begin_ns == 500 &&
		      p->windows[0].end_ns == 4000);
		CHECK(sp_profile_thread(p, 42) && !strcmp(sp_profile_thread(p, 42)->name, "main"));
		sp_profile_free(p);
	}

	/* every cut: no crash; either rejected with a message, or read with <= 5 samples */
	size_t n;
	unsigned char *data = read_file(path, &n);
	int kept_first_block = 0;
	for (size_t len = 0; len < n; len++) {
		write_file(cut, data, len);
		err[0] = '\0';
		struct sp_profile *q = sp_profile_read(cut, err, sizeof(err));
		if (!q) {
			CHECK(err[0] != '\0');
			continue;
		}
		CHECK(q->status == SP_READ_TRUNCATED || q->status == SP_READ_OK);
		CHECK(q->n_samples == 3 || q->n_samples == 7);
		if (q->n_samples == 3) {
			kept_first_block++;
			/* the end mark was in the lost block: the window stays open */
			CHECK(q->n_windows == 1 && q->windows[0].end_ns == UINT64_MAX);
		}
		sp_profile_free(q);
	}
	CHECK(kept_first_block > 0);

	/* every single-bit flip: no crash, and never silently different samples */
	struct sp_profile *ref = sp_profile_read(path, err, sizeof(err));
	CHECK(ref != NULL);
	for (size_t i = 8; ref && i < n; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			data[i] ^= (unsigned char)(1u << bit);
			write_file(cut, data, n);
			struct sp_profile *q = sp_profile_read(cut, err, sizeof(err));
			if (q) {
				if (q->status == SP_READ_OK) {
					/* the flip hit something zlib and the CRC both
					 * tolerate: stacks and samples identical */
					CHECK(same_samples(q, ref));
				}
				sp_profile_free(q);
			}
			data[i] ^= (unsigned char)(1u << bit);
		}
	}
	sp_profile_free(ref);

	/* junk, empty, missing */
	write_file(cut, "hello world, not a profile", 26);
	CHECK(sp_profile_read(cut, err, sizeof(err)) == NULL && strstr(err, "not a stackprof"));
	write_file(cut, "", 0);
	CHECK(sp_profile_read(cut, err, sizeof(err)) == NULL);
	CHECK(sp_profile_read("/nonexistent/x.prof", err, sizeof(err)) == NULL && errno == ENOENT);
	CHECK(sp_profile_read(dir, err, sizeof(err)) == NULL);

	test_cut_or_damaged(path, cut);
	test_windows(cut);
	test_v2(cut);
	test_events(cut);
	test_batching(path, cut);
	test_oom(cut);

	free(data);
	unlink(path);
	unlink(cut);
	rmdir(dir);
	return check_exit("test-format");
}
