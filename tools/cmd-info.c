/*
 * cmd-info.c - `stackprof info`: what a raw profile holds, without the
 * stacks: header, timer and achieved rate, counts, threads, modules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "export/model.h"
#include "tools/summary.h"
#include "export/textfmt.h"

enum { OPT_NO_SYMBOLS = 256 };

static const struct sp_cli_opt sp_info_opts[] = {
    {'m', 'm', "modules", NULL, "list the recorded modules with their build-ids"},
    {OPT_NO_SYMBOLS, 0, "no-symbols", NULL, "skip symbolization (no thread-root figure; faster)"},
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_info_cmd = {
    .name = "info",
    .synopsis = "[options] PROFILE",
    .about = "Prints the profile's header (command, pid, start time, timer, rate), its\n"
	     "counts (samples, drops, unwind errors, truncated stacks), the event kinds\n"
	     "it holds (cpu, and others: the views show one, --event), the achieved\n"
	     "sampling rate, the share of samples that unwound to a thread root, and its\n"
	     "threads. A profile cut off at its last flush (the program was killed or\n"
	     "crashed before it finished the profile, or the file was cut or copied\n"
	     "while being written) is reported up to there, and its status line says\n"
	     "where the file ends and how many samples were read. Exits 1 if the\n"
	     "profile is unreadable or damaged (reported up to the damage).\n",
    .opts = sp_info_opts,
    .more = "examples:\n"
	    "  stackprof info rn.prof\n"
	    "  stackprof info -m rn.prof\n",
};

static void sp_print_build_id(FILE *f, const struct sp_prof_module *m)
{
	for (uint32_t i = 0; i < m->build_id_len; i++)
		fprintf(f, "%02x", m->build_id[i]);
	if (!m->build_id_len)
		fputs("-", f);
}

/* Prints everything info shows about p (m: its model, or NULL) to f. */
static void sp_info_print(FILE *f, const char *path, const struct sp_profile *p,
			  const struct sp_model *m, bool modules)
{
	const struct sp_prof_header *h = &p->header;
	time_t t = (time_t)(h->start_realtime_ns / 1000000000u);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(f, "profile:     %s (%llu bytes, format version %u)\n", path,
		(unsigned long long)p->file_bytes, h->version);
	fprintf(f, "status:      %s%s%s\n",
		p->status == SP_READ_OK		 ? "complete"
		: p->status == SP_READ_TRUNCATED ? "cut off at its last flush"
						 : "corrupt",
		p->status == SP_READ_OK ? "" : ": ", p->error);
	char sig[32];
	if (sp_summary_end_signal(p, sig, sizeof(sig)))
		fprintf(f, "ended:       by %s, %s\n", sig,
			(p->stats.flags & SP_STATS_SIGNAL_OUTSIDE)
			    ? "sent from outside at its default action: stackprof finished the "
			      "profile, then let it end the process"
			    : "sent by the program to itself after it finished the profile");
	fprintf(f, "command:     %s\n", h->cmdline);
	fprintf(f, "executable:  %s\n", h->exe);
	fprintf(f, "pid:         %d (parent %d) on %s\n", h->pid, h->ppid, h->hostname);
	fprintf(f, "started:     %s\n", when);
	if (p->has_stats) {
		char dur[32];
		sp_textfmt_time(dur, sizeof(dur), p->stats.time_ns);
		fprintf(f, "duration:    %s (wall, until the last flush)\n", dur);
	}
	fprintf(f, "timer:       %s, %s, %u Hz requested per thread, max depth %u\n",
		p->stats.timer ? p->stats.timer : h->timer, sp_summary_periods(p), h->freq_hz,
		h->max_depth);
	struct sp_summary s;
	sp_summary_compute(p, m, &s);
	if (p->stats.timer_why && p->stats.timer_why[0])
		fprintf(f, "timer why:   %s\n", p->stats.timer_why);
	fprintf(f, "achieved:    %.1f Hz (samples per CPU-second of sampled threads)\n",
		s.achieved_hz);
	double per, share;
	if (sp_summary_sample_cost(p, &s, &per, &share))
		fprintf(f,
			"interrupts:  %.1f us each on this host (as stackprof run measured it with "
			"an empty handler, or STACKPROF_TIMER_IRQ_NS said); with the handler, "
			"%.1f us a sample: %.2f%% of the sampled CPU\n",
			(double)p->stats.timer_irq_ns / 1e3, per / 1e3, 100.0 * share);
	else if (p->stats.timer && !strcmp(p->stats.timer, "perf-sigtrap"))
		fprintf(f, "interrupts:  not measured (`stackprof run` measures perf-sigtrap's "
			   "on each host)\n");
	char cpu[32];
	sp_textfmt_time(cpu, sizeof(cpu), s.weight_ns);
	fprintf(f, "samples:     %llu (%s of CPU), %zu unique stacks\n",
		(unsigned long long)s.samples, cpu, p->n_stacks);
	/* each kind with its count and total weight in its own unit: the views
	 * show one at a time (--event) */
	char events[1024];
	sp_cli_list_events(p, "\n             ", events, sizeof(events));
	fprintf(f, "events:      %s\n", events);
	const struct sp_prof_stats *st = &p->stats;
	fprintf(f, "drops:       %llu (sample buffer full, or no memory for a stack)\n",
		(unsigned long long)st->drops);
	fprintf(f, "unwind errs: %llu (%.2f%% of samples)\n", (unsigned long long)st->unwind_errors,
		100.0 * s.unwind_err_fraction);
	fprintf(f, "truncated:   %llu (deeper than %u frames)\n", (unsigned long long)st->truncated,
		h->max_depth);
	fprintf(f, "skipped:     %llu (while a module was being unloaded)\n",
		(unsigned long long)st->skipped);
	fprintf(f, "overruns:    %llu (timer expiries merged into one signal)\n",
		(unsigned long long)st->overruns);
	if (st->throttled)
		fprintf(f, "throttled:   %llu (the handler overran an eighth of the period)\n",
			(unsigned long long)st->throttled);
	/* the handler's own body only: the timer interrupt and the signal's
	 * delivery cost more with the perf timer (docs/BENCHMARKS.md) */
	if (st->handler_ns && s.samples)
		fprintf(
		    f,
		    "handler:     %.2f us of CPU per sample in the handler body (unwinding; not "
		    "the timer or signal delivery)\n",
		    (double)st->handler_ns / 1e3 / (double)s.samples);
	/* what stackprof's own code cost the program, next to what it sampled
	 * (files from before these fields have neither) */
	char own[160];
	if (sp_summary_own_cpu(p, &s, own, sizeof(own))) {
		fprintf(f, "own CPU:     %s\n", own);
		if (p->stats.timer_irq_ns) {
			/* the interrupts at this host's measured price, apart:
			 * an estimate, where the rest is clocked */
			char irq[32];
			sp_textfmt_time(irq, sizeof(irq), p->stats.timer_irq_ns * s.samples);
			fprintf(
			    f,
			    "             and the timer's interrupts: ~%s more (%llu samples at "
			    "this host's measured price)\n",
			    irq, (unsigned long long)s.samples);
		} else
			fprintf(f, "             (not the kernel's timer interrupts and signal "
				   "delivery)\n");
	}
	if (p->n_pyinfos) {
		const struct sp_prof_pyinfo *pi = &p->pyinfos[p->n_pyinfos - 1];
		fprintf(f, "python:      %s\n", pi->status ? pi->status : "?");
		fprintf(f, "             %s; %zu code objects named\n",
			pi->module ? pi->module : "?", p->n_pycodes);
		if (pi->flags & SP_PYINFO_ACTIVE)
			fprintf(f,
				"             %llu unreadable frames, %llu faulting reads caught, "
				"%llu foreign thread states\n",
				(unsigned long long)st->py_unreadable,
				(unsigned long long)st->py_faults,
				(unsigned long long)st->py_bad_tstates);
	}
	if (st->handler_stack)
		fprintf(f, "stack use:   %llu KiB at most of the handler's own %u KiB stack\n",
			(unsigned long long)st->handler_stack / 1024, 64u);
	if (st->timer_fallbacks)
		fprintf(f,
			"fallbacks:   %u threads had posix-cputimer (perf descriptors ran out)\n",
			st->timer_fallbacks);
	if (st->aside)
		fprintf(f,
			"aside:       %u times the program had SIGPROF and stackprof stood aside\n",
			st->aside);
	if (st->syscalls_cut)
		fprintf(f,
			"eintr:       %llu system calls of the program returned EINTR: a sample's "
			"signal came while they waited\n",
			(unsigned long long)st->syscalls_cut);
	if (st->threads_missed) {
		char missed[32];
		sp_textfmt_time(missed, sizeof(missed), st->missed_ns);
		fprintf(f,
			"missed:      %llu threads not sampled (no slot for them: "
			"STACKPROF_MAX_THREADS, vm.max_map_count or memory), %s of CPU not in the "
			"samples\n",
			(unsigned long long)st->threads_missed, missed);
	}
	if (st->stray_signals)
		fprintf(
		    f,
		    "stray:       %llu signals came to threads stackprof does not sample (not set "
		    "up yet, or made by a raw clone() on another thread's TLS)\n",
		    (unsigned long long)st->stray_signals);
	uint64_t frames = st->unwind_fast + st->unwind_slow;
	if (frames)
		fprintf(f,
			"unwinder:    %.1f%% of frames stepped by cached CFI rules, %.1f%% by "
			"libunwind\n",
			100.0 * (double)st->unwind_fast / (double)frames,
			100.0 * (double)st->unwind_slow / (double)frames);
	if (s.scanned)
		fprintf(
		    f,
		    "stack scans: %llu samples (%.1f%%) stepped over code in no known module by "
		    "scanning the stack (JIT code, or a module loaded a moment before)\n",
		    (unsigned long long)s.scanned, 100.0 * (double)s.scanned / (double)s.samples);
	if (st->unwind_checked)
		fprintf(f, "unwind check: %llu of %llu samples differ between the two unwinders\n",
			(unsigned long long)st->unwind_differ, (unsigned long long)s.samples);
	if (s.rooted_fraction >= 0)
		fprintf(f, "thread root: %.1f%% of samples unwound to _start/clone3/start_thread\n",
			100.0 * s.rooted_fraction);
	fprintf(f, "modules:     %zu, JIT symbols: %zu, named ranges: %zu\n", p->n_modules,
		p->n_jits, p->n_ranges);
	if (p->n_windows) {
		size_t in = 0;
		for (size_t i = 0; i < p->n_samples; i++)
			in += sp_profile_window(p, p->samples[i].time_ns) != NULL;
		fprintf(f,
			"windows:     %zu (profile() blocks), %zu of %zu samples inside; the other "
			"commands show only those\n",
			p->n_windows, in, p->n_samples);
	}
	if (m) {
		fprintf(f, "threads:     %zu\n", m->n_threads);
		for (size_t i = 0; i < m->n_threads; i++) {
			const struct sp_mthread *th = &m->threads[i];
			char tt[32];
			sp_textfmt_time(tt, sizeof(tt), th->weight_ns);
			fprintf(f, "  %-8d %-16s %8llu samples  %12s\n", th->tid,
				th->name[0] ? th->name : "-", (unsigned long long)th->samples, tt);
		}
		/* "no DWARF" notes are many on a distro (one per stripped library):
		 * counted unless -m asks for the module list */
		const char *w = sp_symbolizer_warnings(m->sym);
		int quiet = 0;
		while (w && *w) {
			const char *nl = strchr(w, '\n');
			int len = nl ? (int)(nl - w) : (int)strlen(w);
			bool note = strstr(w, "no DWARF") && (!nl || strstr(w, "no DWARF") < nl);
			if (note && !modules)
				quiet++;
			else
				fprintf(f, "symbols:     %.*s\n", len, w);
			w += len + (nl ? 1 : 0);
		}
		if (quiet)
			fprintf(
			    f,
			    "symbols:     %d modules without DWARF debug info: names from their "
			    "ELF symbol tables (-m lists them)\n",
			    quiet);
	}
	if (modules) {
		fprintf(f, "%-18s %-18s %-40s %s\n", "start", "end", "build-id", "path");
		for (size_t i = 0; i < p->n_modules; i++) {
			const struct sp_prof_module *md = &p->modules[i];
			fprintf(f, "%#-18llx %#-18llx ", (unsigned long long)md->start,
				(unsigned long long)md->end);
			sp_print_build_id(f, md);
			fprintf(f, "%*s %s%s%s\n",
				md->build_id_len ? (int)(40 - 2 * md->build_id_len) : 39, "",
				md->path, md->flags & SP_MOD_DLOPEN ? " (dlopen)" : "",
				md->unload_ns ? " (unloaded)" : "");
		}
	}
}

