#include "workloads/resnet18/gemm.h"

#include "workloads/resnet18/pool.h"
#include "workloads/resnet18/rn.h"

#include <string.h>

#define MR RN_GEMM_MR
#define NR RN_GEMM_NR
#define KC RN_GEMM_KC
#define MC RN_GEMM_MC
#define NC RN_GEMM_NC

/*
 * Cost of packing one float, in flops of micro-kernel time: packing streams
 * memory at a few floats per ns, the kernel does ~30 flops per ns.
 */
#define PACK_COST 8.0

struct sgemm_args {
	struct rn_pool *pool;
	int m, n, k;
	int kc; /* depth of every K block, fixed by k alone */
	int grid_m, grid_n;
	const float *a, *b;
	float *c;
	long lda, ldb, ldc;
};

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

size_t rn_sgemm_scratch_size(void)
{
	return sizeof(float) * ((size_t)MC * KC + (size_t)KC * NC + (size_t)MR * NR);
}

RN_NOINLINE void pack_a(int mc, int kc, const float *a, long lda, float *dst)
{
	for (int ir = 0; ir < mc; ir += MR) {
		const float *src = a + ir * lda;
		int mr = min_int(MR, mc - ir);

		if (mr == MR) {
			const float *r0 = src, *r1 = src + lda, *r2 = src + 2 * lda,
				    *r3 = src + 3 * lda;

			for (int p = 0; p < kc; p++) {
				dst[0] = r0[p];
				dst[1] = r1[p];
				dst[2] = r2[p];
				dst[3] = r3[p];
				dst += MR;
			}
		} else {
			for (int p = 0; p < kc; p++) {
				for (int i = 0; i < MR; i++)
					dst[i] = i < mr ? src[i * lda + p] : 0.0f;
				dst += MR;
			}
		}
	}
}

RN_NOINLINE void pack_b(int kc, int nc, const float *b, long ldb, float *dst)
{
	for (int jr = 0; jr < nc; jr += NR) {
		const float *src = b + jr;
		int nr = min_int(NR, nc - jr);

		if (nr == NR) {
			for (int p = 0; p < kc; p++) {
				memcpy(dst, src + p * ldb, NR * sizeof(float));
				dst += NR;
			}
		} else {
			for (int p = 0; p < kc; p++) {
				for (int j = 0; j < NR; j++)
					dst[j] = j < nr ? src[p * ldb + j] : 0.0f;
				dst += NR;
			}
		}
	}
}

/*
 * Written so that GCC -O2 keeps lo/hi in eight XMM registers: the j loops
 * are exactly one SSE vector each and the unrolled i loop removes all
 * indexing of the accumulators. The MR-wide A values are broadcast, the
 * NR-wide B row is loaded as two vectors.
 */
RN_NOINLINE void sgemm_kernel(int kc, const float *restrict a, const float *restrict b,
			      float *restrict c, long ldc, int accumulate)
{
	float lo[MR][4] = {{0}}, hi[MR][4] = {{0}};

	for (int p = 0; p < kc; p++) {
#pragma GCC unroll 4
		for (int i = 0; i < MR; i++) {
			const float ai = a[i];

			for (int j = 0; j < 4; j++)
				lo[i][j] += ai * b[j];
			for (int j = 0; j < 4; j++)
				hi[i][j] += ai * b[4 + j];
		}
		a += MR;
		b += NR;
	}

	for (int i = 0; i < MR; i++) {
		float *ci = c + i * ldc;

		if (accumulate) {
			for (int j = 0; j < 4; j++)
				ci[j] += lo[i][j];
			for (int j = 0; j < 4; j++)
				ci[4 + j] += hi[i][j];
		} else {
			for (int j = 0; j < 4; j++)
				ci[j] = lo[i][j];
			for (int j = 0; j < 4; j++)
				ci[4 + j] = hi[i][j];
		}
	}
}

/* Ragged edge: full tile into scratch, then only the valid corner to C. */
static void sgemm_edge(int kc, const float *a, const float *b, float *c, long ldc, int accumulate,
		       int mr, int nr, float *tile)
{
	sgemm_kernel(kc, a, b, tile, NR, 0);
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++)
			c[i * ldc + j] =
			    accumulate ? c[i * ldc + j] + tile[i * NR + j] : tile[i * NR + j];
}

/*
 * C[mc][nc] (+)= packed A block * packed B panel, one register tile at a
 * time. jr outside ir: the kc x NR sliver of B stays in L1 while every
 * A sliver streams past it from L2.
 */
