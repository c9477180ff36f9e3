#include "workloads/resnet18/resnet18.h"

#include "workloads/resnet18/pool.h"

#include <stdlib.h>

#define STAGES		 4
#define BLOCKS_PER_STAGE 2
#define BLOCKS		 (STAGES * BLOCKS_PER_STAGE)
#define STEM_C		 64
#define STEM_HW		 112 /* after the 7x7/2 conv */
#define POOL_HW		 56  /* after the 3x3/2 max pool */
#define FEATURES	 512

/*
 * Residual-branch BNs start small, like torchvision's zero_init_residual
 * but not zero: variance then grows gently through the eight additions
 * instead of doubling at each, and the logits stay O(1).
 */
#define RESIDUAL_GAMMA 0.3f

#define INPUT_SEED 0x5eed1a9eull

struct rn_resnet18 {
	int max_batch;
	double flops;
	struct rn_conv conv1;
	struct rn_batchnorm bn1;
	struct rn_basic_block blocks[BLOCKS];
	struct rn_linear fc;

	/* act[0] holds the stem output; all four rotate through the blocks. */
	float *act[4];
	float *col;
	float *pooled;
	float *logits;
};

static float *alloc_floats(size_t count)
{
	size_t bytes = (count * sizeof(float) + RN_ALIGN - 1) / RN_ALIGN * RN_ALIGN;

	return aligned_alloc(RN_ALIGN, bytes ? bytes : RN_ALIGN);
}

