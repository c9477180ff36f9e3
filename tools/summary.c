#define _GNU_SOURCE /* sigabbrev_np */
#include "tools/summary.h"

#include <stdlib.h>
#include <string.h>

#include "export/textfmt.h"

int sp_summary_is_root(const char *func)
{
	static const char *const roots[] = {
	    "_start",
	    "__libc_start_main",
	    "__libc_start_call_main",
	    "start_thread",
	    "clone",
	    "clone3",
	    "__clone",
	    "__clone3",
	};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(func, roots[i]))
			return 1;
	return 0;
}

/*
 * Whether a raw stack reaches its thread's root: it was neither cut at the
 * maximum depth nor stopped by an unwinder error, and its outermost frame is
 * marked outermost by its CFI (undefined return address, as glibc marks
 * _start and clone3), or is named like a root. The CFI test needs no debug
 * info; the name test covers code whose CFI says nothing.
 */
static bool sp_stack_rooted(struct sp_symbolizer *sym, const struct sp_prof_stack *st)
{
	if (!st || !st->depth || (st->flags & (SP_STACK_TRUNCATED | SP_STACK_UNWIND_ERR)))
		return false;
	uint64_t pc = st->pcs[st->depth - 1];
	bool ret = st->depth > 1;
	if (sp_symbolizer_is_outermost(sym, pc, ret))
		return true;
	const struct sp_frame *fr;
	int n = sp_symbolizer_lookup(sym, pc, ret, &fr);
	return n > 0 && sp_summary_is_root(fr[n - 1].func);
}

void sp_summary_compute(const struct sp_profile *p, const struct sp_model *m, struct sp_summary *s)
{
	memset(s, 0, sizeof(*s));
	uint64_t errs = 0;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct sp_prof_sample *x = &p->samples[i];
		if (x->event != SP_EVENT_CPU)
			continue; /* the timer's figures: other kinds are not CPU time */
		s->samples++;
		s->weight_ns += x->weight_ns;
		const struct sp_prof_stack *st = sp_profile_stack(p, x->stack);
		if (st && (st->flags & SP_STACK_UNWIND_ERR))
			errs++;
		if (st && (st->flags & SP_STACK_JIT_SCAN))
			s->scanned++;
	}
	s->unwind_err_fraction = s->samples ? (double)errs / (double)s->samples : 0;
	/* samples per sampled CPU-second: what the timer really delivered */
	double cpu_s = (double)s->weight_ns / 1e9;
	s->achieved_hz = cpu_s > 0 ? (double)s->samples / cpu_s : 0;
	s->rooted_fraction = -1;
	if (m) {
		/* per raw stack once: stacks repeat across samples */
		signed char *memo = calloc(p->n_stacks + 1, 1);
		uint64_t rooted = 0;
		for (size_t i = 0; memo && i < p->n_samples; i++) {
			if (p->samples[i].event != SP_EVENT_CPU)
				continue;
			uint32_t id = p->samples[i].stack;
			if (!memo[id])
				memo[id] =
				    sp_stack_rooted(m->sym, sp_profile_stack(p, id)) ? 1 : -1;
			rooted += memo[id] > 0;
		}
		free(memo);
		s->rooted_fraction = s->samples ? (double)rooted / (double)s->samples : 0;
		/* the threads that ran: one that took no sample (a pool that
		 * never woke) is listed by info, not counted here */
		for (size_t i = 0; i < m->n_threads; i++)
			s->threads += m->threads[i].samples > 0;
	}
}

bool sp_summary_own_cpu(const struct sp_profile *p, const struct sp_summary *s, char *out,
			size_t len)
{
	const struct sp_prof_stats *st = &p->stats;
	if (!st->writer_ns && !st->setup_ns)
		return false;
	char hn[32], wn[32], sn[32];
	sp_textfmt_time(hn, sizeof(hn), st->handler_ns);
	sp_textfmt_time(wn, sizeof(wn), st->writer_ns);
	sp_textfmt_time(sn, sizeof(sn), st->setup_ns);
	double own = (double)(st->handler_ns + st->writer_ns + st->setup_ns);
	snprintf(out, len, "%.2f%% of the sampled CPU: handler %s, writer %s, set-up %s",
		 s->weight_ns ? 100.0 * own / (double)s->weight_ns : 0.0, hn, wn, sn);
	return true;
}

