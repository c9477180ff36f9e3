/*
 * cputime.c - what the CPU timers share (cputime.h).
 */
#include "sampler/sources/cputime.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"

uint64_t sp_cputime_rand(struct sp_thread *t)
{
	uint64_t x = t->rnd;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	t->rnd = x;
	return x;
}

void sp_cputime_seed(struct sp_thread *t)
{
	t->rnd = sp_now_ns() ^ ((uint64_t)sp_gettid() << 32) ^ 0x9e3779b97f4a7c15ull;
	if (!t->rnd)
		t->rnd = 1;
}

uint64_t sp_cpu_weight(struct sp_thread *t, const siginfo_t *si, uint64_t cpu_now)
{
	(void)si;
	uint64_t period_ns = sp_g.period_ns;
	uint64_t last = atomic_load_explicit(&t->cpu_last, memory_order_relaxed);
	if (!last || cpu_now <= last)
		return period_ns;
	uint64_t w = cpu_now - last;
	if (w > period_ns + period_ns / 2)
		atomic_fetch_add_explicit(&t->overruns, w / period_ns - 1, memory_order_relaxed);
	return w;
}

void sp_cputime_resume_base(struct sp_thread *t)
{
	struct timespec ts;
	uint64_t now = 0;
	if (t->cpu_clk && clock_gettime(t->cpu_clk, &ts) == 0)
		now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	atomic_store_explicit(&t->cpu_last, now, memory_order_relaxed);
}
