/*
 * gen-fixtures.c - writes the deterministic raw profiles the export golden
 * tests read, with the same writer API the sampler uses.
 *
 * Every function is a JIT symbol (a perf-<pid>.map entry), so symbolization
 * gives the same names on any machine and without any binary; one module
 * points at a file that does not exist, to cover the "module+0xoffset"
 * fallback. The names are chosen to break naive output: spaces, ';', a tab
 * and a newline, C++ templates with spaces and commas.
 *
 *   gen-fixtures DIR            base.prof new.prof truncated.prof junk.prof in DIR
 *   gen-fixtures --big FILE SAMPLES STACKS
 *                               a large random-but-seeded profile for speed tests
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"

#define JIT_BASE  0x10000ull
#define JIT_SIZE  0x100ull
#define MOD_START 0x400000ull
#define MOD_END	  0x500000ull
#define MS	  1000000ull

enum fn {
	F_START,
	F_MAIN,
	F_RUN,
	F_CONV,
	F_GEMM,
	F_PUSH,
	F_BN,
	F_RELU,
	F_POOL,
	F_WORKER,
	F_RECURSE,
	F_MEMCPY,
	F_SOFTMAX,
	F_COUNT,
};

static const char *const fn_names[F_COUNT] = {
    [F_START] = "_start",
    [F_MAIN] = "main",
    [F_RUN] = "run_model(int)",
    [F_CONV] = "conv2d_forward",
    [F_GEMM] = "gemm_kernel<float, 8>(float const*, float*)",
    [F_PUSH] = "std::vector<int, std::allocator<int> >::push_back(int const&)",
    [F_BN] = "batch norm; fused",
    [F_RELU] = "relu\tinplace\nv2",
    [F_POOL] = "max_pool2d",
    [F_WORKER] = "worker_loop",
    [F_RECURSE] = "recurse",
    [F_MEMCPY] = "memcpy",
    [F_SOFTMAX] = "softmax",
};

/* The leaf is looked up at its PC, callers at their return address - 1. */
static uint64_t leaf_pc(enum fn f)
{
	return JIT_BASE + f * JIT_SIZE + 0x10;
}

static uint64_t ret_pc(enum fn f)
{
	return JIT_BASE + f * JIT_SIZE + 0x21;
}

static int check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "gen-fixtures: %s: %s\n", what, strerror(-rc));
		exit(1);
	}
	return rc;
}

struct gen {
	struct sp_writer *w;
	uint32_t next_stack;
	uint64_t clock[4]; /* per thread slot: time of the next sample */
};

/* Writes a stack given root first (as people read them); returns its id. */
static uint32_t stack_of(struct gen *g, uint32_t flags, int n, const enum fn *root_first)
{
	uint64_t pcs[64];
	for (int i = 0; i < n; i++) {
		enum fn f = root_first[n - 1 - i];
		pcs[i] = i == 0 ? leaf_pc(f) : ret_pc(f);
	}
	struct sp_prof_stack s = {
	    .id = ++g->next_stack, .flags = flags, .depth = (uint32_t)n, .pcs = pcs};
	check(sp_writer_stack(g->w, &s), "stack");
	return s.id;
}

static void samples(struct gen *g, int slot, int32_t tid, uint32_t stack, uint32_t range, int count,
		    uint64_t weight)
{
	for (int i = 0; i < count; i++) {
		g->clock[slot] += weight;
		struct sp_prof_sample s = {.tid = tid,
					   .stack = stack,
					   .range = range,
					   .time_ns = g->clock[slot],
					   .weight_ns = weight};
		check(sp_writer_sample(g->w, &s), "sample");
	}
}

