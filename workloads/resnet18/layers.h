/*
 * The non-GEMM layers of ResNet inference, each a separate memory-bound pass
 * over NCHW float32 tensors, as in an eager framework: no fusion into the
 * convolution, so a profile shows what each layer really costs.
 *
 * Every pass is split across the pool in cache-line sized pieces, and each
 * output element is computed by one thread in a fixed order, so results do
 * not depend on the thread count.
 */
#ifndef RN_LAYERS_H
#define RN_LAYERS_H

#include "workloads/resnet18/rn.h"

struct rn_pool;

/* Inference batch norm with running statistics, as after model.eval(). */
struct rn_batchnorm {
	int channels;
	float eps;
	float *gamma, *beta, *mean, *var; /* [channels] each */
};

struct rn_linear {
	int in, out;
	float *weight; /* [out][in] */
	float *bias;   /* [out] */
};

/*
 * Allocates the parameters and draws them from rng: gamma around
 * gamma_scale, small beta and mean, variance near 1. Returns 0 or -ENOMEM.
 */
int rn_batchnorm_init(struct rn_batchnorm *bn, int channels, float gamma_scale, struct rn_rng *rng);
void rn_batchnorm_release(struct rn_batchnorm *bn);

/* PyTorch's default nn.Linear init, U(-1/sqrt(in), 1/sqrt(in)). Returns 0 or -ENOMEM. */
int rn_linear_init(struct rn_linear *fc, int in, int out, struct rn_rng *rng);
void rn_linear_release(struct rn_linear *fc);

/* x[n][channels][hw] = (x - mean) / sqrt(var + eps) * gamma + beta, in place. */
void batchnorm_forward(struct rn_pool *pool, const struct rn_batchnorm *bn, float *x, int n,
		       long hw);

/* x = max(x, 0), in place. */
void relu_forward(struct rn_pool *pool, float *x, long count);

/* The end of a residual block: x = max(x + identity, 0), in place. */
void add_relu(struct rn_pool *pool, float *x, const float *identity, long count);

/*
 * out[n][c][oh][ow] = max over each k x k window of in[n][c][h][w], padding
 * ignored (as if -inf).
 */
void maxpool2d_forward(struct rn_pool *pool, const float *in, int n, int c, int h, int w, int k,
		       int stride, int pad, float *out);

/* Global average pool: out[n][c] = mean of in[n][c][hw]. */
void avgpool_forward(struct rn_pool *pool, const float *in, int n, int c, long hw, float *out);

/* out[n][fc->out] = in[n][fc->in] * weight^T + bias. */
void linear_forward(struct rn_pool *pool, const struct rn_linear *fc, const float *in, int n,
		    float *out);

#endif