bool sp_summary_sample_cost(const struct sp_profile *p, const struct sp_summary *s,
			    double *per_sample_ns, double *share)
{
	const struct sp_prof_stats *st = &p->stats;
	if (!st->timer_irq_ns || !s->samples || !s->weight_ns)
		return false;
	*per_sample_ns = (double)st->timer_irq_ns + (double)st->handler_ns / (double)s->samples;
	*share = *per_sample_ns * (double)s->samples / (double)s->weight_ns;
	return true;
}

const char *sp_summary_periods(const struct sp_profile *p)
{
	/* perf timers are hrtimers on each thread's CPU time: periodic, but
	 * not tied to the kernel tick; POSIX CPU timers are, hence random */
	return p->stats.randomized ? "random periods" : "fixed period";
}

void sp_summary_print_counts(FILE *f, const struct sp_profile *p, const struct sp_summary *s,
			     const char *prefix)
{
	const struct sp_prof_stats *st = &p->stats;
	char cpu[32];
	sp_textfmt_time(cpu, sizeof(cpu), s->weight_ns);
	fprintf(f, "%s%llu samples, %s of CPU", prefix, (unsigned long long)s->samples, cpu);
	if (s->threads)
		fprintf(f, " on %zu sampled thread%s", s->threads, s->threads == 1 ? "" : "s");
	fprintf(f, "; timer %s (%s%s%s) at %u Hz requested, %.0f Hz achieved per busy thread\n",
		st->timer ? st->timer : p->header.timer, sp_summary_periods(p),
		st->timer_why && st->timer_why[0] ? ", " : "", st->timer_why ? st->timer_why : "",
		p->header.freq_hz, s->achieved_hz);
	double per, share;
	if (sp_summary_sample_cost(p, s, &per, &share) && share > 0.02) {
		/* the rate at which the same sample costs about 1% */
		unsigned hz = (unsigned)(0.01 * 1e9 / per);
		hz = hz >= 100 ? hz / 100 * 100 : hz >= 10 ? hz / 10 * 10 : hz ? hz : 1;
		char lower[64] = "";
		if (hz < p->header.freq_hz)
			snprintf(lower, sizeof(lower), "-F %u (~1%%), or ", hz);
		fprintf(f,
			"%swarning: each sample cost the program ~%.0f us of CPU here (the timer's "
			"interrupt %.1f us on this host; the handler %.1f us): ~%.1f%% of its CPU "
			"at %.0f Hz. For less: %s--timer posix (no interrupt of its own, but it "
			"fires on the kernel's tick, so a loop locked to the tick is sampled at "
			"the same few points)\n",
			prefix, per / 1e3, (double)st->timer_irq_ns / 1e3,
			(per - (double)st->timer_irq_ns) / 1e3, 100.0 * share, s->achieved_hz,
			lower);
	}
	if (st->timer_fallbacks)
		fprintf(f,
			"%s%u thread%s had posix-cputimer: the perf descriptors stackprof may "
			"hold ran out\n",
			prefix, st->timer_fallbacks, st->timer_fallbacks == 1 ? "" : "s");
	if (st->aside)
		fprintf(f,
			"%sthe program took SIGPROF %u time%s: stackprof stood aside meanwhile "
			"and sampled again when it was given back\n",
			prefix, st->aside, st->aside == 1 ? "" : "s");
	if (st->syscalls_cut)
		fprintf(f,
			"%swarning: %llu of the program's system calls returned EINTR because a "
			"sample's signal came while they waited (timer %s); a program that does "
			"not retry them sees a difference (docs/SAMPLER.md, \"Waits cut short\")\n",
			prefix, (unsigned long long)st->syscalls_cut,
			st->timer ? st->timer : p->header.timer);
	if (st->threads_missed) {
		char missed[32];
		sp_textfmt_time(missed, sizeof(missed), st->missed_ns);
		fprintf(f,
			"%swarning: %llu thread%s not sampled, with %s of CPU that the profile "
			"leaves out: stackprof had no slot for them. It samples up to "
			"STACKPROF_MAX_THREADS threads at once (65536 by default), and only as "
			"many as a quarter of the kernel's vm.max_map_count has room for: raise "
			"the one the program hit (docs/SAMPLER.md, \"Many threads\")\n",
			prefix, (unsigned long long)st->threads_missed,
			st->threads_missed == 1 ? " was" : "s were", missed);
	}
	/* the names `stackprof info` uses, each counted apart */
	fprintf(f,
		"%sdrops %llu, unwind errors %llu (%.1f%%), truncated %llu, skipped %llu, "
		"throttled %llu, overruns %llu\n",
		prefix, (unsigned long long)st->drops, (unsigned long long)st->unwind_errors,
		100.0 * s->unwind_err_fraction, (unsigned long long)st->truncated,
		(unsigned long long)st->skipped, (unsigned long long)st->throttled,
		(unsigned long long)st->overruns);
	if (s->rooted_fraction >= 0 && s->samples)
		fprintf(f, "%s%.1f%% of samples unwound to a thread root (_start, clone3, ...)\n",
			prefix, 100.0 * s->rooted_fraction);
	char own[160];
	if (s->samples && sp_summary_own_cpu(p, s, own, sizeof(own)))
		fprintf(f, "%sown CPU: %s\n", prefix, own);
	/* Python: frames read, or why not (the interpreter's last word) */
	if (p->n_pyinfos && p->pyinfos[p->n_pyinfos - 1].status)
		fprintf(f, "%s%s\n", prefix, p->pyinfos[p->n_pyinfos - 1].status);
	char sig[32];
	if (sp_summary_end_signal(p, sig, sizeof(sig)))
		fprintf(f, "%sthe program %s by %s; the profile is complete\n", prefix,
			(p->stats.flags & SP_STATS_SIGNAL_OUTSIDE) ? "was ended" : "ended itself",
			sig);
	if (p->status == SP_READ_TRUNCATED)
		fprintf(f,
			"%snote: the profile ends at its last flush (the process was killed or "
			"ended without finishing it): %zu sample%s read, the last moments are "
			"missing\n",
			prefix, p->n_samples, p->n_samples == 1 ? "" : "s");
	else if (p->status != SP_READ_OK)
		fprintf(f,
			"%swarning: the profile is corrupt: %s; using the %zu samples read before "
			"that: this summary is partial\n",
			prefix, p->error, p->n_samples);
}

