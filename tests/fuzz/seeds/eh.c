/*
 * eh.c - a seed for fuzz-symbolize: -fexceptions with a cleanup gives
 * .eh_frame a CIE with augmentation "zPLR" (personality, LSDA, FDE
 * encoding) and .gcc_except_table. The personality routine is a stub:
 * nothing runs, the file only has to link without libgcc.
 */
volatile int sp_seed_sink;

int __gcc_personality_v0(void);
int __gcc_personality_v0(void)
{
	return 0;
}

void _Unwind_Resume(void *e);
void _Unwind_Resume(void *e)
{
	for (;;)
		sp_seed_sink++;
}

static void release(int *p)
{
	sp_seed_sink -= *p;
}

__attribute__((noinline)) void may_throw(int x);
__attribute__((noinline)) void may_throw(int x)
{
	sp_seed_sink += x;
}

/* through a pointer, so the compiler cannot prove the call never throws */
void (*volatile sp_seed_call)(int) = may_throw;

__attribute__((noinline)) int guarded(int x);
__attribute__((noinline)) int guarded(int x)
{
	int held __attribute__((cleanup(release))) = x;
	sp_seed_call(held);
	return held * 2;
}

void _start(void)
{
	for (;;)
		sp_seed_sink = guarded(sp_seed_sink);
}