static size_t max_size(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* Adds a conv's flops and im2col need, for an input of hw x hw, to the totals. */
static void account_conv(struct rn_resnet18 *net, const struct rn_conv *conv, int hw,
			 size_t *col_floats)
{
	net->flops += rn_conv_flops(conv, hw, hw);
	*col_floats = max_size(*col_floats, rn_conv_col_floats(conv, hw, hw));
}

static int block_init(struct rn_basic_block *blk, int cin, int cout, int stride, struct rn_rng *rng)
{
	int err;

	err = rn_conv_init(&blk->conv1, cin, cout, 3, stride, 1, rng);
	if (!err)
		err = rn_batchnorm_init(&blk->bn1, cout, 1.0f, rng);
	if (!err)
		err = rn_conv_init(&blk->conv2, cout, cout, 3, 1, 1, rng);
	if (!err)
		err = rn_batchnorm_init(&blk->bn2, cout, RESIDUAL_GAMMA, rng);
	blk->has_downsample = stride != 1 || cin != cout;
	if (!err && blk->has_downsample)
		err = rn_conv_init(&blk->ds_conv, cin, cout, 1, stride, 0, rng);
	if (!err && blk->has_downsample)
		err = rn_batchnorm_init(&blk->ds_bn, cout, 1.0f, rng);
	return err;
}

static void block_release(struct rn_basic_block *blk)
{
	rn_conv_release(&blk->conv1);
	rn_batchnorm_release(&blk->bn1);
	rn_conv_release(&blk->conv2);
	rn_batchnorm_release(&blk->bn2);
	rn_conv_release(&blk->ds_conv);
	rn_batchnorm_release(&blk->ds_bn);
}

struct rn_resnet18 *rn_resnet18_new(int max_batch, uint64_t seed)
{
	struct rn_resnet18 *net = calloc(1, sizeof(*net));
	struct rn_rng rng;
	size_t col_floats = 0, stage_floats = (size_t)max_batch * STEM_C * POOL_HW * POOL_HW;
	int cin = STEM_C, hw = POOL_HW;

	if (!net)
		return NULL;
	net->max_batch = max_batch;
	rn_rng_init(&rng, seed);

	/* Parameters are drawn in torchvision's state_dict order. */
	if (rn_conv_init(&net->conv1, RN_IMAGE_C, STEM_C, 7, 2, 3, &rng) ||
	    rn_batchnorm_init(&net->bn1, STEM_C, 1.0f, &rng))
		goto fail;
	account_conv(net, &net->conv1, RN_IMAGE_HW, &col_floats);

	for (int s = 0; s < STAGES; s++) {
		int cout = STEM_C << s;

		for (int b = 0; b < BLOCKS_PER_STAGE; b++) {
			struct rn_basic_block *blk = &net->blocks[s * BLOCKS_PER_STAGE + b];
			int stride = s > 0 && b == 0 ? 2 : 1;

			if (block_init(blk, cin, cout, stride, &rng))
				goto fail;
			account_conv(net, &blk->conv1, hw, &col_floats);
			if (blk->has_downsample)
				account_conv(net, &blk->ds_conv, hw, &col_floats);
			hw = rn_conv_out_dim(&blk->conv1, hw);
			account_conv(net, &blk->conv2, hw, &col_floats);
			cin = cout;
		}
	}
	if (rn_linear_init(&net->fc, FEATURES, RN_CLASSES, &rng))
		goto fail;
	net->flops += 2.0 * FEATURES * RN_CLASSES;

	/* Every later activation is at most the first stage's size. */
	net->act[0] = alloc_floats((size_t)max_batch * STEM_C * STEM_HW * STEM_HW);
	for (int i = 1; i < 4; i++)
		net->act[i] = alloc_floats(stage_floats);
	net->col = alloc_floats(col_floats);
	net->pooled = alloc_floats((size_t)max_batch * FEATURES);
	net->logits = alloc_floats((size_t)max_batch * RN_CLASSES);
	if (!net->act[0] || !net->act[1] || !net->act[2] || !net->act[3] || !net->col ||
	    !net->pooled || !net->logits)
		goto fail;
	return net;

fail:
	rn_resnet18_free(net);
	return NULL;
}

void rn_resnet18_free(struct rn_resnet18 *net)
{
	if (!net)
		return;
	rn_conv_release(&net->conv1);
	rn_batchnorm_release(&net->bn1);
	for (int i = 0; i < BLOCKS; i++)
		block_release(&net->blocks[i]);
	rn_linear_release(&net->fc);
	for (int i = 0; i < 4; i++)
		free(net->act[i]);
	free(net->col);
	free(net->pooled);
	free(net->logits);
	free(net);
}

double rn_resnet18_flops(const struct rn_resnet18 *net)
{
	return net->flops;
}

/*
 * A smooth per-channel gradient plus noise, roughly what a normalised photo
 * looks like to the first layer. Arithmetic only (no libm), so the checksum
 * does not depend on the C library version.
 */
void rn_resnet18_input(float *dst, int batch)
{
	struct rn_rng rng;

	rn_rng_init(&rng, INPUT_SEED);
	for (int n = 0; n < batch; n++) {
		for (int c = 0; c < RN_IMAGE_C; c++) {
			float tilt = 0.5f * (float)(c - 1) + 0.1f * (float)n;

			for (int y = 0; y < RN_IMAGE_HW; y++) {
				float fy = (float)(y - RN_IMAGE_HW / 2) / (RN_IMAGE_HW / 2);

				for (int x = 0; x < RN_IMAGE_HW; x++) {
					float fx = (float)(x - RN_IMAGE_HW / 2) / (RN_IMAGE_HW / 2);

					*dst++ = tilt * fx + 0.7f * fy * fx +
						 rn_rng_uniform(&rng, -0.5f, 0.5f);
				}
			}
		}
	}
}

RN_NOINLINE void basic_block_forward(struct rn_pool *pool, const struct rn_basic_block *blk,
				     const float *x, int n, int h, int w, float *out, float *tmp,
				     float *ds, float *col)
{
	int oh = rn_conv_out_dim(&blk->conv1, h), ow = rn_conv_out_dim(&blk->conv1, w);
	long hw = (long)oh * ow, count = (long)n * blk->conv2.cout * hw;
	const float *identity = x;

	conv2d_forward(pool, &blk->conv1, x, n, h, w, tmp, col);
	batchnorm_forward(pool, &blk->bn1, tmp, n, hw);
	relu_forward(pool, tmp, count);
	conv2d_forward(pool, &blk->conv2, tmp, n, oh, ow, out, col);
	batchnorm_forward(pool, &blk->bn2, out, n, hw);
	if (blk->has_downsample) {
		conv2d_forward(pool, &blk->ds_conv, x, n, h, w, ds, col);
		batchnorm_forward(pool, &blk->ds_bn, ds, n, hw);
		identity = ds;
	}
	add_relu(pool, out, identity, count);
}

RN_NOINLINE const float *resnet18_forward(struct rn_resnet18 *net, struct rn_pool *pool,
					  const float *input, int batch)
{
	float *stem = net->act[0], *x = net->act[1];
	int hw = POOL_HW;

	conv2d_forward(pool, &net->conv1, input, batch, RN_IMAGE_HW, RN_IMAGE_HW, stem, net->col);
	batchnorm_forward(pool, &net->bn1, stem, batch, (long)STEM_HW * STEM_HW);
	relu_forward(pool, stem, (long)batch * STEM_C * STEM_HW * STEM_HW);
	maxpool2d_forward(pool, stem, batch, STEM_C, STEM_HW, STEM_HW, 3, 2, 1, x);

	for (int i = 0; i < BLOCKS; i++) {
		const struct rn_basic_block *blk = &net->blocks[i];
		float *free_bufs[3];
		int nfree = 0;

		for (int j = 0; j < 4; j++)
			if (net->act[j] != x)
				free_bufs[nfree++] = net->act[j];
		basic_block_forward(pool, blk, x, batch, hw, hw, free_bufs[0], free_bufs[1],
				    free_bufs[2], net->col);
		x = free_bufs[0];
		hw = rn_conv_out_dim(&blk->conv1, hw);
	}

	avgpool_forward(pool, x, batch, FEATURES, (long)hw * hw, net->pooled);
	linear_forward(pool, &net->fc, net->pooled, batch, net->logits);
	return net->logits;
}
