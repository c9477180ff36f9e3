/*
 * ResNet-18 inference (He et al. 2015) with torchvision's exact layer
 * shapes: 3x224x224 input, 7x7/2 stem, 3x3/2 max pool, four stages of two
 * BasicBlocks (64, 128, 256, 512 channels; stages 2-4 open with a stride-2
 * block and a 1x1/2 projection shortcut), global average pool and a
 * 1000-way classifier. float32, NCHW, ~3.6 GFLOP per image.
 *
 * The weights are not trained: they are drawn from a fixed-seed RNG with
 * Kaiming scaling, which is enough for realistic cost (the arithmetic does
 * not depend on the values) and keeps activations finite so the logits make
 * a stable checksum.
 */
#ifndef RN_RESNET18_H
#define RN_RESNET18_H

#include "workloads/resnet18/conv.h"
#include "workloads/resnet18/layers.h"

#include <stdint.h>

#define RN_IMAGE_C	3
#define RN_IMAGE_HW	224
#define RN_IMAGE_FLOATS (RN_IMAGE_C * RN_IMAGE_HW * RN_IMAGE_HW)
#define RN_CLASSES	1000

struct rn_pool;
struct rn_resnet18;

struct rn_basic_block {
	struct rn_conv conv1, conv2;
	struct rn_batchnorm bn1, bn2;
	int has_downsample;
	struct rn_conv ds_conv; /* 1x1 stride-2 projection when shape changes */
	struct rn_batchnorm ds_bn;
};

/*
 * Builds the model with weights from seed and activation memory for up to
 * max_batch images. Returns NULL on allocation failure.
 */
struct rn_resnet18 *rn_resnet18_new(int max_batch, uint64_t seed);

/* Accepts NULL. */
void rn_resnet18_free(struct rn_resnet18 *net);

/* Flops (2 per multiply-add) of one image's forward pass. */
double rn_resnet18_flops(const struct rn_resnet18 *net);

/* Fills batch deterministic, image-like normalised inputs [batch][3][224][224]. */
void rn_resnet18_input(float *dst, int batch);

/*
 * Runs batch <= max_batch images through the network on pool and returns
 * the logits [batch][1000], owned by net and valid until the next call.
 * Bit-identical for any pool size.
 */
const float *resnet18_forward(struct rn_resnet18 *net, struct rn_pool *pool, const float *input,
			      int batch);

/*
 * One residual block: out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)).
 * tmp and ds are scratch the size of out; col is im2col scratch.
 */
void basic_block_forward(struct rn_pool *pool, const struct rn_basic_block *blk, const float *x,
			 int n, int h, int w, float *out, float *tmp, float *ds, float *col);

#endif
