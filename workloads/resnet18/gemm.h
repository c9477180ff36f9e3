/*
 * Single-precision GEMM, C = A * B, all row-major, for convolution as
 * matrix product: A is the weight matrix, B the im2col matrix.
 *
 * Goto/BLIS structure so that each level of the cache hierarchy holds the
 * operand that is reused from it: a KC x NC panel of B is packed once and
 * streamed from L2/L3, an MC x KC block of A is packed into L2, and the
 * MR x NR micro-kernel keeps its C tile in SIMD registers while a KC x NR
 * sliver of B stays in L1. Packing also pads ragged edges with zeros so the
 * micro-kernel never branches on shape.
 *
 * The micro-kernel is plain C: GCC vectorizes its fixed-size inner loops to
 * SSE2 at -O2, so no -march flag or intrinsic is needed.
 *
 * Work is split over the pool as a 2-D grid of C blocks picked to minimise
 * packing that threads duplicate. Every element of C sums its K products in
 * the same order whatever the grid, so results are bit-identical for any
 * thread count.
 */
#ifndef RN_GEMM_H
#define RN_GEMM_H

#include <stddef.h>

struct rn_pool;

/* Register tile: 4 x 8 floats is 8 SSE accumulators, half the XMM file. */
#define RN_GEMM_MR 4
#define RN_GEMM_NR 8
/*
 * Cache blocking for Zen 3 (32 KiB L1d, 512 KiB L2 per core): an 8 KiB B
 * sliver in L1, a 128 KiB A block in L2. KC 128-384, MC 64-256 and NC up to
 * 4096 all measured within noise of this; the micro-kernel dominates.
 */
#define RN_GEMM_KC 256
#define RN_GEMM_MC 128
#define RN_GEMM_NC 1024

/* Per-thread scratch sgemm() needs from the pool: packed A, packed B, one tile. */
size_t rn_sgemm_scratch_size(void);

/*
 * C[m][n] = A[m][k] * B[k][n], overwriting C, split across every thread of
 * pool. Leading dimensions are in elements. The pool's scratch areas must be
 * at least rn_sgemm_scratch_size() bytes.
 */
void sgemm(struct rn_pool *pool, int m, int n, int k, const float *a, long lda, const float *b,
	   long ldb, float *c, long ldc);

/*
 * The pieces below are public so that each is its own named frame in a
 * profile; only sgemm() calls them.
 */

/* Packs rows [0, mc) x cols [0, kc) of a into MR-row slivers, zero-padded. */
void pack_a(int mc, int kc, const float *a, long lda, float *dst);

/* Packs rows [0, kc) x cols [0, nc) of b into NR-column slivers, zero-padded. */
void pack_b(int kc, int nc, const float *b, long ldb, float *dst);

/*
 * One MR x NR tile: c = a_sliver * b_sliver (accumulate == 0) or
 * c += a_sliver * b_sliver. The slivers come from pack_a() and pack_b().
 */
void sgemm_kernel(int kc, const float *restrict a, const float *restrict b, float *restrict c,
		  long ldc, int accumulate);

#endif