static struct sp_writer *start(const char *path, int *fd, int pid)
{
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (*fd < 0) {
		fprintf(stderr, "gen-fixtures: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	struct sp_writer *w = sp_writer_new(*fd);
	if (!w)
		exit(1);
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION,
	    .pid = pid,
	    .ppid = 1,
	    .start_realtime_ns = 1700000000000000000ull,
	    .start_mono_ns = 1000 * MS,
	    .freq_hz = 1000,
	    .max_depth = 6,
	    .timer = (char *)"posix-cputimer",
	    .cmdline = (char *)"./fixture --iters 5",
	    .exe = (char *)"/nonexistent/fixture",
	    .hostname = (char *)"fixture-host",
	};
	check(sp_writer_header(w, &h), "header");
	struct sp_prof_module m = {
	    .id = 1,
	    .flags = SP_MOD_DLOPEN,
	    .start = MOD_START,
	    .end = MOD_END,
	    .bias = MOD_START,
	    .path = (char *)"/nonexistent/libfixture.so",
	    .build_id = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04},
	    .build_id_len = 8,
	};
	check(sp_writer_module(w, &m), "module");
	for (int f = 0; f < F_COUNT; f++) {
		struct sp_prof_jit j = {.start = JIT_BASE + f * JIT_SIZE,
					.size = JIT_SIZE,
					.name = (char *)fn_names[f]};
		check(sp_writer_jit(w, &j), "jit");
	}
	struct sp_prof_thread th[] = {
	    {.tid = 1000, .name = (char *)"fixture"},
	    {.tid = 1001, .name = (char *)"worker pool"}, /* a space: thread roots escape too */
	    {.tid = 1002, .name = NULL},
	    {.tid = 1000, .name = (char *)"resnet18"}, /* renamed later: the last name wins */
	};
	for (size_t i = 0; i < sizeof(th) / sizeof(th[0]); i++)
		check(sp_writer_thread(w, &th[i]), "thread");
	struct sp_prof_range r[] = {
	    {.id = 1, .parent = 0, .name = (char *)"model_inference"},
	    {.id = 2, .parent = 1, .name = (char *)"LINEAR PASS"},
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		check(sp_writer_range(w, &r[i]), "range");
	return w;
}

/*
 * base (v = 0) and new (v = 1): new grows the convolution, shrinks batch
 * norm, drops relu and adds softmax, so a diff shows every category.
 */
static void write_profile(const char *path, int v, uint64_t *flush_bytes)
{
	int fd;
	struct gen g = {.clock = {0}};
	g.w = start(path, &fd, v ? 4242 : 4241);

	const enum fn s_gemm[] = {F_START, F_MAIN, F_RUN, F_CONV, F_GEMM};
	const enum fn s_conv[] = {F_START, F_MAIN, F_RUN, F_CONV};
	const enum fn s_bn[] = {F_START, F_MAIN, F_RUN, F_BN};
	const enum fn s_relu[] = {F_START, F_MAIN, F_RUN, F_RELU};
	const enum fn s_pool[] = {F_START, F_MAIN, F_RUN, F_POOL, F_MEMCPY};
	const enum fn s_push[] = {F_START, F_MAIN, F_PUSH};
	const enum fn s_soft[] = {F_START, F_MAIN, F_RUN, F_SOFTMAX};
	const enum fn s_rec[] = {F_WORKER, F_RECURSE, F_RECURSE, F_RECURSE, F_GEMM};
	const enum fn s_wcpy[] = {F_WORKER, F_MEMCPY};
	const enum fn s_deep[] = {F_RECURSE, F_RECURSE, F_RECURSE, F_RECURSE, F_RECURSE, F_RECURSE};

	uint32_t gemm = stack_of(&g, 0, 5, s_gemm);
	uint32_t conv = stack_of(&g, 0, 4, s_conv);
	uint32_t bn = stack_of(&g, 0, 4, s_bn);
	uint32_t relu = stack_of(&g, 0, 4, s_relu);
	uint32_t pool = stack_of(&g, 0, 5, s_pool);
	uint32_t push = stack_of(&g, 0, 3, s_push);
	uint32_t soft = stack_of(&g, 0, 4, s_soft);
	uint32_t rec = stack_of(&g, 0, 5, s_rec);
	uint32_t wcpy = stack_of(&g, 0, 2, s_wcpy);
	uint32_t deep = stack_of(&g, SP_STACK_TRUNCATED, 6, s_deep);
	uint64_t modpcs[] = {MOD_START + 0x1234, ret_pc(F_MAIN), ret_pc(F_START)};
	struct sp_prof_stack ms = {.id = ++g.next_stack, .depth = 3, .pcs = modpcs};
	check(sp_writer_stack(g.w, &ms), "stack");
	struct sp_prof_stack empty = {.id = ++g.next_stack, .flags = SP_STACK_UNWIND_ERR};
	check(sp_writer_stack(g.w, &empty), "stack");

	/* main thread: the "model" inside model_inference / LINEAR PASS */
	samples(&g, 0, 1000, push, 0, 3, MS);
	samples(&g, 0, 1000, conv, 1, 4, MS);
	samples(&g, 0, 1000, gemm, 2, v ? 60 : 40, MS);
	samples(&g, 0, 1000, conv, 1, 11, MS);
	samples(&g, 0, 1000, gemm, 1, 10, MS + 500); /* half-microseconds: sum, then round */
	samples(&g, 0, 1000, bn, 1, v ? 10 : 20, 2 * MS);
	check(sp_writer_flush(g.w), "flush");
	if (flush_bytes)
		*flush_bytes = sp_writer_bytes(g.w);
	if (!v)
		samples(&g, 0, 1000, relu, 1, 5, MS);
	else
		samples(&g, 0, 1000, soft, 1, 7, MS);
	samples(&g, 0, 1000, pool, 1, 8, MS);
	samples(&g, 0, 1000, ms.id, 0, 2, MS);
	samples(&g, 0, 1000, empty.id, 0, 1, MS);
	/* a worker and an unnamed thread, outside any range */
	samples(&g, 1, 1001, rec, 0, 12, MS);
	samples(&g, 1, 1001, wcpy, 0, 4, MS);
	samples(&g, 2, 1002, deep, 0, 6, MS);

	struct sp_prof_stats st = {
	    .flags = SP_STATS_FINAL, .samples = 0, .timer = (char *)"posix-cputimer"};
	check(sp_writer_stats(g.w, &st), "stats");
	check(sp_writer_close(g.w), "close");
	close(fd);
}

static void copy_prefix(const char *from, const char *to, uint64_t n)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	if (!in || !out)
		exit(1);
	for (uint64_t i = 0; i < n; i++) {
		int c = getc(in);
		if (c == EOF)
			break;
		putc(c, out);
	}
	fclose(in);
	if (fclose(out))
		exit(1);
}

