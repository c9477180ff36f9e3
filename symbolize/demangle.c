#include "symbolize/demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef char *(*sp_cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static pthread_once_t sp_demangle_once = PTHREAD_ONCE_INIT;
static sp_cxa_demangle_fn sp_cxa_demangle;

static void sp_demangle_load(void)
{
	/* The handle is kept for the life of the process: the function pointer
	 * must stay valid, and unloading a C++ runtime is never safe. */
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		*(void **)&sp_cxa_demangle = dlsym(h, "__cxa_demangle");
}

bool sp_demangle_available(void)
{
	pthread_once(&sp_demangle_once, sp_demangle_load);
	return sp_cxa_demangle != NULL;
}

char *sp_demangle(const char *name)
{
	/* like eu-addr2line: only the GNU v3 ABI prefix, so C names that happen
	 * to demangle as types ("i" -> "int") are left alone */
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	if (!sp_demangle_available())
		return NULL;
	int status = -1;
	char *out = sp_cxa_demangle(name, NULL, NULL, &status);
	if (status != 0)
		return NULL; /* out is NULL on every failure status */
	return out;
}
