#include "workloads/resnet18/conv.h"

#include "workloads/resnet18/gemm.h"
#include "workloads/resnet18/pool.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct im2col_args {
	const struct rn_conv *conv;
	const float *in;
	int h, w, oh, ow;
	float *col;
};

int rn_conv_init(struct rn_conv *conv, int cin, int cout, int k, int stride, int pad,
		 struct rn_rng *rng)
{
	size_t count = (size_t)cout * cin * k * k;
	float bound = sqrtf(6.0f / (float)(cin * k * k));

	conv->cin = cin;
	conv->cout = cout;
	conv->k = k;
	conv->stride = stride;
	conv->pad = pad;
	conv->weight = malloc(count * sizeof(float));
	if (!conv->weight)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		conv->weight[i] = rn_rng_uniform(rng, -bound, bound);
	return 0;
}

void rn_conv_release(struct rn_conv *conv)
{
	free(conv->weight);
	conv->weight = NULL;
}

int rn_conv_out_dim(const struct rn_conv *conv, int in)
{
	return (in + 2 * conv->pad - conv->k) / conv->stride + 1;
}

size_t rn_conv_col_floats(const struct rn_conv *conv, int h, int w)
{
	return (size_t)conv->cin * conv->k * conv->k * (size_t)rn_conv_out_dim(conv, h) *
	       (size_t)rn_conv_out_dim(conv, w);
}

double rn_conv_flops(const struct rn_conv *conv, int h, int w)
{
	return 2.0 * conv->cout * rn_conv_col_floats(conv, h, w);
}

/* Output columns [lo, hi) whose input column ow*stride - pad + kj is inside [0, w). */
static void valid_cols(int w, int ow, int stride, int offset, int *lo, int *hi)
{
	int a = offset < 0 ? (-offset + stride - 1) / stride : 0;
	int b = w - offset <= 0 ? 0 : (w - offset + stride - 1) / stride;

	*lo = a < ow ? a : ow;
	*hi = b < ow ? b : ow;
	if (*hi < *lo)
		*hi = *lo;
}

/* One col row per (channel, ki, kj): a shifted, strided copy of the image. */
static RN_NOINLINE void im2col_task(void *arg, int tid, int nthreads)
{
	const struct im2col_args *g = arg;
	const struct rn_conv *conv = g->conv;
	int k = conv->k, s = conv->stride;
	long rows = (long)conv->cin * k * k, r0, r1;
	size_t ohw = (size_t)g->oh * g->ow;

	rn_split(rows, nthreads, tid, 1, &r0, &r1);
	for (long r = r0; r < r1; r++) {
		int c = (int)(r / (k * k)), ki = (int)(r / k % k), kj = (int)(r % k);
		const float *plane = g->in + (size_t)c * g->h * g->w;
		float *dst = g->col + (size_t)r * ohw;
		int off = kj - conv->pad, lo, hi;

		valid_cols(g->w, g->ow, s, off, &lo, &hi);
		for (int y = 0; y < g->oh; y++, dst += g->ow) {
			int ih = y * s - conv->pad + ki;
			const float *row;

			if (ih < 0 || ih >= g->h) {
				memset(dst, 0, (size_t)g->ow * sizeof(float));
				continue;
			}
			row = plane + (size_t)ih * g->w;
			memset(dst, 0, (size_t)lo * sizeof(float));
			if (s == 1) {
				memcpy(dst + lo, row + lo + off, (size_t)(hi - lo) * sizeof(float));
			} else {
				for (int x = lo; x < hi; x++)
					dst[x] = row[x * s + off];
			}
			memset(dst + hi, 0, (size_t)(g->ow - hi) * sizeof(float));
		}
	}
}

RN_NOINLINE void im2col(struct rn_pool *pool, const struct rn_conv *conv, const float *in, int h,
			int w, float *col)
{
	struct im2col_args g = {
	    .conv = conv,
	    .in = in,
	    .h = h,
	    .w = w,
	    .oh = rn_conv_out_dim(conv, h),
	    .ow = rn_conv_out_dim(conv, w),
	    .col = col,
	};

	rn_pool_run(pool, im2col_task, &g);
}

RN_NOINLINE void conv2d_forward(struct rn_pool *pool, const struct rn_conv *conv, const float *in,
				int n, int h, int w, float *out, float *col)
{
	int oh = rn_conv_out_dim(conv, h), ow = rn_conv_out_dim(conv, w);
	int kdim = conv->cin * conv->k * conv->k, ohw = oh * ow;
	/* A pointwise conv's input already is the column matrix. */
	int direct = conv->k == 1 && conv->stride == 1 && conv->pad == 0;

	for (int img = 0; img < n; img++) {
		const float *x = in + (size_t)img * conv->cin * h * w;
		float *y = out + (size_t)img * conv->cout * ohw;

		if (!direct)
			im2col(pool, conv, x, h, w, col);
		sgemm(pool, conv->cout, ohw, kdim, conv->weight, kdim, direct ? x : col, ohw, y,
		      ohw);
	}
}
