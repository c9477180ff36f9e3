/*
 * cmd-run.c - `stackprof run`: run a program with libstackprof.so preloaded,
 * keep its exit status and signals, then summarize the profile.
 *
 * The steps, each a function below, share one struct sp_run and one exit
 * path: read the options; check the output path (before the program starts,
 * so that a path that cannot work costs no run); set up the environment and
 * the manifest through which every profiled process names its file and any
 * error it met writing it; start the program and wait for it, passing on the
 * signals sent to us; put the new profile in place; report; end the way the
 * program ended.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/timercost.h"
#include "tools/commands.h"
#include "export/model.h"
#include "tools/summary.h"
#include "format/manifest.h"
#include "format/schedule.h"
#include "symbolize/bidcache.h"

enum {
	OPT_TIMER = 256,
	OPT_UNWIND,
	OPT_MAX_DEPTH,
	OPT_FLUSH_MS,
	OPT_TOP,
	OPT_NO_SUMMARY,
	OPT_SCHEDULE,
	OPT_PAUSED,
	OPT_ALL_SAMPLES,
	OPT_NO_CACHE,
};

static const struct sp_cli_opt sp_run_opts[] = {
    {'o', 'o', "output", "PATH",
     "raw profile path (default stackprof.<pid>.prof); an\n"
     "earlier stackprof profile there is replaced once\n"
     "the new one is written; any other file is refused;\n"
     "/dev/null profiles and keeps nothing"},
    {'F', 'F', "freq", "HZ",
     "samples per second of CPU time per thread, 1-20000\n"
     "(default 100)"},
    {OPT_TIMER, 0, "timer", "KIND",
     "auto, trap, perf, posix, thread or itimer (default\n"
     "auto: trap where perf_event is permitted, perf\n"
     "under a debugger, else posix):\n"
     "trap   perf task-clock on each thread's CPU time,\n"
     "       SIGTRAP sent by the kernel (Linux 5.13+); one\n"
     "       descriptor for every thread; not tied to the\n"
     "       kernel tick, so unbiased on loops; the\n"
     "       program's own SIGTRAP use is kept; from\n"
     "       Linux 6.12 it cuts no wait short but\n"
     "       io_uring's, rarely\n"
     "perf   the same event per thread, SIGPROF through\n"
     "       fasync (a descriptor per thread, within a\n"
     "       budget; threads beyond it get posix); CUTS\n"
     "       SHORT a wait in a system call now and then\n"
     "       (EINTR), which `stackprof info` counts\n"
     "posix  POSIX CPU timers, SIGPROF, random periods;\n"
     "       BIASED on loops that keep their phase\n"
     "       against the kernel tick: its signals come\n"
     "       only on the tick (HZ), at most one per tick\n"
     "thread a thread of stackprof's sends SIGPROF to\n"
     "       the threads running at each period; no\n"
     "       perf_event needed (containers); BIASED:\n"
     "       samples lean towards system calls where\n"
     "       IPIs are slow (docs/SAMPLER.md); CUTS SHORT\n"
     "       waits in system calls (EINTR), like perf\n"
     "itimer setitimer(ITIMER_PROF), process-wide,\n"
     "       unfair between threads; CUTS SHORT waits,\n"
     "       like perf"},
    {OPT_UNWIND, 0, "unwind", "MODE",
     "fast, libunwind or check (default fast):\n"
     "fast       each frame by its .eh_frame rule, cached\n"
     "           by address; libunwind for the frames a\n"
     "           rule can't step (signal frames, PLT)\n"
     "libunwind  libunwind for every frame\n"
     "check      both on every sample; `stackprof info`\n"
     "           counts the samples where they differ"},
    {OPT_MAX_DEPTH, 0, "max-depth", "N",
     "deepest stack kept, 8-4096 (default 512); deeper\n"
     "stacks are kept truncated and marked"},
    {OPT_FLUSH_MS, 0, "flush-ms", "N", "how often the profile is flushed to disk (default 200)"},
    {OPT_TOP, 0, "row-limit", "N", "functions shown in the summary (default 10; also --top)"},
    {OPT_TOP, 0, "top", "N", NULL},
    {OPT_NO_SUMMARY, 0, "no-summary", NULL, "print nothing but errors"},
    {OPT_SCHEDULE, 0, "schedule", "W,U,A[,R]", "sample only active steps (needs stackprof_step())"},
    {OPT_PAUSED, 0, "paused", NULL, "start with sampling off (stackprof_start() turns it on)"},
    {OPT_ALL_SAMPLES, 0, "all-samples", NULL,
     "summarize samples outside the program's profile()\nwindows too"},
    {OPT_NO_CACHE, 0, "no-cache", NULL,
     "keep no copy of the program's binaries in the\nbuild-id cache (see `stackprof cache`)"},
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_run_cmd = {
    .name = "run",
    .synopsis = "[options] [--] CMD [ARGS...]",
    .about = "Runs CMD with libstackprof.so preloaded: every thread is sampled on its own\n"
	     "CPU-time timer, stacks are unwound in the signal handler and streamed to a\n"
	     "raw profile. Children (fork) write PATH.<pid>; exec'ed programs are profiled\n"
	     "too. When CMD ends, the profiles of other processes that took no sample\n"
	     "(the short commands a shell script or pyenv's shim runs) are removed, and\n"
	     "if a program CMD exec'ed took more samples than CMD, the busiest such\n"
	     "image's profile takes PATH (CMD's own, if it took any, swaps places with\n"
	     "it). Options end at CMD: everything after it is CMD's.\n"
	     "The summary on stderr is of CMD's own process (a wrapper's busiest child\n"
	     "if CMD took almost no samples).\n"
	     "\n"
	     "CMD's exit status and signals pass through unchanged (but a run whose\n"
	     "profile could not be written exits 1 where CMD exited 0; a path that\n"
	     "cannot be created is refused before CMD starts). On a terminal, CMD\n"
	     "shares this command's process group: ^C, ^\\ and ^Z reach it by\n"
	     "themselves, and SIGINT, SIGQUIT, SIGHUP and SIGTERM sent to this\n"
	     "command by a process (kill -INT PID) are passed on, once. Without a\n"
	     "terminal (CI, scripts, timeout), CMD gets a process group of its\n"
	     "own; SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGUSR1, SIGUSR2 and SIGALRM\n"
	     "sent to this command or to its group are passed on once (after 20 ms:\n"
	     "copies that come meanwhile merge, as they would pending; timeout sends\n"
	     "two), and CMD is killed should this command be killed\n"
	     "(PR_SET_PDEATHSIG). A CMD that ends itself with SIGINT (Python after\n"
	     "KeyboardInterrupt), SIGTERM, SIGHUP or SIGQUIT still leaves a\n"
	     "complete profile.\n",
    .opts = sp_run_opts,
    .more = "environment read by libstackprof.so (set by this command from its options):\n"
	    "  STACKPROF_OUT         raw profile path (default stackprof.<pid>.prof)\n"
	    "  STACKPROF_FREQ        sampling rate in Hz per thread, 1-20000 (default 100)\n"
	    "  STACKPROF_TIMER       auto | posix | trap | perf | thread | itimer (default "
	    "auto)\n"
	    "  STACKPROF_UNWIND      fast | libunwind | check (default fast)\n"
	    "  STACKPROF_MAX_DEPTH   frames kept per stack, 8-4096 (default 512)\n"
	    "  STACKPROF_RING_KB     per-thread sample buffer, 64-65536 KiB (default 1024)\n"
	    "  STACKPROF_FLUSH_MS    flush interval, 10-60000 ms (default 200)\n"
	    "  STACKPROF_MAX_THREADS threads sampled at once, 1-65536 (default 65536);\n"
	    "                        others are counted, with their CPU time\n"
	    "  STACKPROF_SCHEDULE    wait,warmup,active[,repeat] steps (torch.profiler.schedule)\n"
	    "  STACKPROF_START       0: start paused until stackprof_start()\n"
	    "  STACKPROF_OVERWRITE   1: replace an existing STACKPROF_OUT file\n"
	    "  STACKPROF_QUIET       1: no messages from the library\n"
	    "  STACKPROF_VERBOSE     1: say where the profile goes and with which timer\n"
	    "  STACKPROF_TIMER_IRQ_NS  what one perf-sigtrap interrupt costs on this host,\n"
	    "                        for info and the summary; this command measures it\n"
	    "                        once per host (0.3 s) and keeps it in the cache's\n"
	    "                        host-timer file; 0: not measured\n"
	    "  STACKPROF_MANIFEST    file to which each profiled process appends its path,\n"
	    "                        and '!error ERRNO PATH' if writing it failed\n"
	    "  STACKPROF_LIB         (for this command) path of libstackprof.so to preload\n"
	    "  STACKPROF_CACHE_DIR, STACKPROF_CACHE_MAX  (for this command) the build-id\n"
	    "                        cache and its bound (see `stackprof cache --help`)\n"
	    "when CMD ends, this command copies the program's own binaries (the modules\n"
	    "of its profiles outside /usr, /lib*, /bin, /sbin, /opt, /snap, /nix/store and\n"
	    "installed Python packages) into the build-id cache, so that the profile still\n"
	    "reads with the right names once they are rebuilt; --no-cache keeps none.\n"
	    "this command also sets DNNL_JIT_PROFILE=2 unless set, so oneDNN's JIT kernels\n"
	    "are named (from /tmp/perf-<pid>.map, copied into the profile), and puts the\n"
	    "stackprof Python package first on PYTHONPATH, so that a script can\n"
	    "`import stackprof` (without run: PYTHONPATH=<checkout>/python, or\n"
	    "pip install ./python).\n"
	    "\n"
	    "examples:\n"
	    "  stackprof run -- ./resnet18 --batch 8\n"
	    "  stackprof run -o rn.prof -F 1000 -- ./resnet18\n"
	    "  stackprof run -o torch.prof -- /usr/bin/python3 infer.py\n"
	    "  LD_PRELOAD=/path/libstackprof.so STACKPROF_OUT=x.prof ./prog   (the same, by "
	    "hand)\n",
    .stop_at_operand = true,
};

struct sp_run_opts {
	const char *out;
	const char *freq, *timer, *unwind, *max_depth, *flush_ms, *schedule;
	unsigned long top;
	bool summary, paused, all_samples;
	bool no_cache;
};

/* A write error a profiled process reported in the manifest. */
struct sp_run_error {
	int err;
	char *path;
};

