/*
 * cmd-run.c - `stackprof run`: run a program with libstackprof.so preloaded,
 * keep its exit status and signals, then summarize the profile.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "model.h"
#include "summary.h"

static const char sp_run_usage[] =
    "usage: stackprof run [options] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD with libstackprof.so preloaded: every thread is sampled on its own\n"
    "CPU-time timer, stacks are unwound in the signal handler and streamed to a\n"
    "raw profile. Children (fork) write PATH.<pid>; exec'ed programs are profiled\n"
    "too. CMD's exit status and signals pass through unchanged. When CMD ends,\n"
    "a summary goes to stderr.\n"
    "\n"
    "options:\n"
    "  -o, --output PATH     raw profile path (default stackprof.<pid>.prof); an\n"
    "                        earlier stackprof profile there is replaced once\n"
    "                        the new one is written; any other file is refused\n"
    "  -F, --freq HZ         samples per second of CPU time per thread, 1-20000\n"
    "                        (default 100; above 250 Hz a perf_event task-clock\n"
    "                        timer is used where permitted)\n"
    "      --timer KIND      auto, posix, trap, perf, thread or itimer (default\n"
    "                        auto):\n"
    "                        posix  POSIX CPU timers, SIGPROF; at most one\n"
    "                               signal per kernel tick (HZ)\n"
    "                        trap   perf task-clock, SIGTRAP sent by the kernel\n"
    "                               (Linux 5.13+; the program's own SIGTRAP use\n"
    "                               is kept); auto's choice above 250 Hz\n"
    "                        perf   perf task-clock, SIGPROF through fasync;\n"
    "                               auto's choice under a debugger\n"
    "                        thread a thread of stackprof's sends SIGPROF to\n"
    "                               the threads running at each period; no\n"
    "                               perf_event needed (containers); cheapest\n"
    "                               in VMs, but samples lean towards system\n"
    "                               calls where IPIs are slow (docs/SAMPLER.md)\n"
    "                        itimer setitimer(ITIMER_PROF), process-wide\n"
    "      --unwind MODE     fast, libunwind or check (default fast):\n"
    "                        fast       each frame by its .eh_frame rule, cached\n"
    "                                   by address; libunwind for the frames a\n"
    "                                   rule can't step (signal frames, PLT)\n"
    "                        libunwind  libunwind for every frame\n"
    "                        check      both on every sample; `stackprof info`\n"
    "                                   counts the samples where they differ\n"
    "      --max-depth N     deepest stack kept, 8-4096 (default 512); deeper\n"
    "                        stacks are kept truncated and marked\n"
    "      --flush-ms N      how often the profile is flushed to disk (default 200)\n"
    "      --top N           functions shown in the summary (default 10)\n"
    "      --no-summary      print nothing but errors\n"
    "      --schedule W,U,A[,R]  sample only active steps (needs stackprof_step())\n"
    "      --paused          start with sampling off (stackprof_start() turns it on)\n"
    "  -h, --help            this text\n"
    "\n"
    "environment read by libstackprof.so (set by this command from its options):\n"
    "  STACKPROF_OUT         raw profile path (default stackprof.<pid>.prof)\n"
    "  STACKPROF_FREQ        sampling rate in Hz per thread, 1-20000 (default 100)\n"
    "  STACKPROF_TIMER       auto | posix | trap | perf | thread | itimer (default auto)\n"
    "  STACKPROF_UNWIND      fast | libunwind | check (default fast)\n"
    "  STACKPROF_MAX_DEPTH   frames kept per stack, 8-4096 (default 512)\n"
    "  STACKPROF_RING_KB     per-thread sample buffer, 64-65536 KiB (default 1024)\n"
    "  STACKPROF_FLUSH_MS    flush interval, 10-60000 ms (default 200)\n"
    "  STACKPROF_SCHEDULE    wait,warmup,active[,repeat] steps (torch.profiler.schedule)\n"
    "  STACKPROF_START       0: start paused until stackprof_start()\n"
    "  STACKPROF_OVERWRITE   1: replace an existing STACKPROF_OUT file\n"
    "  STACKPROF_QUIET       1: no messages from the library\n"
    "  STACKPROF_VERBOSE     1: say where the profile goes and with which timer\n"
    "  STACKPROF_MANIFEST    file to which each profiled process appends its path\n"
    "  STACKPROF_LIB         (for this command) path of libstackprof.so to preload\n"
    "this command also sets DNNL_JIT_PROFILE=2 unless set, so oneDNN's JIT kernels\n"
    "are named (from /tmp/perf-<pid>.map, copied into the profile).\n"
    "\n"
    "examples:\n"
    "  stackprof run -- ./resnet18 --batch 8\n"
    "  stackprof run -o rn.prof -F 1000 -- ./resnet18\n"
    "  stackprof run -o torch.prof -- /usr/bin/python3 infer.py\n"
    "  LD_PRELOAD=/path/libstackprof.so STACKPROF_OUT=x.prof ./prog   (the same, by hand)\n";

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

static pid_t sp_child;

static void sp_forward(int sig)
{
	if (sp_child > 0)
		kill(sp_child, sig);
}

struct sp_run_opts {
	const char *out;
	const char *freq, *timer, *unwind, *max_depth, *flush_ms, *schedule;
	unsigned long top;
	bool summary, paused;
};

static int sp_setenv_checked(const char *k, const char *v)
{
	if (setenv(k, v, 1) < 0) {
		sp_cli_error("setenv %s: %s", k, strerror(errno));
		return -1;
	}
	return 0;
}

/* Reads the manifest: one absolute path per profiled process, in start order. */
static char **sp_read_manifest(const char *path, size_t *n)
{
	*n = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char **v = NULL;
	size_t cap = 0;
	char line[8192];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			char **w = realloc(v, cap * sizeof(*v));
			if (!w)
				break;
			v = w;
		}
		v[(*n)++] = strdup(line);
	}
	fclose(f);
	return v;
}

