#include "workloads/resnet18/layers.h"

#include "workloads/resnet18/pool.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

/* 16 floats: one cache line, so no two threads write the same line. */
#define LINE_FLOATS 16

struct elementwise_args {
	float *x;
	const float *y;
	long count;
};

struct batchnorm_args {
	const struct rn_batchnorm *bn;
	float *x;
	long planes, hw;
};

struct maxpool_args {
	const float *in;
	float *out;
	long planes;
	int h, w, oh, ow, k, stride, pad;
};

struct avgpool_args {
	const float *in;
	float *out;
	long planes, hw;
};

struct linear_args {
	const struct rn_linear *fc;
	const float *in;
	float *out;
	int n;
};

static void fill_uniform(float *dst, int count, float lo, float hi, struct rn_rng *rng)
{
	for (int i = 0; i < count; i++)
		dst[i] = rn_rng_uniform(rng, lo, hi);
}

int rn_batchnorm_init(struct rn_batchnorm *bn, int channels, float gamma_scale, struct rn_rng *rng)
{
	float *p = malloc(4 * (size_t)channels * sizeof(float));

	bn->channels = channels;
	bn->eps = 1e-5f;
	bn->gamma = p;
	if (!p)
		return -ENOMEM;
	bn->beta = p + channels;
	bn->mean = p + 2 * channels;
	bn->var = p + 3 * channels;
	fill_uniform(bn->gamma, channels, 0.8f * gamma_scale, 1.2f * gamma_scale, rng);
	fill_uniform(bn->beta, channels, -0.1f, 0.1f, rng);
	fill_uniform(bn->mean, channels, -0.1f, 0.1f, rng);
	fill_uniform(bn->var, channels, 0.8f, 1.2f, rng);
	return 0;
}

void rn_batchnorm_release(struct rn_batchnorm *bn)
{
	/* One allocation backs all four vectors. */
	free(bn->gamma);
	bn->gamma = bn->beta = bn->mean = bn->var = NULL;
}

int rn_linear_init(struct rn_linear *fc, int in, int out, struct rn_rng *rng)
{
	float bound = 1.0f / sqrtf((float)in);

	fc->in = in;
	fc->out = out;
	fc->weight = malloc((size_t)in * out * sizeof(float));
	fc->bias = malloc((size_t)out * sizeof(float));
	if (!fc->weight || !fc->bias) {
		rn_linear_release(fc);
		return -ENOMEM;
	}
	fill_uniform(fc->weight, in * out, -bound, bound, rng);
	fill_uniform(fc->bias, out, -bound, bound, rng);
	return 0;
}

void rn_linear_release(struct rn_linear *fc)
{
	free(fc->weight);
	free(fc->bias);
	fc->weight = fc->bias = NULL;
}

/*
 * The elementwise loops work in fixed 16-float chunks: GCC's -O2 vectorizer
 * only takes loops whose trip count is a known multiple of the vector width,
 * and the scalar "x > 0 ? x : 0" it would otherwise emit is a branch that
 * mispredicts on half of all activations. The chunks compile to MAXPS.
 */