struct sp_run {
	struct sp_run_opts o;
	char **cmd; /* the program and its arguments, NULL-terminated */
	char lib[PATH_MAX];
	char manifest[64];
	bool have_manifest;
	bool set_jit;
	bool discard; /* -o /dev/null */
	bool replace; /* an earlier profile at -o is replaced by the new one */
	bool rename_failed;
	int lock_fd;	  /* the earlier profile, locked while we may replace it */
	struct stat kept; /* ... and which file that is */
	pid_t child;
	int status;   /* the program's wait status */
	char **files; /* profiles the processes wrote, in start order */
	size_t nfiles;
	/* each file's samples, pid, waits cut short and bareness
	 * (sp_run_inspect; NULL if there was no memory for them) */
	uint64_t *samples;
	int *pids;
	uint64_t *cuts;
	bool *bare;
	size_t removed; /* profiles of other processes that took no samples */
	bool moved;	/* files[0] now holds a later image's profile */
	size_t swapped; /* or it swapped places with files[swapped], the first image's now */
	struct sp_run_error *errors;
	size_t nerrors;
	const char *cache_dir; /* the build-id cache; NULL: keep no copies */
	uint64_t cache_max;
	bool cache_warned;
};

/* ---- options -------------------------------------------------------------- */

/* --timer's words (the library's table of sources knows the same) */
static const char *const sp_run_timers[] = {"auto",   "posix",	"trap", "perf",
					    "thread", "itimer", NULL};

static bool sp_run_in(const char *v, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(v, list[i]))
			return true;
	return false;
}

static bool sp_run_check_choice(struct sp_cli_args *a, const char *v, const char *what,
				const char *const *allowed)
{
	if (sp_run_in(v, allowed))
		return true;
	sp_cli_bad(a, "%s", what);
	return false;
}

/* Reads the options; false to stop with a->rc (help printed, or a usage error). */
static bool sp_run_parse(struct sp_run *r, struct sp_cli_args *a)
{
	static const char *const unwinds[] = {"fast", "libunwind", "check", NULL};
	struct sp_run_opts *o = &r->o;
	unsigned long v;
	int c;
	while ((c = sp_cli_next(a)) > 0) {
		switch (c) {
		case 'o': {
			/* the library would refuse such a name (format/manifest.h): say
			 * so now, before the program runs */
			char shown[512];
			if (!a->value[0])
				return !sp_cli_bad(a, "-o wants a file name (it was empty)");
			if (sp_has_control(a->value)) {
				if (sp_manifest_encode(a->value, shown, sizeof(shown)) < 0)
					strcpy(shown, "...");
				return !sp_cli_bad(a,
						   "-o %s: the name holds a control character (a "
						   "newline, a tab, ...); choose another",
						   shown);
			}
			o->out = a->value;
			break;
		}
		case 'F':
			if (!sp_cli_ulong(a, 1, 20000, &v))
				return false;
			o->freq = a->value;
			break;
		case OPT_TIMER:
			if (!sp_run_check_choice(
				a, a->value,
				"--timer must be auto, posix, trap, perf, thread or itimer",
				sp_run_timers))
				return false;
			o->timer = a->value;
			break;
		case OPT_UNWIND:
			if (!sp_run_check_choice(
				a, a->value, "--unwind must be fast, libunwind or check", unwinds))
				return false;
			o->unwind = a->value;
			break;
		case OPT_MAX_DEPTH:
			if (!sp_cli_ulong(a, 8, 4096, &v))
				return false;
			o->max_depth = a->value;
			break;
		case OPT_FLUSH_MS:
			if (!sp_cli_ulong(a, 10, 60000, &v))
				return false;
			o->flush_ms = a->value;
			break;
		case OPT_TOP:
			if (!sp_cli_ulong(a, 0, 100000, &o->top))
				return false;
			break;
		case OPT_NO_SUMMARY:
			o->summary = false;
			break;
		case OPT_NO_CACHE:
			o->no_cache = true;
			break;
		case OPT_SCHEDULE: {
			/* the library's own parser: what passes here, it takes */
			struct sp_schedule sched;
			if (sp_schedule_parse(a->value, &sched) < 0)
				return !sp_cli_bad(
				    a,
				    "--schedule wants wait,warmup,active[,repeat]: "
				    "three or four whole numbers up to %u, active > 0",
				    SP_SCHEDULE_MAX);
			o->schedule = a->value;
			break;
		}
		case OPT_PAUSED:
			o->paused = true;
			break;
		case OPT_ALL_SAMPLES:
			o->all_samples = true;
			break;
		}
	}
	if (c < 0)
		return false;
	if (!a->n_operands)
		return !sp_cli_bad(a, "no command given");
	r->cmd = a->operands; /* calloc'd one longer than the operands: NULL-terminated */
	return true;
}

