/*
 * inline.c - a seed for fuzz-symbolize: built without libc (-nostdlib) so
 * the ELF stays a few KB, with an inline chain three deep, a static
 * function, a noinline call and a loop, so DWARF has subprograms, inlined
 * subroutines with call sites, lexical blocks and a line table.
 */
#define NOINLINE __attribute__((noinline))
#define INLINE	 static inline __attribute__((always_inline))

volatile int sp_seed_sink;

INLINE int leaf(int x)
{
	int y = x * 3;
	sp_seed_sink += y;
	return y ^ 5;
}

INLINE int middle(int x)
{
	int acc = 0;
	for (int i = 0; i < x; i++)
		acc += leaf(i);
	return acc;
}

INLINE int outer(int x)
{
	return middle(x) + middle(x + 1);
}

static NOINLINE int helper(int x)
{
	{
		int local = x + sp_seed_sink;
		sp_seed_sink = local;
	}
	return outer(x);
}

NOINLINE int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += helper(i);
	return s;
}

void _start(void)
{
	for (;;)
		sp_seed_sink = work(10);
}
