/*
 * layout-dump - prints the compiled CPython layout tables (sampler/capture/pylayout.c)
 * and the header's constants, for tests/python/layout-check.sh.
 *
 *   layout-dump          every supported version
 *   layout-dump MINOR    3.MINOR only; exit 1 if there is no table for it
 */
#include <stdlib.h>

#include "tests/python/layout-fields.h"

int main(int argc, char **argv)
{
	unsigned lo = 0, hi = 99;
	if (argc > 1)
		lo = hi = (unsigned)strtoul(argv[1], NULL, 10);
	int found = 0;
	char buf[4096];
	for (unsigned m = lo; m <= hi; m++) {
		const struct sp_pylayout *l = sp_pylayout_builtin(m);
		if (!l)
			continue;
		found++;
		sp_layout_format(l, buf, sizeof buf);
		fputs(buf, stdout);
	}
	printf("const SP_PY_OWNED_BY_THREAD %d\n", SP_PY_OWNED_BY_THREAD);
	printf("const SP_PY_OWNED_BY_GENERATOR %d\n", SP_PY_OWNED_BY_GENERATOR);
	printf("const SP_PY_OWNED_BY_CSTACK %d\n", SP_PY_OWNED_BY_CSTACK);
	printf("const SP_PYSTR_KIND_SHIFT %d\n", SP_PYSTR_KIND_SHIFT);
	printf("const SP_PYSTR_COMPACT %u\n", SP_PYSTR_COMPACT);
	printf("const SP_PYSTR_ASCII %u\n", SP_PYSTR_ASCII);
	return found ? 0 : 1;
}
