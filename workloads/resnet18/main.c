/*
 * resnet18: a ResNet-18 inference benchmark and stackprof's demo target.
 *
 * Runs warm-up passes, then timed passes of a fixed-weight ResNet-18 on a
 * fixed input, printing each pass's time and a checksum of the logits. The
 * checksum is the same for every thread count, so a run under the profiler
 * can be compared with a plain one.
 */
#define _POSIX_C_SOURCE 200809L
#include "workloads/resnet18/gemm.h"
#include "workloads/resnet18/pool.h"
#include "workloads/resnet18/resnet18.h"
#include "workloads/resnet18/selftest.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WEIGHT_SEED 0x2e5e718ull
#define MAX_BATCH   256
#define MAX_THREADS 256

struct options {
	int batch, iters, threads, warmup;
	int selftest;
	int profile_ab;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: resnet18 [--batch N] [--iters N] [--threads N] [--warmup N]\n"
		"       resnet18 --selftest\n"
		"\n"
		"Runs ResNet-18 inference (3x224x224 input, 1000 classes, float32) on\n"
		"fixed pseudo-random weights and prints the time of each pass and a\n"
		"checksum of the logits.\n"
		"\n"
		"  --batch N     images per forward pass (default 1, at most %d)\n"
		"  --iters N     timed passes (default 10)\n"
		"  --threads N   threads, including the main one (default: online CPUs)\n"
		"  --warmup N    untimed passes first (default 1)\n"
		"  --selftest    check GEMM, convolution and pooling against reference\n"
		"                code and thread-count independence, then exit 0 or 1\n"
		"  --profile-ab  with libstackprof.so preloaded: turn sampling on and off\n"
		"                for alternate timed passes (stackprof_start/stop, in\n"
		"                pairs ordered on-off, off-on, ...) and print the median\n"
		"                of the pairs' on/off time ratios (bench/overhead.sh --ab)\n"
		"  -h, --help    show this help\n"
		"\n"
		"Example:\n"
		"  resnet18 --batch 8 --threads 2 --iters 5\n"
		"  stackprof run -- ./resnet18 --batch 5\n",
		MAX_BATCH);
}

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "resnet18: %s '%s'\nTry 'resnet18 --help'.\n", msg, arg);
	return 2;
}

/* The whole of s must be a decimal integer in [min, max]. */
static int parse_int(const char *opt, const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno || v < min || v > max) {
		fprintf(stderr,
			"resnet18: %s expects an integer from %d to %d, got '%s'\n"
			"Try 'resnet18 --help'.\n",
			opt, min, max, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* Returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, struct options *o)
{
	const struct {
		const char *name;
		int min, max;
		int *value;
	} opts[] = {
	    {"--batch", 1, MAX_BATCH, &o->batch},
	    {"--iters", 1, 1000000, &o->iters},
	    {"--threads", 1, MAX_THREADS, &o->threads},
	    {"--warmup", 0, 1000000, &o->warmup},
	};

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		size_t j;

		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(arg, "--selftest")) {
			o->selftest = 1;
			continue;
		}
		if (!strcmp(arg, "--profile-ab")) {
			o->profile_ab = 1;
			continue;
		}
		for (j = 0; j < RN_ARRAY_SIZE(opts); j++) {
			size_t len = strlen(opts[j].name);
			const char *value;

			if (strncmp(arg, opts[j].name, len))
				continue;
			if (arg[len] == '=') {
				value = arg + len + 1;
			} else if (arg[len] == '\0') {
				if (i + 1 >= argc)
					return usage_error("missing value for", arg);
				value = argv[++i];
			} else {
				continue;
			}
			if (parse_int(opts[j].name, value, opts[j].min, opts[j].max, opts[j].value))
				return 2;
			break;
		}
		if (j == RN_ARRAY_SIZE(opts))
			return usage_error(arg[0] == '-' ? "unknown option" : "unexpected argument",
					   arg);
	}
	return -1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* FNV-1a over the logits' bit patterns: any change in any bit shows. */
static uint32_t checksum(const float *v, size_t count)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < count; i++) {
		uint32_t bits;

		memcpy(&bits, &v[i], sizeof(bits));
		for (int b = 0; b < 4; b++) {
			h ^= (bits >> (8 * b)) & 0xff;
			h *= 16777619u;
		}
	}
	return h;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/*
 * --profile-ab: stackprof's start/stop, found at run time so that resnet18
 * needs no stackprof to build or run. Pass i of the timed passes is
 * profiled or not by ab_on(i): pairs (2k, 2k+1) alternate on-off, off-on.
 */
static void (*ab_start)(void), (*ab_stop)(void);

