#include "workloads/resnet18/selftest.h"

#include "workloads/resnet18/conv.h"
#include "workloads/resnet18/gemm.h"
#include "workloads/resnet18/layers.h"
#include "workloads/resnet18/pool.h"
#include "workloads/resnet18/resnet18.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_SEED 0x7e57ull
#define MAX_POOL  3

struct gemm_shape {
	int m, n, k;
};

struct conv_shape {
	int n, cin, cout, h, w, k, stride, pad;
};

/* Tile edges, K blocking (KC 256), M blocking (MC 128), N blocking (NC 1024). */
static const struct gemm_shape gemm_shapes[] = {
    {1, 1, 1},	     {3, 5, 7},	      {4, 8, 256},    {5, 9, 257},     {17, 33, 300},
    {130, 1100, 70}, {64, 3136, 147}, {512, 49, 600}, {37, 1030, 513},
};

static const struct conv_shape conv_shapes[] = {
    {2, 3, 8, 19, 17, 7, 2, 3},	  /* the stem's shape: 7x7/2, pad 3 */
    {1, 16, 12, 10, 10, 3, 1, 1}, /* 3x3/1 */
    {2, 8, 16, 9, 9, 1, 2, 0},	  /* 1x1/2 projection shortcut */
    {1, 5, 4, 7, 6, 3, 2, 1},	  /* 3x3/2 on an odd, non-square image */
    {1, 4, 6, 5, 5, 1, 1, 0},	  /* pointwise: GEMM on the input, no im2col */
    {1, 2, 3, 4, 4, 5, 1, 2},	  /* window wider than the image */
};

static float *random_floats(size_t count, struct rn_rng *rng)
{
	float *p = malloc((count ? count : 1) * sizeof(float));

	for (size_t i = 0; p && i < count; i++)
		p[i] = rn_rng_uniform(rng, -1.0f, 1.0f);
	return p;
}

/*
 * Double-precision reference; err is |c - ref| over the float rounding
 * bound (k + 2) * eps * sum |a * b|, so <= 1 passes.
 */
static double gemm_error(int m, int n, int k, const float *a, long lda, const float *b, long ldb,
			 const float *c, long ldc)
{
	double worst = 0.0;

	for (int i = 0; i < m; i++) {
		for (int j = 0; j < n; j++) {
			double ref = 0.0, mag = 0.0, err;

			for (int p = 0; p < k; p++) {
				double t = (double)a[i * lda + p] * b[p * ldb + j];

				ref += t;
				mag += fabs(t);
			}
			err = fabs(c[i * ldc + j] - ref) /
			      ((k + 2) * (double)FLT_EPSILON * mag + DBL_MIN);
			worst = err > worst ? err : worst;
		}
	}
	return worst;
}

static int check_gemm(struct rn_pool **pools, const struct gemm_shape *s, struct rn_rng *rng)
{
	/* Padded leading dimensions catch any code that assumes packed rows. */
	long lda = s->k + 3, ldb = s->n + 5, ldc = s->n + 2;
	float *a = random_floats((size_t)s->m * lda, rng);
	float *b = random_floats((size_t)s->k * ldb, rng);
	float *c[MAX_POOL] = {NULL};
	double err = 0.0;
	int ok = a && b, same = 1;

	for (int t = 0; ok && t < MAX_POOL; t++) {
		c[t] = random_floats((size_t)s->m * ldc, rng);
		if (!c[t]) {
			ok = 0;
			break;
		}
		sgemm(pools[t], s->m, s->n, s->k, a, lda, b, ldb, c[t], ldc);
		if (t > 0)
			for (int i = 0; i < s->m; i++)
				same &= !memcmp(c[0] + i * ldc, c[t] + i * ldc,
						(size_t)s->n * sizeof(float));
	}
	if (ok)
		err = gemm_error(s->m, s->n, s->k, a, lda, b, ldb, c[0], ldc);
	ok = ok && err <= 1.0 && same;
	printf("selftest: sgemm %dx%dx%d: %s (error %.3f of bound%s)\n", s->m, s->n, s->k,
	       ok ? "ok" : "FAIL", err, same ? "" : ", differs across thread counts");
	free(a);
	free(b);
	for (int t = 0; t < MAX_POOL; t++)
		free(c[t]);
	return ok;
}

/* Direct convolution of one output element; *mag gets sum |products|. */
static double conv_ref(const struct rn_conv *cv, const float *in, int h, int w, int img, int co,
		       int y, int x, double *mag)
{
	double ref = 0.0;

	*mag = 0.0;
	for (int ci = 0; ci < cv->cin; ci++) {
		const float *plane = in + ((size_t)img * cv->cin + ci) * h * w;
		const float *kern = cv->weight + ((size_t)co * cv->cin + ci) * cv->k * cv->k;

		for (int ky = 0; ky < cv->k; ky++) {
			for (int kx = 0; kx < cv->k; kx++) {
				int iy = y * cv->stride - cv->pad + ky;
				int ix = x * cv->stride - cv->pad + kx;
				double t;

				if (iy < 0 || iy >= h || ix < 0 || ix >= w)
					continue;
				t = (double)plane[iy * w + ix] * kern[ky * cv->k + kx];
				ref += t;
				*mag += fabs(t);
			}
		}
	}
	return ref;
}