/* A xorshift generator: the big profile is the same on every run. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void write_big(const char *path, unsigned long n_samples, unsigned long n_stacks)
{
	int fd;
	struct gen g = {.clock = {0}};
	g.w = start(path, &fd, 5000);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint64_t pcs[40];
	for (unsigned long i = 0; i < n_stacks; i++) {
		/* a root-shared prefix, then branches: shaped like a real call tree */
		uint32_t depth = 8 + (uint32_t)(rnd(&seed) % 30);
		for (uint32_t k = 0; k < depth; k++) {
			uint64_t f = k < 3 ? (uint64_t)k : rnd(&seed) % F_COUNT;
			pcs[depth - 1 - k] =
			    JIT_BASE + f * JIT_SIZE + 0x10 + (rnd(&seed) % 8) * 0x10;
		}
		struct sp_prof_stack s = {.id = (uint32_t)i + 1, .depth = depth, .pcs = pcs};
		check(sp_writer_stack(g.w, &s), "stack");
	}
	for (unsigned long i = 0; i < n_samples; i++) {
		uint32_t stack = (uint32_t)(i < n_stacks ? i + 1 : 1 + rnd(&seed) % n_stacks);
		int slot = (int)(rnd(&seed) % 3);
		samples(&g, slot, 1000 + slot, stack, (uint32_t)(rnd(&seed) % 3), 1, MS);
	}
	check(sp_writer_close(g.w), "close");
	close(fd);
}

int main(int argc, char **argv)
{
	char path[4096], path2[4096];
	if (argc == 5 && !strcmp(argv[1], "--big")) {
		write_big(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: gen-fixtures DIR | --big FILE SAMPLES STACKS\n");
		return 2;
	}
	uint64_t cut = 0;
	snprintf(path, sizeof(path), "%s/base.prof", argv[1]);
	write_profile(path, 0, &cut);
	snprintf(path2, sizeof(path2), "%s/truncated.prof", argv[1]);
	/* cut a little after a flush: the reader keeps what came before it */
	copy_prefix(path, path2, cut + 7);
	snprintf(path, sizeof(path), "%s/new.prof", argv[1]);
	write_profile(path, 1, NULL);

	snprintf(path, sizeof(path), "%s/junk.prof", argv[1]);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	fputs("this is not a stackprof profile\n", f);
	return fclose(f) ? 1 : 0;
}
