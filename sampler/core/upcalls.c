/*
 * upcalls.c - the table life/ fills for the writer (upcalls.h).
 */
#include "sampler/core/upcalls.h"

static struct sp_upcalls sp_up;

void sp_upcalls_set(const struct sp_upcalls *up)
{
	sp_up = *up;
}

bool sp_upcall_orphan_check(void)
{
	return sp_up.orphan_check ? sp_up.orphan_check() : false;
}

void sp_upcall_python_refresh(void)
{
	if (sp_up.python_refresh)
		sp_up.python_refresh();
}

uint64_t sp_upcall_missed_ns(void)
{
	return sp_up.missed_ns ? sp_up.missed_ns() : 0;
}
