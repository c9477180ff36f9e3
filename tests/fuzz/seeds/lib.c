/*
 * lib.c - a seed for fuzz-symbolize: a shared object (ET_DYN, .dynsym,
 * vaddr 0), a hidden function only in .symtab, and a function without a
 * size (an assembly label) for the sizeless-symbol rule.
 */
__attribute__((visibility("hidden"))) int sp_seed_hidden(int x)
{
	return x * 7 + 1;
}

int sp_seed_exported(int x)
{
	int s = 0;
	for (int i = 0; i < x; i++)
		s += sp_seed_hidden(i);
	return s;
}

__asm__(".text\n"
	".globl sp_seed_label\n"
	".type sp_seed_label, @function\n"
	"sp_seed_label:\n"
	"\tret\n");
