/*
 * real.c - the libc definitions behind this library's own (real.h).
 */
#include "sampler/base/real.h"

#include <dlfcn.h>

void *sp_real_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

void *sp_real_dlopen(const char *file, int mode)
{
	return SP_REAL(dlopen)(file, mode);
}
