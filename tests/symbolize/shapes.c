/*
 * shapes.c - code with a known shape for the symbolizer tests: a noinline
 * chain, an always_inline helper inlined into a noinline function, a
 * function with a C++ mangled name, a static function to lose in a stripped
 * copy, and an assembly symbol whose size ends before its padding.
 *
 * Lines the tests check carry "MARK:<name>" comments; the tests find them
 * in this file rather than hard-coding line numbers.
 */
#include "tests/symbolize/shapes.h"

volatile int sp_shape_sink;

/* Every probe records its return address: a PC inside its caller. */
uintptr_t sp_shape_ret[SP_SHAPE_NRET];

__attribute__((noinline)) void sp_shape_probe(int slot)
{
	sp_shape_ret[slot] = (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) int sp_shape_helper(int x)
{
	sp_shape_sink += x;
	sp_shape_probe(SP_SHAPE_RET_INLINED); /* MARK:helper-calls-probe */
	return sp_shape_sink * 3;
}

__attribute__((noinline)) int sp_shape_leaf(int x)
{
	int r = sp_shape_helper(x); /* MARK:leaf-calls-helper */
	return r + 1;
}

__attribute__((noinline)) int sp_shape_mid(int x)
{
	sp_shape_probe(SP_SHAPE_RET_PLAIN); /* MARK:mid-calls-probe */
	sp_shape_sink += 2;		    /* MARK:mid-after-probe */
	return sp_shape_leaf(x) * 2;
}

__attribute__((noinline)) int sp_shape_top(int x)
{
	return sp_shape_mid(x) + 5;
}

/* C has no namespaces; an asm label gives the symbol (and DW_AT_linkage_name) a C++ name */
__attribute__((noinline, used)) int sp_shape_cxx(int x) __asm__("_ZN2ns3fooEi");
int sp_shape_cxx(int x)
{
	return x * 7 + sp_shape_sink;
}

/* Big enough that two addresses well inside it are distinct instructions. */
static __attribute__((noinline)) int sp_shape_static(int x)
{
	int acc = 0;
	for (int i = 0; i < x; i++) {
		acc += i * sp_shape_sink;
		acc ^= acc >> 3;
		acc += sp_shape_sink * 5;
	}
	return acc;
}

int (*sp_shape_static_ptr)(int) = sp_shape_static;

/*
 * A symbol of size 1 followed by 31 bytes nothing names: binutils addr2line
 * would report sp_shape_sized for all of them, a symbol must not be.
 */
__asm__(".text\n"
	".globl sp_shape_sized\n"
	".type sp_shape_sized, @function\n"
	".p2align 4\n"
	"sp_shape_sized:\n"
	"\tret\n"
	".size sp_shape_sized, 1\n"
	".skip 31, 0xcc\n");

int sp_shape_run(int x)
{
	return sp_shape_top(x) + sp_shape_cxx(x) + sp_shape_static_ptr(x);
}