/* Worst error over the output, as a fraction of the float rounding bound. */
static double conv_error(const struct rn_conv *cv, const float *in, int n, int h, int w,
			 const float *out)
{
	int oh = rn_conv_out_dim(cv, h), ow = rn_conv_out_dim(cv, w), kk = cv->cin * cv->k * cv->k;
	double worst = 0.0;

	for (int img = 0; img < n; img++) {
		for (int co = 0; co < cv->cout; co++) {
			for (int i = 0; i < oh * ow; i++) {
				double mag, ref, err;

				ref = conv_ref(cv, in, h, w, img, co, i / ow, i % ow, &mag);
				err = fabs(*out++ - ref) /
				      ((kk + 2) * (double)FLT_EPSILON * mag + DBL_MIN);
				worst = err > worst ? err : worst;
			}
		}
	}
	return worst;
}

static int check_conv(struct rn_pool *pool, const struct conv_shape *s, struct rn_rng *rng)
{
	struct rn_conv cv = {0};
	size_t out_floats;
	float *in = NULL, *out = NULL, *col = NULL;
	double err = 0.0;
	int ok = !rn_conv_init(&cv, s->cin, s->cout, s->k, s->stride, s->pad, rng);

	if (ok) {
		out_floats = (size_t)s->n * s->cout * rn_conv_out_dim(&cv, s->h) *
			     rn_conv_out_dim(&cv, s->w);
		in = random_floats((size_t)s->n * s->cin * s->h * s->w, rng);
		out = random_floats(out_floats, rng);
		col = random_floats(rn_conv_col_floats(&cv, s->h, s->w), rng);
		ok = in && out && col;
	}
	if (ok) {
		conv2d_forward(pool, &cv, in, s->n, s->h, s->w, out, col);
		err = conv_error(&cv, in, s->n, s->h, s->w, out);
		ok = err <= 1.0;
	}
	printf("selftest: conv n%d %d->%d %dx%d k%d s%d p%d: %s (error %.3f of bound)\n", s->n,
	       s->cin, s->cout, s->h, s->w, s->k, s->stride, s->pad, ok ? "ok" : "FAIL", err);
	rn_conv_release(&cv);
	free(in);
	free(out);
	free(col);
	return ok;
}

static int check_maxpool(struct rn_pool *pool, struct rn_rng *rng)
{
	enum { N = 2, C = 3, H = 9, W = 8, K = 3, S = 2, P = 1, OH = 5, OW = 4 };
	float *in = random_floats(N * C * H * W, rng), out[N * C * OH * OW];
	int ok = in != NULL;

	if (ok)
		maxpool2d_forward(pool, in, N, C, H, W, K, S, P, out);
	for (int p = 0; ok && p < N * C; p++)
		for (int y = 0; y < OH; y++)
			for (int x = 0; x < OW; x++) {
				float m = -INFINITY;

				for (int ky = 0; ky < K; ky++)
					for (int kx = 0; kx < K; kx++) {
						int iy = y * S - P + ky, ix = x * S - P + kx;

						if (iy >= 0 && iy < H && ix >= 0 && ix < W &&
						    in[(p * H + iy) * W + ix] > m)
							m = in[(p * H + iy) * W + ix];
					}
				ok &= out[(p * OH + y) * OW + x] == m;
			}
	printf("selftest: maxpool 3x3/2 pad 1: %s\n", ok ? "ok" : "FAIL");
	free(in);
	return ok;
}

/* The whole network: finite logits, identical bits on every pool size. */
static int check_model(struct rn_pool **pools)
{
	struct rn_resnet18 *net = rn_resnet18_new(1, TEST_SEED);
	float *input = malloc(RN_IMAGE_FLOATS * sizeof(float));
	float first[RN_CLASSES];
	int ok = net && input, finite = 1, same = 1;

	if (ok)
		rn_resnet18_input(input, 1);
	for (int t = 0; ok && t < MAX_POOL; t++) {
		const float *logits = resnet18_forward(net, pools[t], input, 1);

		if (t == 0) {
			memcpy(first, logits, sizeof(first));
			for (int i = 0; i < RN_CLASSES; i++)
				finite &= isfinite(logits[i]) != 0;
		} else {
			same &= !memcmp(first, logits, sizeof(first));
		}
	}
	ok = ok && finite && same;
	printf("selftest: resnet18 forward: %s%s%s\n", ok ? "ok" : "FAIL",
	       finite ? "" : ", non-finite logits", same ? "" : ", differs across thread counts");
	rn_resnet18_free(net);
	free(input);
	return ok;
}

int rn_selftest(void)
{
	struct rn_pool *pools[MAX_POOL] = {NULL};
	struct rn_rng rng;
	int failed = 0;

	rn_rng_init(&rng, TEST_SEED);
	for (int t = 0; t < MAX_POOL; t++) {
		pools[t] = rn_pool_new(t + 1, rn_sgemm_scratch_size());
		if (!pools[t]) {
			printf("selftest: cannot start a pool of %d threads\n", t + 1);
			failed = 1;
			goto out;
		}
	}

	for (size_t i = 0; i < RN_ARRAY_SIZE(gemm_shapes); i++)
		failed |= !check_gemm(pools, &gemm_shapes[i], &rng);
	for (size_t i = 0; i < RN_ARRAY_SIZE(conv_shapes); i++)
		failed |= !check_conv(pools[i % MAX_POOL], &conv_shapes[i], &rng);
	failed |= !check_maxpool(pools[1], &rng);
	failed |= !check_model(pools);
	printf("selftest: %s\n", failed ? "FAILED" : "all passed");

out:
	for (int t = 0; t < MAX_POOL; t++)
		rn_pool_free(pools[t]);
	return failed;
}
