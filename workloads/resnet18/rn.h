/*
 * Shared bits of the resnet18 demo workload.
 *
 * The workload exists to be profiled, so every hot function is kept as its
 * own frame with RN_NOINLINE: GCC would otherwise inline or clone
 * (".constprop.0") small kernels at -O2 and the flame graph would lose the
 * names a reader looks for. The RNG is here because weights, inputs and the
 * self-test must all draw from the same reproducible stream definition.
 */
#ifndef RN_H
#define RN_H

#include <stdint.h>

/* clang has no noclone attribute (nor GCC's cloning pass). */
#if defined(__has_attribute)
#if __has_attribute(noclone)
#define RN_NOINLINE __attribute__((noinline, noclone))
#endif
#endif
#ifndef RN_NOINLINE
#define RN_NOINLINE __attribute__((noinline))
#endif

#define RN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Memory handed to the GEMM and copied in cache lines: 64-byte aligned. */
#define RN_ALIGN 64

/* xorshift64*: tiny, fast, and identical on every platform and run. */
struct rn_rng {
	uint64_t state;
};

static inline void rn_rng_init(struct rn_rng *rng, uint64_t seed)
{
	/* A zero state would make xorshift emit zeros forever. */
	rng->state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static inline uint64_t rn_rng_next(struct rn_rng *rng)
{
	uint64_t x = rng->state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng->state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform in [lo, hi), from the top 24 bits so every value is exact in float. */
static inline float rn_rng_uniform(struct rn_rng *rng, float lo, float hi)
{
	float u = (float)(rn_rng_next(rng) >> 40) * (1.0f / 16777216.0f);

	return lo + (hi - lo) * u;
}

#endif