/* ---- the output path ------------------------------------------------------- */

/* 1 if fd's file begins with the raw profile's magic, 0 if not, -errno if it cannot be read. */
static int sp_is_profile(int fd)
{
	char magic[SP_PROFILE_MAGIC_LEN];
	ssize_t got = pread(fd, magic, sizeof(magic), 0);
	if (got < 0)
		return -errno;
	return got == (ssize_t)sizeof(magic) && !memcmp(magic, SP_PROFILE_MAGIC, sizeof(magic));
}

static bool sp_is_dev_null(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

/*
 * Claims the earlier profile at path for replacement: an exclusive lock
 * on it, held until we exit. A profile still being written (the library
 * holds a shared lock on it) or claimed by another run is left alone: our
 * profile then goes beside it. Returns 1 claimed, 0 left alone, -errno.
 */
static int sp_run_claim(struct sp_run *r, const char *path)
{
	for (int tries = 0; tries < 10; tries++) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
		int is = sp_is_profile(fd);
		if (is <= 0) {
			close(fd);
			return is < 0 ? is : -EEXIST;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
			close(fd);
			return 0;
		}
		/* locked (or locks unsupported); is it still the file at path? */
		struct stat now;
		if (fstat(fd, &r->kept) == 0 && lstat(path, &now) == 0 &&
		    now.st_dev == r->kept.st_dev && now.st_ino == r->kept.st_ino) {
			r->lock_fd = fd;
			return 1;
		}
		close(fd); /* replaced meanwhile: look again */
	}
	return -EBUSY;
}

/*
 * Whether a file can be created in dir: one is, and removed. access() is
 * not enough: root passes it on /sys, and a read-only mount answers only
 * when a file is made. 0 or an errno.
 */
static int sp_probe_create(const char *dir)
{
	char probe[PATH_MAX];
	if (snprintf(probe, sizeof(probe), "%s/.stackprof-probe-XXXXXX", dir) >= (int)sizeof(probe))
		return ENAMETOOLONG;
	int fd = mkstemp(probe);
	if (fd < 0)
		return errno;
	close(fd);
	if (unlink(probe) < 0) /* an append-only directory: say what was left */
		sp_cli_warn("run: cannot remove %s: %s", probe, strerror(errno));
	return 0;
}

/*
 * An earlier profile at -o is replaced after the run, and only by a new
 * one: a program that is never profiled leaves it as it was. Anything
 * else there is somebody's file. A path that cannot be created fails now,
 * before the program runs.
 */
static int sp_run_check_output(struct sp_run *r)
{
	const char *out = r->o.out;
	struct stat st;
	if (!out)
		return 0;
	if (sp_is_dev_null(out)) {
		r->discard = true;
		return 0;
	}
	size_t olen = strlen(out);
	if ((lstat(out, &st) == 0 && S_ISDIR(st.st_mode)) || (olen && out[olen - 1] == '/')) {
		sp_cli_error(
		    "run: %s names a directory; -o takes the profile's file name (%s%sNAME.prof)",
		    out, out, olen && out[olen - 1] == '/' ? "" : "/");
		return SP_EXIT_ERROR;
	}
	if (lstat(out, &st) == 0) {
		int is = S_ISREG(st.st_mode) ? sp_run_claim(r, out) : -EEXIST;
		if (is == -EEXIST) {
			sp_cli_error("run: %s exists and is not a stackprof profile; not "
				     "replacing it (remove it, or choose another -o)",
				     out);
			return SP_EXIT_ERROR;
		}
		if (is < 0) {
			sp_cli_error("run: %s exists and cannot be read (%s); not replacing it",
				     out, strerror(-is));
			return SP_EXIT_ERROR;
		}
		r->replace = is == 1;
		return 0;
	}
	char *copy = strdup(out);
	if (!copy)
		return SP_EXIT_ERROR;
	const char *dir = dirname(copy);
	int rc = SP_EXIT_OK, e = 0;
	if (stat(dir, &st) < 0)
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else
		e = sp_probe_create(dir);
	if (e) {
		sp_cli_error("run: cannot write the profile %s: %s: %s", out, dir, strerror(e));
		rc = SP_EXIT_ERROR;
	}
	free(copy);
	return rc;
}

/* ---- environment ------------------------------------------------------------ */

/* Finds libstackprof.so: STACKPROF_LIB, next to this binary, or ../lib/. */
static bool sp_find_lib(char *out, size_t cap)
{
	const char *env = getenv("STACKPROF_LIB");
	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return access(out, R_OK) == 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return false;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = '\0';
	static const char *const rel[] = {"libstackprof.so", "../lib/libstackprof.so",
					  "../lib/stackprof/libstackprof.so"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		int len = snprintf(out, cap, "%s/%s", self, rel[i]);
		if (len > 0 && (size_t)len < cap && access(out, R_OK) == 0) {
			char *real = realpath(out, NULL);
			if (real) {
				snprintf(out, cap, "%s", real);
				free(real);
			}
			return true;
		}
	}
	return false;
}

/*
 * The directory holding the stackprof Python package: <bindir>/../python
 * (a build directory inside the checkout finds the checkout's), then
 * <bindir>/../lib/stackprof/python (where `cmake --install` puts it), else
 * the checkout this binary was built from (SP_PYTHON_DIR). False if none
 * has the package.
 */