static int ab_on(int i)
{
	return (i % 2) == ((i / 2) % 2);
}

static int ab_init(void)
{
	ab_start = (void (*)(void))dlsym(RTLD_DEFAULT, "stackprof_start");
	ab_stop = (void (*)(void))dlsym(RTLD_DEFAULT, "stackprof_stop");
	int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "stackprof_active");
	if (!ab_start || !ab_stop || !active || !active()) {
		fprintf(stderr, "resnet18: --profile-ab needs libstackprof.so preloaded "
				"(LD_PRELOAD) and sampling\n");
		return -1;
	}
	return 0;
}

static void ab_report(const double *times, int iters)
{
	int pairs = iters / 2, n = 0;
	double *r = malloc((size_t)(pairs + 1) * sizeof(*r));
	double *on = malloc((size_t)(pairs + 1) * sizeof(*on));
	double *off = malloc((size_t)(pairs + 1) * sizeof(*off));
	if (!r || !on || !off || pairs < 1)
		goto out;
	for (int k = 0; k < pairs; k++) {
		int a = 2 * k, b = 2 * k + 1;
		double t_on = ab_on(a) ? times[a] : times[b];
		double t_off = ab_on(a) ? times[b] : times[a];
		on[n] = t_on;
		off[n] = t_off;
		r[n++] = t_on / t_off;
	}
	qsort(r, (size_t)n, sizeof(*r), cmp_double);
	double q1 = r[n / 4], q3 = r[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
	printf("resnet18: profile-ab: %d pairs, sampling on %.2f ms, off %.2f ms (medians), "
	       "ratio %.4f (IQR %.4f-%.4f)\n",
	       n, median(on, n), median(off, n), median(r, n), q1, q3);
out:
	free(r);
	free(on);
	free(off);
}

static int run(const struct options *o)
{
	struct rn_pool *pool = NULL;
	struct rn_resnet18 *net = NULL;
	float *input = NULL;
	double *times = NULL, gflop;
	uint32_t first = 0;
	int status = 1;

	pool = rn_pool_new(o->threads, rn_sgemm_scratch_size());
	if (!pool) {
		fprintf(stderr, "resnet18: cannot start %d threads: %s\n", o->threads,
			strerror(errno));
		goto out;
	}
	net = rn_resnet18_new(o->batch, WEIGHT_SEED);
	input = malloc((size_t)o->batch * RN_IMAGE_FLOATS * sizeof(float));
	times = malloc((size_t)o->iters * sizeof(*times));
	if (!net || !input || !times) {
		fprintf(stderr, "resnet18: out of memory for batch %d\n", o->batch);
		goto out;
	}
	rn_resnet18_input(input, o->batch);
	gflop = rn_resnet18_flops(net) * o->batch / 1e9;
	if (o->profile_ab && ab_init() < 0)
		goto out;

	for (int i = 0; i < o->warmup + o->iters; i++) {
		int timed = i >= o->warmup;
		if (o->profile_ab)
			(!timed || ab_on(i - o->warmup) ? ab_start : ab_stop)();
		double t0 = now_ms(), ms;
		const float *logits = resnet18_forward(net, pool, input, o->batch);
		uint32_t sum;

		ms = now_ms() - t0;
		sum = checksum(logits, (size_t)o->batch * RN_CLASSES);
		if (i == 0) {
			first = sum;
		} else if (sum != first) {
			fprintf(stderr, "resnet18: pass %d checksum 0x%08x differs from 0x%08x\n",
				i + 1, sum, first);
			goto out;
		}
		if (timed)
			times[i - o->warmup] = ms;
		printf("%s %d/%d: %.2f ms, %.1f GFLOP/s\n", timed ? "iter" : "warmup",
		       timed ? i - o->warmup + 1 : i + 1, timed ? o->iters : o->warmup, ms,
		       gflop / (ms / 1e3));
	}

	if (o->profile_ab) {
		ab_start();
		ab_report(times, o->iters);
	}
	printf("resnet18: batch %d, threads %d, %d iters, median %.1f ms/iter, checksum 0x%08x\n",
	       o->batch, o->threads, o->iters, median(times, o->iters), first);
	status = 0;
out:
	free(times);
	free(input);
	rn_resnet18_free(net);
	rn_pool_free(pool);
	return status;
}

int main(int argc, char **argv)
{
	struct options o = {.batch = 1, .iters = 10, .threads = default_threads(), .warmup = 1};
	int status = parse_args(argc, argv, &o);

	if (status < 0)
		status = o.selftest ? rn_selftest() : run(&o);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "resnet18: error writing output: %s\n", strerror(errno));
		return 1;
	}
	return status;
}
