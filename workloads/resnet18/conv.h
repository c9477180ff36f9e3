/*
 * 2-D convolution lowered to GEMM, the way Caffe and PyTorch's CPU
 * "slow_conv2d" do it: im2col unfolds every receptive field of one image
 * into a column, then one sgemm() multiplies the [cout][cin*k*k] weights by
 * that [cin*k*k][oh*ow] matrix, which lands directly in NCHW order. Costs
 * k*k times the input in scratch memory, buys GEMM speed for every shape.
 *
 * Square kernels, equal stride and padding on both axes, no bias (in
 * ResNet a batch norm always follows).
 */
#ifndef RN_CONV_H
#define RN_CONV_H

#include "workloads/resnet18/rn.h"

#include <stddef.h>

struct rn_pool;

struct rn_conv {
	int cin, cout, k, stride, pad;
	float *weight; /* [cout][cin][k][k], PyTorch's layout */
};

/*
 * Allocates the weights, Kaiming-uniform for a ReLU network (std
 * sqrt(2 / fan_in)) drawn from rng. Returns 0 or -ENOMEM.
 */
int rn_conv_init(struct rn_conv *conv, int cin, int cout, int k, int stride, int pad,
		 struct rn_rng *rng);

/* Frees the weights; accepts a zeroed or released conv. */
void rn_conv_release(struct rn_conv *conv);

/* Output extent along one axis for an input extent of in. */
int rn_conv_out_dim(const struct rn_conv *conv, int in);

/* Floats of im2col scratch conv2d_forward() needs for an h x w input. */
size_t rn_conv_col_floats(const struct rn_conv *conv, int h, int w);

/* Multiply-add flops (2 per MAC) of one image of h x w. */
double rn_conv_flops(const struct rn_conv *conv, int h, int w);

/*
 * Unfolds one image in[cin][h][w] into col[cin*k*k][oh*ow], zero where the
 * window hangs over the padding. Rows are split across the pool.
 */
void im2col(struct rn_pool *pool, const struct rn_conv *conv, const float *in, int h, int w,
	    float *col);

/*
 * out[n][cout][oh][ow] = conv(in[n][cin][h][w]). col is scratch of
 * rn_conv_col_floats() floats; out must not overlap in or col.
 */
void conv2d_forward(struct rn_pool *pool, const struct rn_conv *conv, const float *in, int n, int h,
		    int w, float *out, float *col);

#endif