bool sp_summary_end_signal(const struct sp_profile *p, char *out, size_t len)
{
	if (!p->has_stats || !(p->stats.flags & SP_STATS_SIGNAL) || p->stats.signal <= 0)
		return false;
	const char *abbrev = sigabbrev_np(p->stats.signal);
	if (abbrev)
		snprintf(out, len, "SIG%s", abbrev);
	else
		snprintf(out, len, "signal %d", (int)p->stats.signal);
	return true;
}

struct sp_top_row {
	const char *func;
	const char *file;
	unsigned line;
	const char *module;
	uint64_t self_ns;
};

static int sp_cmp_rows(const void *a, const void *b)
{
	const struct sp_top_row *x = a, *y = b;
	if (x->self_ns != y->self_ns)
		return x->self_ns < y->self_ns ? 1 : -1;
	return strcmp(x->func, y->func);
}

void sp_summary_print_top(FILE *f, const struct sp_model *m, size_t n, const char *prefix)
{
	/* self time by function: the leaf frame of each merged stack */
	struct sp_top_row *rows = calloc(m->n_frames ? m->n_frames : 1, sizeof(*rows));
	if (!rows)
		return;
	size_t nrows = 0;
	for (size_t i = 0; i < m->n_stacks; i++) {
		const struct sp_mstack *st = &m->stacks[i];
		if (!st->n)
			continue;
		const struct sp_mframe *fr = &m->frames[st->frames[st->n - 1]];
		size_t j;
		for (j = 0; j < nrows; j++)
			if (!strcmp(rows[j].func, fr->func) &&
			    (rows[j].module == fr->module ||
			     (rows[j].module && fr->module && !strcmp(rows[j].module, fr->module))))
				break;
		if (j == nrows) {
			rows[nrows++] =
			    (struct sp_top_row){fr->func, fr->file, fr->line, fr->module, 0};
		}
		rows[j].self_ns += st->weight_ns;
	}
	qsort(rows, nrows, sizeof(*rows), sp_cmp_rows);
	if (nrows)
		fprintf(f, "%s%8s  %10s  %s\n", prefix, "Self %", "Self CPU", "Function (file)");
	for (size_t i = 0; i < nrows && i < n; i++) {
		char t[32];
		sp_textfmt_time(t, sizeof(t), rows[i].self_ns);
		double pct = m->total_weight_ns
				 ? 100.0 * (double)rows[i].self_ns / (double)m->total_weight_ns
				 : 0;
		fprintf(f, "%s%7.2f%%  %10s  %s", prefix, pct, t, rows[i].func);
		if (rows[i].file) {
			const char *base = strrchr(rows[i].file, '/');
			fprintf(f, " (%s)", base ? base + 1 : rows[i].file);
		} else if (rows[i].module && !strchr(rows[i].func, '+')) {
			/* [vdso] is bracketed already */
			fprintf(f, rows[i].module[0] == '[' ? " %s" : " [%s]", rows[i].module);
		}
		fputc('\n', f);
	}
	free(rows);
}