int sp_cmd_info(int argc, char **argv)
{
	bool modules = false, symbols = true;
	struct sp_cli_args a;
	struct sp_profile *p = NULL;
	struct sp_model *m = NULL;
	int rc, c;

	sp_cli_args_init(&a, &sp_info_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		if (c == 'm')
			modules = true;
		else if (c == OPT_NO_SYMBOLS)
			symbols = false;
	}
	if (c < 0 || !sp_cli_operands(&a, 1, "one PROFILE")) {
		rc = a.rc;
		goto out;
	}
	rc = SP_EXIT_ERROR;
	p = sp_cli_read_profile(a.operands[0]);
	if (!p)
		goto out;
	if (symbols) {
		struct sp_model_opts mo;
		memset(&mo, 0, sizeof(mo));
		mo.no_ranges = true;
		mo.all_samples = true; /* info describes the whole file */
		mo.cache_dir = sp_cli_cache_dir();
		m = sp_model_build(p, &mo);
	}
	sp_info_print(stdout, a.operands[0], p, m, modules);
	/* everything readable was printed; a damaged profile's data is partial */
	rc = sp_cli_finish_output(stdout, "-");
	if (rc == SP_EXIT_OK && p->status == SP_READ_CORRUPT)
		rc = SP_EXIT_ERROR;
out:
	sp_model_free(m);
	sp_profile_free(p);
	sp_cli_args_release(&a);
	return rc;
}