static void sp_print_summary(const char *path, const struct sp_run_opts *o)
{
	struct sp_profile *p = sp_cli_read_profile(path);
	if (!p)
		return;
	struct sp_model_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.no_ranges = true;
	struct sp_model *m = sp_cli_build_model(path, p, &mo);
	struct sp_summary s;
	sp_summary_compute(p, m, &s);
	fprintf(stderr, "stackprof: %s (pid %d)\n", p->header.cmdline, p->header.pid);
	sp_summary_print_counts(stderr, p, &s, "stackprof: ");
	if (m && o->top)
		sp_summary_print_top(stderr, m, o->top, "  ");
	sp_model_free(m);
	sp_profile_free(p);
}

/* Removes /tmp/perf-<pid>.map files that exist only because we set DNNL_JIT_PROFILE. */
static void sp_remove_perf_map(const char *prof_path)
{
	struct sp_profile *p = sp_profile_read(prof_path, NULL, 0);
	if (!p)
		return;
	char map[64];
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", p->header.pid);
	struct stat st;
	if (p->n_jits && lstat(map, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid())
		unlink(map);
	sp_profile_free(p);
}

/* 1 if path begins with the raw profile's magic, 0 if not, -errno if it
 * cannot be read. */
static int sp_is_profile(const char *path)
{
	char magic[SP_PROFILE_MAGIC_LEN];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int is = read(fd, magic, sizeof(magic)) == (ssize_t)sizeof(magic) &&
		 !memcmp(magic, SP_PROFILE_MAGIC, sizeof(magic));
	close(fd);
	return is;
}

/* The file execvp(cmd) runs, into out: cmd itself if it has a slash, else
 * the first executable regular file of that name along PATH. */
static bool sp_resolve_cmd(const char *cmd, char *out, size_t cap)
{
	struct stat st;
	if (strchr(cmd, '/'))
		return snprintf(out, cap, "%s", cmd) < (int)cap;
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

/* Whether the ELF executable at path has no program interpreter (static). */
static bool sp_elf_static(const char *path)
{
	Elf64_Ehdr eh;
	bool is_static = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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

/* Tells why no profile was written, as precisely as the program's file allows. */
static void sp_explain_no_profile(const char *cmd, const char *kept)
{
	char file[PATH_MAX];
	const char *why = sp_preload_refused(cmd, file, sizeof(file));
	if (why)
		fprintf(stderr, "stackprof: no profile was written: %s %s; it ran unprofiled\n",
			file, why);
	else
		fprintf(stderr, "stackprof: no profile was written (did the program clear "
				"LD_PRELOAD, or exec a static or set-user-ID one?)\n");
	if (kept)
		fprintf(stderr, "stackprof: %s still holds the earlier profile\n", kept);
}

/*
 * The first profile went to PATH.<pid> because an earlier profile held
 * PATH: now that the new one exists, it takes PATH's place (one rename, so
 * PATH always holds a whole profile).
 */
static void sp_take_place(char **first, const char *out)
{
	struct stat a, b;
	if (stat(*first, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		return;
	if (rename(*first, out) < 0) {
		sp_cli_warn("run: cannot replace %s: %s; the profile is in %s", out,
			    strerror(errno), *first);
		return;
	}
	char *dup = strdup(out);
	if (dup) {
		free(*first);
		*first = dup;
	}
}

int sp_cmd_run(int argc, char **argv)
{
	struct sp_run_opts o = {.top = 10, .summary = true};
	int i;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return sp_cli_usage(sp_run_usage, false);
		if (!strcmp(a, "--no-summary")) {
			o.summary = false;
			continue;
		}
		if (!strcmp(a, "--paused")) {
			o.paused = true;
			continue;
		}
		const char **slot = NULL;
		if (!strcmp(a, "-o") || !strcmp(a, "--output"))
			slot = &o.out;
		else if (!strcmp(a, "-F") || !strcmp(a, "--freq"))
			slot = &o.freq;
		else if (!strcmp(a, "--timer"))
			slot = &o.timer;
		else if (!strcmp(a, "--unwind"))
			slot = &o.unwind;
		else if (!strcmp(a, "--max-depth"))
			slot = &o.max_depth;
		else if (!strcmp(a, "--flush-ms"))
			slot = &o.flush_ms;
		else if (!strcmp(a, "--schedule"))
			slot = &o.schedule;
		else if (!strcmp(a, "--top")) {
			if (!next)
				goto missing;
			if (!sp_cli_parse_ulong("--top", next, 0, 100000, &o.top))
				return SP_EXIT_USAGE;
			i++;
			continue;
		} else {
			sp_cli_error("run: unknown option '%s'", a);
			return sp_cli_usage(sp_run_usage, true);
		}
		if (!next)
			goto missing;
		*slot = next;
		i++;
		continue;
	missing:
		sp_cli_error("run: option '%s' needs a value", a);
		return SP_EXIT_USAGE;
	}
	if (i >= argc) {
		sp_cli_error("run: no command given");
		return sp_cli_usage(sp_run_usage, true);
	}
	unsigned long v;
	if (o.freq && !sp_cli_parse_ulong("--freq", o.freq, 1, 20000, &v))
		return SP_EXIT_USAGE;
	if (o.max_depth && !sp_cli_parse_ulong("--max-depth", o.max_depth, 8, 4096, &v))
		return SP_EXIT_USAGE;
	if (o.flush_ms && !sp_cli_parse_ulong("--flush-ms", o.flush_ms, 10, 60000, &v))
		return SP_EXIT_USAGE;
	if (o.timer && strcmp(o.timer, "auto") && strcmp(o.timer, "posix") &&
	    strcmp(o.timer, "perf") && strcmp(o.timer, "trap") && strcmp(o.timer, "thread") &&
	    strcmp(o.timer, "itimer")) {
		sp_cli_error("run: --timer must be auto, posix, trap, perf, thread or itimer");
		return SP_EXIT_USAGE;
	}
	if (o.unwind && strcmp(o.unwind, "fast") && strcmp(o.unwind, "libunwind") &&
	    strcmp(o.unwind, "check")) {
		sp_cli_error("run: --unwind must be fast, libunwind or check");
		return SP_EXIT_USAGE;
	}
	if (o.schedule) {
		unsigned a0, a1, a2, a3 = 0;
		char extra;
		int k = sscanf(o.schedule, "%u,%u,%u,%u%c", &a0, &a1, &a2, &a3, &extra);
		if ((k != 3 && k != 4) || a2 == 0) {
			sp_cli_error(
			    "run: --schedule wants wait,warmup,active[,repeat] with active > 0");
			return SP_EXIT_USAGE;
		}
	}

	char lib[PATH_MAX];
	if (!sp_find_lib(lib, sizeof(lib))) {
		sp_cli_error("run: cannot find libstackprof.so (looked next to this program and in "
			     "../lib; set STACKPROF_LIB)");
		return SP_EXIT_ERROR;
	}
	/* An earlier profile at -o is replaced after the run, and only by a new
	 * one: a program that is never profiled leaves it as it was. Anything
	 * else there is somebody's file. */
	bool replace = false;
	if (o.out) {
		struct stat st;
		if (lstat(o.out, &st) == 0) {
			int is = S_ISREG(st.st_mode) ? sp_is_profile(o.out) : 0;
			if (is < 0) {
				sp_cli_error("run: %s exists and cannot be read (%s); not "
					     "replacing it",
					     o.out, strerror(-is));
				return SP_EXIT_ERROR;
			}
			if (!is) {
				sp_cli_error("run: %s exists and is not a stackprof profile; not "
					     "replacing it (remove it, or choose another -o)",
					     o.out);
				return SP_EXIT_ERROR;
			}
			replace = true;
		}
	}
	char manifest[] = "/tmp/stackprof-manifest-XXXXXX";
	int mfd = mkstemp(manifest);
	if (mfd < 0) {
		sp_cli_error("run: cannot create a temporary file: %s", strerror(errno));
		return SP_EXIT_ERROR;
	}
	close(mfd);

	/* the environment the child inherits */
	const char *old_preload = getenv("LD_PRELOAD");
	size_t plen = strlen(lib) + (old_preload ? strlen(old_preload) : 0) + 2;
	char *preload = malloc(plen);
	if (!preload) {
		unlink(manifest);
		return SP_EXIT_ERROR;
	}
	snprintf(preload, plen, "%s%s%s", lib, old_preload && *old_preload ? ":" : "",
		 old_preload ? old_preload : "");
	bool set_jit = !getenv("DNNL_JIT_PROFILE");
	if (sp_setenv_checked("LD_PRELOAD", preload) ||
	    sp_setenv_checked("STACKPROF_MANIFEST", manifest) ||
	    (o.out && sp_setenv_checked("STACKPROF_OUT", o.out)) ||
	    (o.freq && sp_setenv_checked("STACKPROF_FREQ", o.freq)) ||
	    (o.timer && sp_setenv_checked("STACKPROF_TIMER", o.timer)) ||
	    (o.unwind && sp_setenv_checked("STACKPROF_UNWIND", o.unwind)) ||
	    (o.max_depth && sp_setenv_checked("STACKPROF_MAX_DEPTH", o.max_depth)) ||
	    (o.flush_ms && sp_setenv_checked("STACKPROF_FLUSH_MS", o.flush_ms)) ||
	    (o.schedule && sp_setenv_checked("STACKPROF_SCHEDULE", o.schedule)) ||
	    (o.paused && sp_setenv_checked("STACKPROF_START", "0")) ||
	    (set_jit && sp_setenv_checked("DNNL_JIT_PROFILE", "2"))) {
		free(preload);
		unlink(manifest);
		return SP_EXIT_ERROR;
	}
	free(preload);

	fflush(NULL);
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		sp_cli_error("run: pipe: %s", strerror(errno));
		unlink(manifest);
		return SP_EXIT_ERROR;
	}
	sp_child = fork();
	if (sp_child < 0) {
		sp_cli_error("run: fork: %s", strerror(errno));
		unlink(manifest);
		return SP_EXIT_ERROR;
	}
	if (sp_child == 0) {
		close(errpipe[0]);
		signal(SIGPIPE, SIG_DFL); /* main() ignored it for our own output */
		execvp(argv[i], argv + i);
		int e = errno;
		ssize_t w = write(errpipe[1], &e, sizeof(e));
		(void)w;
		_exit(e == ENOENT ? 127 : 126);
	}
	close(errpipe[1]);
	/* like time(1): the terminal's ^C reaches the child; we wait for it */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, sp_forward);
	signal(SIGHUP, sp_forward);
	int exec_errno = 0;
	ssize_t got = read(errpipe[0], &exec_errno, sizeof(exec_errno));
	close(errpipe[0]);
	int status = 0;
	while (waitpid(sp_child, &status, 0) < 0) {
		if (errno != EINTR) {
			sp_cli_error("run: waitpid: %s", strerror(errno));
			unlink(manifest);
			return SP_EXIT_ERROR;
		}
	}
	if (got == (ssize_t)sizeof(exec_errno)) {
		sp_cli_error("run: cannot run '%s': %s", argv[i], strerror(exec_errno));
		unlink(manifest);
		return WEXITSTATUS(status);
	}

	size_t nfiles = 0;
	char **files = sp_read_manifest(manifest, &nfiles);
	unlink(manifest);
	if (set_jit)
		for (size_t k = 0; k < nfiles; k++)
			sp_remove_perf_map(files[k]);
	if (replace && nfiles > 0)
		sp_take_place(&files[0], o.out);
	if (o.summary) {
		if (nfiles == 0) {
			sp_explain_no_profile(argv[i], replace ? o.out : NULL);
		} else {
			sp_print_summary(files[0], &o);
			fprintf(stderr, "stackprof: wrote %s", files[0]);
			for (size_t k = 1; k < nfiles; k++)
				fprintf(stderr, "%s%s",
					k == 1 ? "; children and exec'ed images: " : ", ",
					files[k]);
			fprintf(stderr,
				"\nstackprof: next: stackprof flamegraph %s -o profile.svg"
				" | stackprof table %s\n",
				files[0], files[0]);
		}
	}
	for (size_t k = 0; k < nfiles; k++)
		free(files[k]);
	free(files);

	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
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
	return WIFEXITED(status) ? WEXITSTATUS(status) : SP_EXIT_ERROR;
}