static void relu_span(float *restrict x, long count)
{
	long i = 0;

	for (; i + LINE_FLOATS <= count; i += LINE_FLOATS)
		for (int j = 0; j < LINE_FLOATS; j++)
			x[i + j] = x[i + j] > 0.0f ? x[i + j] : 0.0f;
	for (; i < count; i++)
		x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void add_relu_span(float *restrict x, const float *restrict y, long count)
{
	long i = 0;

	for (; i + LINE_FLOATS <= count; i += LINE_FLOATS) {
		for (int j = 0; j < LINE_FLOATS; j++) {
			float v = x[i + j] + y[i + j];

			x[i + j] = v > 0.0f ? v : 0.0f;
		}
	}
	for (; i < count; i++) {
		float v = x[i] + y[i];

		x[i] = v > 0.0f ? v : 0.0f;
	}
}

static RN_NOINLINE void batchnorm_task(void *arg, int tid, int nthreads)
{
	const struct batchnorm_args *g = arg;
	const struct rn_batchnorm *bn = g->bn;
	long p0, p1;

	rn_split(g->planes, nthreads, tid, 1, &p0, &p1);
	for (long p = p0; p < p1; p++) {
		int c = (int)(p % bn->channels);
		float scale = bn->gamma[c] / sqrtf(bn->var[c] + bn->eps);
		float shift = bn->beta[c] - bn->mean[c] * scale;
		float *restrict x = g->x + p * g->hw;
		long i = 0;

		for (; i + LINE_FLOATS <= g->hw; i += LINE_FLOATS)
			for (int j = 0; j < LINE_FLOATS; j++)
				x[i + j] = x[i + j] * scale + shift;
		for (; i < g->hw; i++)
			x[i] = x[i] * scale + shift;
	}
}

RN_NOINLINE void batchnorm_forward(struct rn_pool *pool, const struct rn_batchnorm *bn, float *x,
				   int n, long hw)
{
	struct batchnorm_args g = {
	    .bn = bn,
	    .x = x,
	    .planes = (long)n * bn->channels,
	    .hw = hw,
	};

	rn_pool_run(pool, batchnorm_task, &g);
}

static RN_NOINLINE void relu_task(void *arg, int tid, int nthreads)
{
	const struct elementwise_args *g = arg;
	long i0, i1;

	rn_split(g->count, nthreads, tid, LINE_FLOATS, &i0, &i1);
	relu_span(g->x + i0, i1 - i0);
}

RN_NOINLINE void relu_forward(struct rn_pool *pool, float *x, long count)
{
	struct elementwise_args g = {.x = x, .count = count};

	rn_pool_run(pool, relu_task, &g);
}

static RN_NOINLINE void add_relu_task(void *arg, int tid, int nthreads)
{
	const struct elementwise_args *g = arg;
	long i0, i1;

	rn_split(g->count, nthreads, tid, LINE_FLOATS, &i0, &i1);
	add_relu_span(g->x + i0, g->y + i0, i1 - i0);
}

RN_NOINLINE void add_relu(struct rn_pool *pool, float *x, const float *identity, long count)
{
	struct elementwise_args g = {.x = x, .y = identity, .count = count};

	rn_pool_run(pool, add_relu_task, &g);
}

static RN_NOINLINE void maxpool2d_task(void *arg, int tid, int nthreads)
{
	const struct maxpool_args *g = arg;
	long p0, p1;

	rn_split(g->planes, nthreads, tid, 1, &p0, &p1);
	for (long p = p0; p < p1; p++) {
		const float *in = g->in + p * g->h * g->w;
		float *out = g->out + p * g->oh * g->ow;

		for (int y = 0; y < g->oh; y++) {
			int y0 = y * g->stride - g->pad, y1 = y0 + g->k;

			y0 = y0 < 0 ? 0 : y0;
			y1 = y1 > g->h ? g->h : y1;
			for (int x = 0; x < g->ow; x++) {
				int x0 = x * g->stride - g->pad, x1 = x0 + g->k;
				float m = -FLT_MAX;

				x0 = x0 < 0 ? 0 : x0;
				x1 = x1 > g->w ? g->w : x1;
				for (int iy = y0; iy < y1; iy++)
					for (int ix = x0; ix < x1; ix++)
						m = in[iy * g->w + ix] > m ? in[iy * g->w + ix] : m;
				out[y * g->ow + x] = m;
			}
		}
	}
}

RN_NOINLINE void maxpool2d_forward(struct rn_pool *pool, const float *in, int n, int c, int h,
				   int w, int k, int stride, int pad, float *out)
{
	struct maxpool_args g = {
	    .in = in,
	    .out = out,
	    .planes = (long)n * c,
	    .h = h,
	    .w = w,
	    .oh = (h + 2 * pad - k) / stride + 1,
	    .ow = (w + 2 * pad - k) / stride + 1,
	    .k = k,
	    .stride = stride,
	    .pad = pad,
	};

	rn_pool_run(pool, maxpool2d_task, &g);
}

static RN_NOINLINE void avgpool_task(void *arg, int tid, int nthreads)
{
	const struct avgpool_args *g = arg;
	long p0, p1;

	rn_split(g->planes, nthreads, tid, 1, &p0, &p1);
	for (long p = p0; p < p1; p++) {
		const float *in = g->in + p * g->hw;
		float sum = 0.0f;

		for (long i = 0; i < g->hw; i++)
			sum += in[i];
		g->out[p] = sum / (float)g->hw;
	}
}

RN_NOINLINE void avgpool_forward(struct rn_pool *pool, const float *in, int n, int c, long hw,
				 float *out)
{
	struct avgpool_args g = {.in = in, .out = out, .planes = (long)n * c, .hw = hw};

	rn_pool_run(pool, avgpool_task, &g);
}

/*
 * Eight partial sums in a fixed order: GCC vectorizes the fixed-width inner
 * loop, and the result is the same on any thread.
 */
static float dot(const float *a, const float *b, int len)
{
	float part[8] = {0};
	float sum = 0.0f;
	int i = 0;

	for (; i + 8 <= len; i += 8)
		for (int j = 0; j < 8; j++)
			part[j] += a[i + j] * b[i + j];
	for (int j = 0; j < 8; j++)
		sum += part[j];
	for (; i < len; i++)
		sum += a[i] * b[i];
	return sum;
}

static RN_NOINLINE void linear_task(void *arg, int tid, int nthreads)
{
	const struct linear_args *g = arg;
	const struct rn_linear *fc = g->fc;
	long o0, o1;

	rn_split(fc->out, nthreads, tid, LINE_FLOATS, &o0, &o1);
	for (long o = o0; o < o1; o++) {
		const float *w = fc->weight + o * fc->in;

		for (int img = 0; img < g->n; img++)
			g->out[(long)img * fc->out + o] =
			    dot(w, g->in + (long)img * fc->in, fc->in) + fc->bias[o];
	}
}

RN_NOINLINE void linear_forward(struct rn_pool *pool, const struct rn_linear *fc, const float *in,
				int n, float *out)
{
	struct linear_args g = {.fc = fc, .in = in, .out = out, .n = n};

	rn_pool_run(pool, linear_task, &g);
}