static bool sp_find_python_dir(char *out, size_t cap)
{
	char self[PATH_MAX], pkg[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash = NULL;
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
	}
	/* a build directory inside the checkout, then an installed tree (cmake --install) */
	static const char *const rel[] = {"../python", "../lib/stackprof/python"};
	for (size_t i = 0; slash && i < sizeof(rel) / sizeof(rel[0]); i++) {
		*slash = '\0';
		snprintf(pkg, sizeof(pkg), "%s/%s/stackprof/__init__.py", self, rel[i]);
		int len = snprintf(out, cap, "%s/%s", self, rel[i]);
		if (access(pkg, R_OK) == 0 && len > 0 && (size_t)len < cap) {
			char *real = realpath(out, NULL);
			if (real) {
				snprintf(out, cap, "%s", real);
				free(real);
			}
			return true;
		}
	}
#ifdef SP_PYTHON_DIR
	snprintf(pkg, sizeof(pkg), "%s/stackprof/__init__.py", SP_PYTHON_DIR);
	if (access(pkg, R_OK) == 0) {
		snprintf(out, cap, "%s", SP_PYTHON_DIR);
		return true;
	}
#endif
	return false;
}

static int sp_setenv_checked(const char *k, const char *v)
{
	if (v && setenv(k, v, 1) < 0) {
		sp_cli_error("setenv %s: %s", k, strerror(errno));
		return -1;
	}
	return 0;
}

/* The library, the manifest, and the environment the program inherits. */
static int sp_run_prepare(struct sp_run *r)
{
	const struct sp_run_opts *o = &r->o;
	if (!sp_find_lib(r->lib, sizeof(r->lib))) {
		sp_cli_error("run: cannot find libstackprof.so (looked next to this program and in "
			     "../lib; set STACKPROF_LIB)");
		return SP_EXIT_ERROR;
	}
	snprintf(r->manifest, sizeof(r->manifest), "/tmp/stackprof-manifest-XXXXXX");
	int mfd = mkstemp(r->manifest);
	if (mfd < 0) {
		sp_cli_error("run: cannot create a temporary file: %s", strerror(errno));
		return SP_EXIT_ERROR;
	}
	close(mfd);
	r->have_manifest = true;

	const char *old = getenv("LD_PRELOAD");
	size_t plen = strlen(r->lib) + (old ? strlen(old) : 0) + 2;
	char *preload = malloc(plen);
	if (!preload)
		return SP_EXIT_ERROR;
	snprintf(preload, plen, "%s%s%s", r->lib, old && *old ? ":" : "", old ? old : "");
	r->set_jit = !getenv("DNNL_JIT_PROFILE");
	/* `import stackprof` works in the program, ahead of any other copy */
	char pydir[PATH_MAX];
	char *pypath = NULL;
	if (sp_find_python_dir(pydir, sizeof(pydir))) {
		const char *oldpp = getenv("PYTHONPATH");
		size_t n = strlen(pydir) + (oldpp ? strlen(oldpp) : 0) + 2;
		pypath = malloc(n);
		if (!pypath) {
			free(preload);
			return SP_EXIT_ERROR;
		}
		snprintf(pypath, n, "%s%s%s", pydir, oldpp && *oldpp ? ":" : "",
			 oldpp && *oldpp ? oldpp : "");
	}
	/* what the default timer's interrupts cost on this host, for the
	 * summary and `info`: kept per host, measured once (timercost.h).
	 * Only perf-sigtrap's is measured; a timer asked for by name that
	 * is another has no figure. */
	char irq[32] = "";
	const char *kind = o->timer ? o->timer : getenv("STACKPROF_TIMER");
	bool other = kind && sp_run_in(kind, sp_run_timers) && strcmp(kind, "auto") != 0 &&
		     strcmp(kind, "trap") != 0;
	if (!other && !getenv("STACKPROF_TIMER_IRQ_NS")) {
		uint64_t ns;
		bool now;
		/* 0: too small to see here; 1 ns says "measured" */
		if (sp_timercost_host(sp_cli_cache_dir(), !o->no_cache, &ns, &now) == 0)
			snprintf(irq, sizeof(irq), "%llu", (unsigned long long)(ns ? ns : 1));
	}
	int bad = sp_setenv_checked("LD_PRELOAD", preload) ||
		  sp_setenv_checked("STACKPROF_TIMER_IRQ_NS", irq[0] ? irq : NULL) ||
		  sp_setenv_checked("STACKPROF_MANIFEST", r->manifest) ||
		  sp_setenv_checked("STACKPROF_OUT", o->out) ||
		  sp_setenv_checked("STACKPROF_FREQ", o->freq) ||
		  sp_setenv_checked("STACKPROF_TIMER", o->timer) ||
		  sp_setenv_checked("STACKPROF_UNWIND", o->unwind) ||
		  sp_setenv_checked("STACKPROF_MAX_DEPTH", o->max_depth) ||
		  sp_setenv_checked("STACKPROF_FLUSH_MS", o->flush_ms) ||
		  sp_setenv_checked("STACKPROF_SCHEDULE", o->schedule) ||
		  sp_setenv_checked("STACKPROF_START", o->paused ? "0" : NULL) ||
		  sp_setenv_checked("DNNL_JIT_PROFILE", r->set_jit ? "2" : NULL) ||
		  sp_setenv_checked("PYTHONPATH", pypath);
	free(preload);
	free(pypath);
	return bad ? SP_EXIT_ERROR : SP_EXIT_OK;
}

/* ---- the program -------------------------------------------------------------- */

static volatile sig_atomic_t sp_child;
static volatile sig_atomic_t sp_child_group; /* the program has a process group of its own */

/*
 * Where the program runs, and what is passed on to it.
 *
 * On a terminal (stackprof run has one as its controlling terminal), the
 * program stays in run's process group, so that the terminal's ^C, ^\ and
 * ^Z and its job control reach it as they would without stackprof. A
 * signal sent to run by a process (kill, sigqueue, tgkill) is meant for
 * the program: it is passed on. One the kernel sent (the terminal's ^C, ^\
 * or hangup, SI_KERNEL) went to the whole group, the program included,
 * already. What run cannot tell apart there from a kill of run: a kill of
 * the group, which the program had itself (timeout on a terminal sends
 * both): the program then gets it twice. Two copies to run within the wait
 * below are passed on as one.
 *
 * Without a terminal (CI, scripts, timeout), the program gets a
 * process group of its own, and every signal below is passed on, however
 * it was sent: a kill of run's process group (kill -INT -- -PGID, timeout)
 * then reaches the program once, not twice (once from the sender, once
 * from run). The program also gets SIGKILL should run be killed outright
 * (PR_SET_PDEATHSIG), as it would in run's group.
 *
 * A signal is passed on after 20 ms, and copies of it that arrive
 * meanwhile go with it, as copies of a signal still pending merge in the
 * kernel. timeout(1) sends its signal to run and then to its own process
 * group, run again, microseconds apart: the program, sent both directly,
 * would have had them merge, but run took the first before the second
 * arrived and passed on both (a second KeyboardInterrupt in the program's
 * cleanup, in 5-25% of `timeout -s INT` runs). A sender that waits for the
 * program's answer before it signals again (a supervisor, a test driver)
 * cannot send the next copy before this one is passed on: every copy gets
 * through. sigpending() and nanosleep() are async-signal-safe; the signal
 * itself is blocked while its handler runs, so a copy that arrives waits.
 * 20 ms, not 1: on a loaded machine the sender can be preempted between
 * its two kill() calls for a few milliseconds (t0022 saw it at 1 ms).
 */
