/*
 * cfi.c - a seed for fuzz-cfi: functions whose unwind rules take the shapes
 * the sampler's rule reader meets in compiled code: frame pointer or not,
 * callee-saved registers pushed in different orders, several epilogues
 * (DW_CFA_remember_state / restore_state), a large frame, and a function
 * that realigns its stack (DRAP: a CFA expression, which the reader leaves
 * to libunwind). Built without libc by gen-cfi-seeds.sh.
 */
#include <stdint.h>

volatile long sp_seed_sink;

__attribute__((noinline)) long leaf(long a)
{
	return a * 3 + sp_seed_sink;
}

__attribute__((noinline)) long saves(long a, long b, long c, long d)
{
	long x = leaf(a), y = leaf(b), z = leaf(c), w = leaf(d);
	return leaf(x + y) + leaf(z * w) + x * y * z * w;
}

__attribute__((noinline)) long branches(long a)
{
	if (a > 100)
		return leaf(a) + leaf(a + 1);
	if (a < -100) {
		long r = saves(a, a + 1, a + 2, a + 3);
		return r + leaf(r);
	}
	return a;
}

__attribute__((noinline)) long big_frame(long n)
{
	volatile char buf[1 << 16];
	buf[n & 0xffff] = (char)n;
	return leaf(buf[(n * 7) & 0xffff]);
}

__attribute__((noinline)) long aligned(long n)
{
	_Alignas(64) volatile char buf[256];
	volatile char *p = __builtin_alloca((unsigned long)(n & 63) + 1);
	buf[n & 255] = (char)n;
	p[0] = 1;
	return leaf(buf[(n * 3) & 255] + p[0]);
}

__attribute__((noinline)) long vla(long n)
{
	volatile char buf[n + 1];
	buf[n] = 1;
	return leaf(buf[n]);
}

void _start(void)
{
	sp_seed_sink = branches(sp_seed_sink) + big_frame(3) + aligned(5) + vla(7);
	for (;;)
		;
}