static RN_NOINLINE void sgemm_macro_kernel(int mc, int nc, int kc, const float *abuf,
					   const float *bbuf, float *c, long ldc, int accumulate,
					   float *tile)
{
	for (int jr = 0; jr < nc; jr += NR) {
		int nr = min_int(NR, nc - jr);
		const float *bp = bbuf + (size_t)jr * kc;

		for (int ir = 0; ir < mc; ir += MR) {
			int mr = min_int(MR, mc - ir);
			const float *ap = abuf + (size_t)ir * kc;
			float *cp = c + ir * ldc + jr;

			if (mr == MR && nr == NR)
				sgemm_kernel(kc, ap, bp, cp, ldc, accumulate);
			else
				sgemm_edge(kc, ap, bp, cp, ldc, accumulate, mr, nr, tile);
		}
	}
}

/* One thread's block of C: rows [m0, m1), columns [n0, n1) of the grid. */
static RN_NOINLINE void sgemm_task(void *arg, int tid, int nthreads)
{
	const struct sgemm_args *g = arg;
	float *abuf = rn_pool_scratch(g->pool, tid);
	float *bbuf = abuf + (size_t)MC * KC;
	float *tile = bbuf + (size_t)KC * NC;
	long m0, m1, n0, n1;

	(void)nthreads;
	if (tid >= g->grid_m * g->grid_n)
		return;
	rn_split(g->m, g->grid_m, tid / g->grid_n, MR, &m0, &m1);
	rn_split(g->n, g->grid_n, tid % g->grid_n, NR, &n0, &n1);

	for (long jc = n0; jc < n1; jc += NC) {
		int nc = (int)(n1 - jc < NC ? n1 - jc : NC);

		for (int pc = 0; pc < g->k; pc += g->kc) {
			int kc = min_int(g->kc, g->k - pc);

			pack_b(kc, nc, g->b + pc * g->ldb + jc, g->ldb, bbuf);
			for (long ic = m0; ic < m1; ic += MC) {
				int mc = (int)(m1 - ic < MC ? m1 - ic : MC);

				pack_a(mc, kc, g->a + ic * g->lda + pc, g->lda, abuf);
				sgemm_macro_kernel(mc, nc, kc, abuf, bbuf, g->c + ic * g->ldc + jc,
						   g->ldc, pc > 0, tile);
			}
		}
	}
}

/*
 * Picks the grid_m x grid_n split with the shortest critical path: the
 * biggest block's kernel flops plus the packing it does. Splitting rows makes
 * every thread pack all of B, splitting columns all of A, so tall-skinny
 * late layers split rows and wide early layers split columns.
 */
static void sgemm_grid(struct sgemm_args *g, int nthreads)
{
	long mpanels = (g->m + MR - 1) / MR, npanels = (g->n + NR - 1) / NR;
	double best = -1.0;

	for (int gm = 1; gm <= nthreads && gm <= mpanels; gm++) {
		for (int gn = 1; gm * gn <= nthreads && gn <= npanels; gn++) {
			long mt = (mpanels + gm - 1) / gm * MR;
			long nt = (npanels + gn - 1) / gn * NR;
			double a_packs = (double)mt * g->k * (double)((nt + NC - 1) / NC);
			double cost = 2.0 * (double)mt * (double)nt * g->k +
				      PACK_COST * (a_packs + (double)nt * g->k);

			if (best < 0 || cost < best) {
				best = cost;
				g->grid_m = gm;
				g->grid_n = gn;
			}
		}
	}
}

RN_NOINLINE void sgemm(struct rn_pool *pool, int m, int n, int k, const float *a, long lda,
		       const float *b, long ldb, float *c, long ldc)
{
	struct sgemm_args g = {
	    .pool = pool,
	    .m = m,
	    .n = n,
	    .k = k,
	    .a = a,
	    .b = b,
	    .c = c,
	    .lda = lda,
	    .ldb = ldb,
	    .ldc = ldc,
	};
	int kblocks = (k + KC - 1) / KC;

	if (m <= 0 || n <= 0)
		return;
	if (k <= 0) {
		for (int i = 0; i < m; i++)
			memset(c + i * ldc, 0, (size_t)n * sizeof(float));
		return;
	}
	/* Even K blocks: 576 runs as 3 x 192, not 256 + 256 + 64. */
	g.kc = (k + kblocks - 1) / kblocks;
	sgemm_grid(&g, rn_pool_size(pool));
	rn_pool_run(pool, sgemm_task, &g);
}