#define SP_FORWARD_WAIT_NS 20000000L
static volatile sig_atomic_t sp_merged[NSIG];

static void sp_forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int e = errno;
	bool sent = si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL;
	if (sp_merged[sig]) {
		sp_merged[sig] = 0; /* a copy that came during the wait below */
	} else if (sp_child > 0 && (sp_child_group || sent)) {
		struct timespec wait = {0, SP_FORWARD_WAIT_NS};
		while (nanosleep(&wait, &wait) < 0 && errno == EINTR)
			;
		sigset_t pending;
		if (sigpending(&pending) == 0 && sigismember(&pending, sig) == 1)
			sp_merged[sig] = 1;
		pid_t child = sp_child; /* read once: 0 once the program was reaped */
		if (child > 0)
			kill(child, sig);
	}
	errno = e;
}

static const int sp_forwarded[] = {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};
/* on a terminal: the ones a shell passes on (a USR1 for run is run's) */
#define SP_FORWARDED_ON_TTY 4

/* Whether run has a controlling terminal on one of its standard streams. */
static bool sp_on_terminal(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (tcgetpgrp(fd) >= 0)
			return true;
	return false;
}

/* Starts the program. Returns 0, or the exit status (it could not be started). */
static int sp_run_spawn(struct sp_run *r)
{
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(sp_forwarded) / sizeof(sp_forwarded[0]); i++)
		sigaddset(&block, sp_forwarded[i]);
	int errpipe[2];
	fflush(NULL);
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		sp_cli_error("run: pipe: %s", strerror(errno));
		return SP_EXIT_ERROR;
	}
	/* blocked across fork: a signal in between is neither lost nor
	 * handled by a child that has not exec'ed yet */
	bool own_group = !sp_on_terminal();
	pid_t parent = getpid();
	sigprocmask(SIG_BLOCK, &block, &old);
	pid_t pid = fork();
	if (pid == 0) {
		close(errpipe[0]);
		signal(SIGPIPE, SIG_DFL); /* main() ignored it for our own output */
		if (own_group) {
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent) /* run is gone already */
				_exit(SP_EXIT_ERROR);
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (!r->o.out) {
			/* the default name, fixed here: the library makes it
			 * absolute, so what a wrapper script runs after a cd
			 * writes next to it, not in the wrapper's directories */
			char def[64];
			snprintf(def, sizeof(def), "stackprof.%d.prof", (int)getpid());
			setenv("STACKPROF_OUT", def, 1);
		}
		execvp(r->cmd[0], r->cmd);
		int e = errno;
		ssize_t w = write(errpipe[1], &e, sizeof(e));
		(void)w;
		_exit(e == ENOENT ? 127 : 126);
	}
	int fork_errno = errno;
	close(errpipe[1]);
	if (pid > 0) {
		if (own_group)
			setpgid(pid, pid); /* as the child does: whichever runs first */
		sp_child = pid;
		sp_child_group = own_group;
		r->child = pid;
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = sp_forward;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		size_t n = own_group ? sizeof(sp_forwarded) / sizeof(sp_forwarded[0])
				     : SP_FORWARDED_ON_TTY;
		for (size_t i = 0; i < n; i++)
			sigaction(sp_forwarded[i], &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		close(errpipe[0]);
		sp_cli_error("run: fork: %s", strerror(fork_errno));
		return SP_EXIT_ERROR;
	}
	int exec_errno = 0;
	ssize_t got;
	while ((got = read(errpipe[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR)
		;
	close(errpipe[0]);
	if (got == (ssize_t)sizeof(exec_errno)) {
		sp_cli_error("run: cannot run '%s': %s", r->cmd[0], strerror(exec_errno));
		sp_child = 0; /* a zombie until reaped below: nothing to pass on to */
		while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
			;
		return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : SP_EXIT_ERROR;
	}
	return 0;
}

static int sp_run_wait(struct sp_run *r)
{
	/* the program's end, left a zombie until no signal can be passed on
	 * to its pid any more: once reaped, the pid may be another process's */
	siginfo_t info;
	while (waitid(P_PID, (id_t)r->child, &info, WEXITED | WNOWAIT) < 0) {
		if (errno != EINTR) {
			sp_cli_error("run: waitid: %s", strerror(errno));
			return SP_EXIT_ERROR;
		}
	}
	sp_child = 0;
	while (waitpid(r->child, &r->status, 0) < 0) {
		if (errno != EINTR) {
			sp_cli_error("run: waitpid: %s", strerror(errno));
			return SP_EXIT_ERROR;
		}
	}
	return 0;
}

/* ---- after the run ------------------------------------------------------------ */

static int sp_errno_by_name(const char *name)
{
	for (int e = 1; e < 200; e++) {
		const char *n = strerrorname_np(e);
		if (n && !strcmp(n, name))
			return e;
	}
	return atoi(name) > 0 ? atoi(name) : EIO;
}

/* Grows *v (of elem-sized entries) to hold n + 1; false if out of memory. */
static bool sp_grow(void **v, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return true;
	size_t c2 = *cap ? *cap * 2 : 8;
	void *w = realloc(*v, c2 * elem);
	if (!w)
		return false;
	*v = w;
	*cap = c2;
	return true;
}

/*
 * Reads the manifest: one absolute path per profiled process, in start
 * order, and "!error ERRNO PATH" for a profile whose writing failed (ERRNO
 * by name, as ENOSPC).
 */
static void sp_run_read_manifest(struct sp_run *r)
{
	FILE *f = fopen(r->manifest, "r");
	if (!f)
		return;
	size_t cap = 0, ecap = 0;
	char *line = NULL;
	size_t lcap = 0;
	while (getline(&line, &lcap, f) >= 0) {
		line[strcspn(line, "\n")] = '\0';
		char *name = line + 7, *sp = strchr(name, ' ');
		if (!strncmp(line, "!error ", 7) && sp) {
			*sp = '\0';
			sp_manifest_decode(sp + 1);
			char *path = strdup(sp + 1);
			if (path &&
			    sp_grow((void **)&r->errors, r->nerrors, &ecap, sizeof(*r->errors)))
				r->errors[r->nerrors++] =
				    (struct sp_run_error){sp_errno_by_name(name), path};
			else
				free(path);
		} else if (line[0] && line[0] != '!') {
			sp_manifest_decode(line);
			char *path = strdup(line);
			if (path && sp_grow((void **)&r->files, r->nfiles, &cap, sizeof(*r->files)))
				r->files[r->nfiles++] = path;
			else
				free(path);
		}
	}
	free(line);
	fclose(f);
}

/* The error the library met writing path, or 0. */
static int sp_run_write_error(const struct sp_run *r, const char *path)
{
	for (size_t i = 0; i < r->nerrors; i++)
		if (!strcmp(r->errors[i].path, path))
			return r->errors[i].err;
	return 0;
}

static bool sp_same_file(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/*
 * Copies the program's own binaries that p recorded (not the system's, not
 * stackprof's library) into the build-id cache, so that p still reads
 * after a rebuild. A binary rebuilt during the run (its build-id is no
 * longer the one recorded) or too large for the cache is left out quietly;
 * other failures (a full disk) are said once.
 */
static void sp_run_keep_binaries(struct sp_run *r, const struct sp_profile *p)
{
	for (size_t i = 0; r->cache_dir && i < p->n_modules; i++) {
		const struct sp_prof_module *m = &p->modules[i];
		if (!m->path || m->path[0] != '/' || m->image || !m->build_id_len ||
		    sp_bidcache_is_system(m->path) || sp_same_file(m->path, r->lib))
			continue;
		int rc = sp_bidcache_add(r->cache_dir, m->path, m->build_id, m->build_id_len,
					 r->cache_max);
		if (rc < 0 && rc != -ESTALE && rc != -EFBIG && rc != -ENOENT && rc != -ENODATA &&
		    !r->cache_warned) {
			r->cache_warned = true;
			sp_cli_warn("run: cannot keep a copy of %s in the build-id cache %s: %s",
				    m->path, r->cache_dir, strerror(-rc));
		}
	}
}

/*
 * Reads profile k once, for what the run does after the program: its
 * samples and pid (0 and -1 if it can't be read), and whether it is bare:
 * complete (its process ended or exec'ed, and finished it), without a
 * sample, and without a sample lost, skipped or stood aside for, or a
 * system call cut short (sp_run_tidy). With set_jit, also removes the /tmp/perf-<pid>.map file
 * that exists only because we set DNNL_JIT_PROFILE.
 */
static void sp_run_inspect(struct sp_run *r, size_t k)
{
	struct sp_profile *p = sp_profile_read(r->files[k], NULL, 0);
	uint64_t n = p ? p->n_samples : 0;
	if (r->samples) {
		r->samples[k] = n;
		r->pids[k] = p ? p->header.pid : -1;
		r->cuts[k] = p && p->has_stats ? p->stats.syscalls_cut : 0;
		r->bare[k] = p && p->status == SP_READ_OK && !n && p->has_stats &&
			     !p->stats.drops && !p->stats.skipped && !p->stats.throttled &&
			     !p->stats.aside && !p->stats.syscalls_cut && !p->stats.threads_missed;
	}
	if (!p)
		return;
	if (n)
		sp_run_keep_binaries(r, p);
	char map[64];
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", p->header.pid);
	struct stat st;
	if (r->set_jit && p->n_jits && lstat(map, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == getuid())
		unlink(map);
	sp_profile_free(p);
}

/*
 * The first profile went to PATH.<pid> because an earlier profile held
 * PATH: now that the new one is whole, it takes PATH's place (one rename,
 * so PATH always holds a whole profile). Only the earlier profile we
 * claimed is replaced: if PATH is another file by now, ours stays beside it.
 */
static void sp_run_take_place(struct sp_run *r)
{
	char **first = &r->files[0];
	const char *out = r->o.out;
	struct stat now;
	if (sp_same_file(*first, out))
		return;
	if (lstat(out, &now) < 0 || now.st_dev != r->kept.st_dev || now.st_ino != r->kept.st_ino)
		return;
	if (rename(*first, out) < 0) {
		r->rename_failed = true;
		sp_cli_warn("run: cannot replace %s: %s; the profile is in %s", out,
			    strerror(errno), *first);
		return;
	}
	/* absolute, as the manifest names every other profile */
	char cwd[PATH_MAX];
	char *dup = NULL;
	if (out[0] != '/' && getcwd(cwd, sizeof(cwd))) {
		size_t n = strlen(cwd) + strlen(out) + 2;
		if ((dup = malloc(n)))
			snprintf(dup, n, "%s/%s", cwd, out);
	} else {
		dup = strdup(out);
	}
	if (dup) {
		free(*first);
		*first = dup;
	}
}

/* Puts the profiles in place; the status the run ends with if a profile failed. */
static int sp_run_collect(struct sp_run *r)
{
	sp_run_read_manifest(r);
	unlink(r->manifest);
	r->have_manifest = false;
	/* + 1: no files is not out of memory */
	r->samples = calloc(r->nfiles + 1, sizeof(*r->samples));
	r->pids = calloc(r->nfiles + 1, sizeof(*r->pids));
	r->bare = calloc(r->nfiles + 1, sizeof(*r->bare));
	r->cuts = calloc(r->nfiles + 1, sizeof(*r->cuts));
	if (!r->samples || !r->pids || !r->bare || !r->cuts) {
		free(r->samples);
		free(r->pids);
		free(r->bare);
		free(r->cuts);
		r->samples = NULL;
		r->pids = NULL;
		r->bare = NULL;
		r->cuts = NULL;
	}
	if (r->set_jit || r->samples || r->cache_dir)
		for (size_t k = 0; k < r->nfiles; k++)
			sp_run_inspect(r, k);
	if (r->nfiles && sp_run_write_error(r, r->files[0]))
		return SP_EXIT_ERROR; /* never over the earlier profile */
	if (r->replace && r->nfiles && !r->discard)
		sp_run_take_place(r);
	return r->nerrors ? SP_EXIT_ERROR : SP_EXIT_OK;
}

/* Prints the summary of the profile at path; returns its samples (0 if unreadable). */
static uint64_t sp_print_summary(const char *path, const struct sp_run_opts *o)
{
	/* one warning at most: the counts say it if the profile is cut off */
	char err[1024];
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	if (!p) {
		sp_cli_error("%s", err);
		return 0;
	}
	uint64_t samples = p->n_samples;
	struct sp_model_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.no_ranges = true;
	mo.all_samples = o->all_samples;
	struct sp_model *m = sp_cli_build_model(path, p, &mo);
	struct sp_summary s;
	sp_summary_compute(p, m, &s);
	fprintf(stderr, "stackprof: %s (pid %d)\n", p->header.cmdline, p->header.pid);
	sp_summary_print_counts(stderr, p, &s, "stackprof: ");
	if (m && m->outside_windows)
		fprintf(stderr,
			"stackprof: %llu of %llu samples were outside the program's profile() "
			"windows: left out of the views (--all-samples keeps them)\n",
			(unsigned long long)m->outside_windows, (unsigned long long)s.samples);
	if (m && o->top)
		sp_summary_print_top(stderr, m, o->top, "  ");
	if (m)
		sp_summary_print_hints(stderr, m, "stackprof: ");
	sp_model_free(m);
	sp_profile_free(p);
	return samples;
}

/* The samples in the profile at path (0 if it can't be read). */
/* Why the library could not write a profile, in a user's words. */
static const char *sp_write_error_text(int err)
{
	switch (err) {
	case ENOSPC:
		return "disk full";
	case EDQUOT:
		return "disk quota exceeded";
	case EFBIG:
		return "file too large";
	case EMFILE:
		return "no file descriptor free for it (the process's RLIMIT_NOFILE)";
	default:
		return strerror(err);
	}
}

/* Whether the ELF executable at path has no program interpreter (static). */
static bool sp_elf_static(const char *path)
{
	Elf64_Ehdr eh;
	bool is_static = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0)
		goto out;
	is_static = true;
	for (unsigned k = 0; k < eh.e_phnum; k++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + k * sizeof(ph))) !=
		    (ssize_t)sizeof(ph)) {
			is_static = false;
			break;
		}
		if (ph.p_type == PT_INTERP) {
			is_static = false;
			break;
		}
	}
out:
	close(fd);
	return is_static;
}

/* The file execvp(cmd) runs, into out: cmd itself if it has a slash, else
 * the first executable regular file of that name along PATH. */
static bool sp_resolve_cmd(const char *cmd, char *out, size_t cap)
{
	struct stat st;
	if (strchr(cmd, '/'))
		return snprintf(out, cap, "%s", cmd) < (int)cap && stat(out, &st) == 0 &&
		       S_ISREG(st.st_mode);
	const char *path = getenv("PATH");
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		if (snprintf(out, cap, "%.*s/%s", (int)n, n ? p : ".", cmd) < (int)cap &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

/*
 * Why the dynamic loader will preload nothing into the program cmd runs, or
 * NULL if its file gives no reason. ld.so(8) ignores LD_PRELOAD in secure
 * execution mode (set-user-ID or set-group-ID to someone else, file
 * capabilities), and a static program has no loader at all.
 */
static const char *sp_preload_refused(const char *cmd, char *file, size_t cap)
{
	struct stat st;
	if (!sp_resolve_cmd(cmd, file, cap) || stat(file, &st) < 0)
		return NULL;
	if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
		return "is set-user-ID: the loader ignores LD_PRELOAD for it";
	if ((st.st_mode & S_ISGID) && st.st_gid != getgid())
		return "is set-group-ID: the loader ignores LD_PRELOAD for it";
	if (getxattr(file, "security.capability", NULL, 0) > 0)
		return "has file capabilities: the loader ignores LD_PRELOAD for it";
	if (sp_elf_static(file))
		return "is statically linked: there is no loader to preload stackprof";
	return NULL;
}

/* Tells why no profile was written, as precisely as we know. */
static void sp_explain_no_profile(const struct sp_run *r)
{
	char file[PATH_MAX];
	const char *why = sp_preload_refused(r->cmd[0], file, sizeof(file));
	if (r->nerrors)
		fprintf(stderr, "stackprof: no profile was written: creating %s failed: %s\n",
			r->errors[0].path, sp_write_error_text(r->errors[0].err));
	else if (why)
		fprintf(stderr, "stackprof: no profile was written: %s %s; it ran unprofiled\n",
			file, why);
	else
		fprintf(stderr, "stackprof: no profile was written (did the program clear "
				"LD_PRELOAD, or exec a static or set-user-ID one?)\n");
}

static void sp_run_report(const struct sp_run *r)
{
	const char *first = r->nfiles ? r->files[0] : NULL;
	int err = first ? sp_run_write_error(r, first) : 0;
	if (r->discard) {
		if (r->o.summary)
			fprintf(stderr, "stackprof: the profile went to /dev/null: nothing kept\n");
		return;
	}
	if (!first) {
		/* errors are said even with --no-summary */
		if (r->o.summary || r->nerrors)
			sp_explain_no_profile(r);
		if (r->o.summary && r->replace)
			fprintf(stderr, "stackprof: %s still holds the earlier profile\n",
				r->o.out);
		return;
	}
	/* profiles that could not even be made (a child that lowered its
	 * RLIMIT_NOFILE): the manifest names them in errors only */
	for (size_t i = 0; i < r->nerrors; i++) {
		size_t k = 0;
		while (k < r->nfiles && strcmp(r->files[k], r->errors[i].path))
			k++;
		if (k == r->nfiles)
			sp_cli_error("creating the profile %s failed: %s; that process ran "
				     "unprofiled",
				     r->errors[i].path, sp_write_error_text(r->errors[i].err));
	}
	for (size_t k = 1; k < r->nfiles; k++) {
		int e = sp_run_write_error(r, r->files[k]);
		if (e)
			sp_cli_error("writing the profile %s failed: %s (%s)", r->files[k],
				     sp_write_error_text(e), strerror(e));
	}
	if (err) {
		/* errors are said even with --no-summary; nothing was "wrote" */
		sp_cli_error("writing the profile %s failed: %s (%s); it holds what was "
			     "written before that",
			     first, sp_write_error_text(err), strerror(err));
		if (r->replace)
			sp_cli_error("%s still holds the earlier profile", r->o.out);
		return;
	}
	/*
	 * The summary is of the program's own process: the busiest image of
	 * its pid (pyenv's shim execs the interpreter, whose profile is then
	 * PATH.<pid>.N). Its children (multiprocessing's workers) are listed,
	 * not summed. Only when that process took almost nothing, as a
	 * wrapper that runs the real work in a child does (sh -c, a script
	 * without exec), is the summary of the busiest profile of all.
	 */
	const char *shown = first;
	uint64_t first_n = 0, best_n = 0, own_n = 0;
	size_t own = 0, best = 0;
	const uint64_t *ns = r->samples; /* sp_run_inspect's */
	for (size_t k = 0; ns && k < r->nfiles; k++) {
		if (k == 0)
			first_n = ns[k];
		if (r->pids[k] == r->pids[0] && ns[k] > own_n)
			own_n = ns[k], own = k;
		if (ns[k] > best_n)
			best_n = ns[k], best = k;
	}
	bool child = false;
	if (ns && own_n && own_n * 10 >= best_n) {
		shown = r->files[own];
		best_n = own_n;
	} else if (ns && best_n) {
		shown = r->files[best];
		child = true;
	}
	if (shown != first && r->o.summary && child)
		fprintf(stderr,
			"stackprof: the summary is of %s, the profile with the most samples "
			"(%llu; the program's own process took %llu)\n",
			shown, (unsigned long long)best_n, (unsigned long long)own_n);
	else if (shown != first && r->o.summary)
		fprintf(stderr,
			"stackprof: the summary is of %s, the image the program exec'ed "
			"(%llu samples; %s, the first one, has %llu)\n",
			shown, (unsigned long long)best_n, first, (unsigned long long)first_n);
	if (r->o.summary)
		best_n = sp_print_summary(shown, &r->o);
	if (r->o.summary && !best_n)
		fprintf(stderr, "stackprof: no samples: %s\n",
			r->o.paused ? "sampling started paused (--paused) and the program never "
				      "turned it on (stackprof_start(), or Python's "
				      "stackprof.profile() / start())"
				    : "the program used less CPU than one sampling period, or "
				      "spent its time waiting (stackprof samples CPU time, not "
				      "wall time)");
	if (r->o.out && !r->rename_failed && !sp_same_file(first, r->o.out))
		sp_cli_warn("run: %s was being written or replaced by another process; this "
			    "profile stays in %s",
			    r->o.out, first);
	if (!r->o.summary)
		return;
	if (r->moved)
		fprintf(stderr,
			"stackprof: %s holds the profile of the image the program exec'ed, the "
			"busiest of its process; the first image (a wrapper) took no samples\n",
			first);
	else if (r->swapped)
		fprintf(stderr,
			"stackprof: %s holds the profile of the image the program exec'ed, the "
			"busiest of its process; the first image's (a wrapper, %llu samples) is "
			"%s\n",
			first, ns ? (unsigned long long)ns[r->swapped] : 0ull,
			r->files[r->swapped]);
	fprintf(stderr, "stackprof: wrote %s", first);
	for (size_t k = 1; k < r->nfiles; k++) {
		fprintf(stderr, "%s%s", k == 1 ? "; children and exec'ed images: " : ", ",
			r->files[k]);
		if (ns && r->cuts[k])
			fprintf(stderr, " (%llu samples; %llu waits cut short, EINTR)",
				(unsigned long long)ns[k], (unsigned long long)r->cuts[k]);
		else if (ns)
			fprintf(stderr, " (%llu samples)", (unsigned long long)ns[k]);
	}
	fputc('\n', stderr);
	if (r->removed)
		fprintf(stderr,
			"stackprof: %zu other process%s or image%s took no samples; %s removed\n",
			r->removed, r->removed == 1 ? "" : "es", r->removed == 1 ? "" : "s",
			r->removed == 1 ? "its profile was" : "their profiles were");
	if (!best_n)
		return;
	fprintf(stderr, "stackprof: next: stackprof flamegraph %s -o profile.svg\n", shown);
	fprintf(stderr, "stackprof:   or: stackprof table %s\n", shown);
}

/* Ends the way the program ended: its exit status, or its signal. */
static int sp_run_end_like_child(const struct sp_run *r, int rc)
{
	if (WIFSIGNALED(r->status)) {
		int sig = WTERMSIG(r->status);
		/* die the same way, so the shell sees what it would have seen, but
		 * without a second core dump */
		struct rlimit rl = {0, 0};
		setrlimit(RLIMIT_CORE, &rl);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		fflush(NULL);
		raise(sig);
		return 128 + sig;
	}
	int status = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : SP_EXIT_ERROR;
	/* a profile that failed to write fails a run that otherwise succeeded */
	return status ? status : rc;
}

/*
 * Tidies what the processes left, once the run is over. pyenv's shim, or
 * any shell script, forks dozens of short commands and execs through
 * more: each wrote a profile, almost all of them with nothing in it. Such
 * bare profiles (sp_run_inspect) are removed, but for the first one at
 * PATH. When a later image of the same process took more samples than the
 * first (a shim that exec'ed the interpreter), the busiest of those takes
 * PATH, so that PATH holds the program's profile: over the first image's
 * if that is bare, else swapping places with it (a shim through
 * /usr/bin/env may take a sample or two, and keeps them). A profile still being written (by a
 * process that outlived the run) is never bare, so never touched.
 */
static void sp_run_tidy(struct sp_run *r)
{
	bool *bare = r->bare;
	if (r->discard || r->nfiles < 2 || !bare || sp_run_write_error(r, r->files[0]))
		return;
	/* STACKPROF_OVERWRITE=1 lets a later process take PATH itself: the
	 * manifest then names it again, and none of those is touched */
	for (size_t k = 1; k < r->nfiles; k++)
		if (!strcmp(r->files[k], r->files[0]) || sp_same_file(r->files[k], r->files[0]))
			bare[k] = bare[0] = false;
	size_t img = 0;
	for (size_t k = 1; k < r->nfiles; k++)
		if (r->pids[k] == r->pids[0] && r->pids[0] > 0 && r->samples[k] > r->samples[img] &&
		    !sp_run_write_error(r, r->files[k]) && !sp_same_file(r->files[k], r->files[0]))
			img = k;
	if (bare[0] && img && rename(r->files[img], r->files[0]) == 0) {
		r->samples[0] = r->samples[img];
		r->cuts[0] = r->cuts[img];
		r->samples[img] = 0;
		r->moved = true;
	} else if (img && renameat2(AT_FDCWD, r->files[img], AT_FDCWD, r->files[0],
				    RENAME_EXCHANGE) == 0) {
		/* the wrapper took a few samples of its own (a shim through
		 * /usr/bin/env): it keeps them, under the exec'ed image's name */
		uint64_t n0 = r->samples[0], c0 = r->cuts[0];
		r->samples[0] = r->samples[img];
		r->cuts[0] = r->cuts[img];
		r->samples[img] = n0;
		r->cuts[img] = c0;
		r->swapped = img;
	}
	size_t n = 1;
	for (size_t k = 1; k < r->nfiles; k++) {
		bool gone = k == img && r->moved;
		if (k == r->swapped)
			r->swapped = n;
		if (!gone && bare[k] && !sp_run_write_error(r, r->files[k]) &&
		    unlink(r->files[k]) == 0) {
			r->removed++;
			gone = true;
		}
		if (gone) {
			free(r->files[k]);
			continue;
		}
		r->files[n] = r->files[k];
		r->samples[n] = r->samples[k];
		r->cuts[n] = r->cuts[k];
		r->pids[n] = r->pids[k];
		bare[n] = bare[k];
		n++;
	}
	r->nfiles = n;
}

static void sp_run_release(struct sp_run *r)
{
	if (r->have_manifest)
		unlink(r->manifest);
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	for (size_t k = 0; k < r->nfiles; k++)
		free(r->files[k]);
	free(r->files);
	free(r->samples);
	free(r->pids);
	free(r->cuts);
	free(r->bare);
	for (size_t k = 0; k < r->nerrors; k++)
		free(r->errors[k].path);
	free(r->errors);
}

int sp_cmd_run(int argc, char **argv)
{
	struct sp_run r = {.o = {.top = 10, .summary = true}, .lock_fd = -1};
	struct sp_cli_args a;
	int rc;

	sp_cli_args_init(&a, &sp_run_cmd, argc, argv);
	if (!sp_run_parse(&r, &a)) {
		rc = a.rc;
		goto out;
	}
	if ((rc = sp_run_check_output(&r)) || (rc = sp_run_prepare(&r)) ||
	    (rc = sp_run_spawn(&r)) || (rc = sp_run_wait(&r)))
		goto out;
	if (!r.o.no_cache && !r.discard && (r.cache_max = sp_cli_cache_max()))
		r.cache_dir = sp_cli_cache_dir();
	rc = sp_run_collect(&r);
	sp_run_tidy(&r);
	sp_run_report(&r);
	rc = sp_run_end_like_child(&r, rc);
out:
	sp_run_release(&r);
	sp_cli_args_release(&a);
	return rc;
}
