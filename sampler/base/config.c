#include "sampler/base/config.h"
#include "sampler/base/sys.h"
#include "format/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool sp_env_u32(const char *name, uint32_t min, uint32_t max, uint32_t *out)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || errno || s[0] == '-' || v < min || v > max) {
		sp_log("%s=%s ignored: expected a number from %u to %u; using %u", name, s, min,
		       max, *out);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

static bool sp_env_bool(const char *name)
{
	const char *s = getenv(name);
	return s && (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true"));
}

void sp_config_load(struct sp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* 100 Hz: the rate of perf's and py-spy's defaults, 1% of a core per
	 * thread at ~100 us a sample, and well under the 250 Hz kernel tick
	 * where POSIX CPU timers stay exact */
	cfg->freq_hz = 100;
	cfg->max_depth = 512;
	cfg->ring_kb = 1024;
	cfg->flush_ms = 200;
	cfg->max_threads = SP_MAX_THREADS;
	strcpy(cfg->timer, "auto");

	cfg->quiet = sp_env_bool("STACKPROF_QUIET");
	cfg->verbose = sp_env_bool("STACKPROF_VERBOSE");
	const char *out = getenv("STACKPROF_OUT");
	if (out && sp_has_control(out)) {
		/* a newline in a file name splits every message and list that
		 * names it: refused, as `run -o` refuses it (format/manifest.h) */
		char shown[512];
		if (sp_manifest_encode(out, shown, sizeof(shown)) < 0)
			strcpy(shown, "(too long to show)");
		sp_log("STACKPROF_OUT=%s holds a control character (a newline, a tab, ...); "
		       "not profiling",
		       shown);
		cfg->out_refused = true;
	}
	char cwd[2048];
	if (out && *out && *out != '/' && getcwd(cwd, sizeof(cwd)) &&
	    strlen(cwd) + strlen(out) + 2 < sizeof(cfg->out) - 32) {
		/* A relative path is the directory the process started in, for
		 * the profiles of its children and exec'ed images too: they may
		 * run somewhere else (a wrapper script that cds first). The
		 * environment carries the absolute path on to them. */
		size_t n = strlen(cwd);
		memcpy(cfg->out, cwd, n);
		cfg->out[n] = '/';
		strcpy(cfg->out + n + 1, out);
		setenv("STACKPROF_OUT", cfg->out, 1);
	} else if (out && *out) {
		if (strlen(out) >= sizeof(cfg->out) - 32)
			sp_log("STACKPROF_OUT is too long; using the default name");
		else
			strcpy(cfg->out, out);
	}
	sp_env_u32("STACKPROF_FREQ", 1, 20000, &cfg->freq_hz);
	sp_env_u32("STACKPROF_MAX_DEPTH", 8, SP_MAX_DEPTH_WORDS, &cfg->max_depth);
	sp_env_u32("STACKPROF_RING_KB", 64, 65536, &cfg->ring_kb);
	sp_env_u32("STACKPROF_FLUSH_MS", 10, 60000, &cfg->flush_ms);
	sp_env_u32("STACKPROF_MAX_THREADS", 1, SP_MAX_THREADS, &cfg->max_threads);
	sp_env_u32("STACKPROF_TIMER_IRQ_NS", 0, 10000000, &cfg->timer_irq_ns);
	const char *t = getenv("STACKPROF_TIMER");
	if (t && *t) {
		/* a CPU timer's word: the table of sources knows them
		 * (core/source.h, sp_source_choose_cpu) */
		if (strlen(t) < sizeof(cfg->timer))
			strcpy(cfg->timer, t);
		else
			sp_log("STACKPROF_TIMER=%.40s... ignored: too long; using %s", t,
			       cfg->timer);
	}
	const char *u = getenv("STACKPROF_UNWIND");
	if (u && *u) {
		if (!strcmp(u, "fast"))
			cfg->unwind = SP_UNWIND_FAST;
		else if (!strcmp(u, "libunwind"))
			cfg->unwind = SP_UNWIND_LIBUNWIND;
		else if (!strcmp(u, "check"))
			cfg->unwind = SP_UNWIND_CHECK;
		else
			sp_log(
			    "STACKPROF_UNWIND=%s ignored: expected fast, libunwind or check; using "
			    "fast",
			    u);
	}
	const char *start = getenv("STACKPROF_START");
	cfg->paused = start && !strcmp(start, "0");
	cfg->overwrite = sp_env_bool("STACKPROF_OVERWRITE");
	const char *py = getenv("STACKPROF_PYTHON");
	cfg->python = !(py && !strcmp(py, "0"));
	const char *sched = getenv("STACKPROF_SCHEDULE");
	if (sched && *sched && sp_schedule_parse(sched, &cfg->schedule) < 0)
		sp_log("STACKPROF_SCHEDULE=%s ignored: expected wait,warmup,active[,repeat]; "
		       "sampling every step",
		       sched);
}
