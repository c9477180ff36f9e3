#include "sampler/capture/unwcheck.h"
#include "sampler/capture/modules.h"
#include "sampler/base/sys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Frames kept of each stack, and how many of them come before the first
 * frame the two differ on. */
#define SP_UNWCHECK_KEEP   64
#define SP_UNWCHECK_BEFORE 8

/* Taken once per process by the handler that wins sp_kept_taken; ready
 * once the copies are made. */
static _Atomic int sp_kept_taken, sp_kept_ready;
static uint64_t sp_kept[2][SP_UNWCHECK_KEEP];
static size_t sp_kept_n[2];	/* frames kept of each */
static size_t sp_kept_depth[2]; /* each stack's whole depth */
static size_t sp_kept_from;	/* the depth of the first frame kept */
static size_t sp_kept_first;	/* the first frame the two differ on */

void sp_unwcheck_keep(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	int no = 0;
	if (!atomic_compare_exchange_strong(&sp_kept_taken, &no, 1))
		return;
	size_t d = 0;
	while (d < na && d < nb && a[d] == b[d])
		d++;
	size_t from = d > SP_UNWCHECK_BEFORE ? d - SP_UNWCHECK_BEFORE : 0;
	const uint64_t *s[2] = {a, b};
	size_t n[2] = {na, nb};
	for (int k = 0; k < 2; k++) {
		size_t left = n[k] > from ? n[k] - from : 0;
		sp_kept_n[k] = left < SP_UNWCHECK_KEEP ? left : SP_UNWCHECK_KEEP;
		memcpy(sp_kept[k], s[k] + from, sp_kept_n[k] * sizeof(uint64_t));
		sp_kept_depth[k] = n[k];
	}
	sp_kept_from = from;
	sp_kept_first = d;
	atomic_store(&sp_kept_ready, 1);
}

/* The kept frames' names: module+0xaddress (the module's own addresses,
 * as eu-addr2line -e takes them), or the bare address outside every
 * module. Made under the module lock (sp_modules_foreach), at exit. */
static char sp_kept_name[2][SP_UNWCHECK_KEEP][128];

static void sp_unwcheck_name(const struct sp_mod *m, void *arg)
{
	(void)arg;
	const char *name = m->info.dlpi_name;
	if (m->vdso)
		name = "[vdso]";
	else if (m->main || !name || !*name)
		name = program_invocation_short_name;
	else if (strrchr(name, '/'))
		name = strrchr(name, '/') + 1;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < sp_kept_n[k]; i++) {
			uint64_t pc = sp_kept[k][i];
			if (pc >= m->start && pc < m->end)
				snprintf(sp_kept_name[k][i], sizeof(sp_kept_name[k][i]),
					 "%s+0x%" PRIx64, name, pc - (uint64_t)m->info.dlpi_addr);
		}
}

void sp_unwcheck_report(void)
{
	if (!atomic_load(&sp_kept_ready))
		return;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < sp_kept_n[k]; i++)
			snprintf(sp_kept_name[k][i], sizeof(sp_kept_name[k][i]), "0x%" PRIx64,
				 sp_kept[k][i]);
	sp_modules_foreach(sp_unwcheck_name, NULL);
	sp_log("unwind check: the first sample the walks differ on, from frame %zu (%zu and %zu "
	       "frames; they differ from frame %zu), cached rules | libunwind:",
	       sp_kept_from, sp_kept_depth[0], sp_kept_depth[1], sp_kept_first);
	size_t n = sp_kept_n[0] > sp_kept_n[1] ? sp_kept_n[0] : sp_kept_n[1];
	for (size_t i = 0; i < n; i++) {
		bool same = i < sp_kept_n[0] && i < sp_kept_n[1] && sp_kept[0][i] == sp_kept[1][i];
		sp_log("  #%-3zu %s %s | %s", sp_kept_from + i, same ? " " : "*",
		       i < sp_kept_n[0] ? sp_kept_name[0][i] : "-",
		       i < sp_kept_n[1] ? sp_kept_name[1][i] : "-");
	}
}

void sp_unwcheck_atfork_child(void)
{
	atomic_store(&sp_kept_ready, 0);
	atomic_store(&sp_kept_taken, 0);
}