/* Runtimes whose own self time is overhead, by the start of their file name. */
static const struct sp_hint {
	const char *module; /* file name prefix */
	const char *what;
	const char *knobs;
} sp_hints[] = {
    {"libgomp.so",
     "GNU OpenMP's runtime (libgomp): its worker threads spin-waiting at barriers "
     "and for work",
     "OMP_WAIT_POLICY=passive lets idle workers sleep (GOMP_SPINCOUNT shortens the spin), and "
     "OMP_NUM_THREADS or torch.set_num_threads() sets how many there are"},
    {"libomp.so", "LLVM OpenMP's runtime (libomp): its worker threads spin-waiting",
     "KMP_BLOCKTIME=0 lets idle workers sleep at once, and OMP_NUM_THREADS or "
     "torch.set_num_threads() sets how many there are"},
    {"libiomp5.so", "Intel OpenMP's runtime (libiomp5): its worker threads spin-waiting",
     "KMP_BLOCKTIME=0 lets idle workers sleep at once, and OMP_NUM_THREADS or "
     "torch.set_num_threads() sets how many there are"},
};

void sp_summary_print_hints(FILE *f, const struct sp_model *m, const char *prefix)
{
	uint64_t self[sizeof(sp_hints) / sizeof(sp_hints[0])] = {0};
	for (size_t i = 0; i < m->n_stacks; i++) {
		const struct sp_mstack *st = &m->stacks[i];
		if (!st->n)
			continue;
		const char *mod = m->frames[st->frames[st->n - 1]].module;
		const char *base = mod ? strrchr(mod, '/') : NULL;
		base = base ? base + 1 : mod;
		for (size_t h = 0; base && h < sizeof(sp_hints) / sizeof(sp_hints[0]); h++)
			if (!strncmp(base, sp_hints[h].module, strlen(sp_hints[h].module)))
				self[h] += st->weight_ns;
	}
	for (size_t h = 0; h < sizeof(sp_hints) / sizeof(sp_hints[0]); h++) {
		if (!m->total_weight_ns || self[h] * 10 < m->total_weight_ns)
			continue;
		fprintf(f, "%shint: %.0f%% of the CPU is in %s; %s\n", prefix,
			100.0 * (double)self[h] / (double)m->total_weight_ns, sp_hints[h].what,
			sp_hints[h].knobs);
	}
}
