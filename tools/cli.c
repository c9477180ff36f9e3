#define _GNU_SOURCE /* statx */
#include "tools/cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/textfmt.h"
#include "symbolize/bidcache.h"

void sp_cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("stackprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void sp_cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("stackprof: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---------------------------------------------------------------- the parser */

void sp_cli_args_init(struct sp_cli_args *a, const struct sp_cli_cmd *cmd, int argc, char **argv)
{
	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
	a->argc = argc;
	a->argv = argv;
	a->i = 1;
	a->operands = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*a->operands));
}

void sp_cli_args_release(struct sp_cli_args *a)
{
	free(a->operands);
	a->operands = NULL;
	a->n_operands = 0;
}

int sp_cli_bad(struct sp_cli_args *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "stackprof: %s: ", a->cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fprintf(stderr, "Try 'stackprof %s --help' for more information.\n", a->cmd->name);
	a->rc = SP_EXIT_USAGE;
	return SP_EXIT_USAGE;
}

static const struct sp_cli_opt *sp_cli_find_long(const struct sp_cli_cmd *cmd, const char *name,
						 size_t len)
{
	for (const struct sp_cli_opt *o = cmd->opts; o && o->key; o++)
		if (o->name && strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
	return NULL;
}

static const struct sp_cli_opt *sp_cli_find_short(const struct sp_cli_cmd *cmd, char c)
{
	for (const struct sp_cli_opt *o = cmd->opts; o && o->key; o++)
		if (o->short_name == c)
			return o;
	return NULL;
}

/* Takes the value of option o: the rest of its argument, or the next one. */
static int sp_cli_take(struct sp_cli_args *a, const struct sp_cli_opt *o, const char *inline_value)
{
	if (!o->arg) {
		if (inline_value) {
			sp_cli_bad(a, "option '%s' takes no value", a->spelled);
			return -1;
		}
		a->value = NULL;
		return o->key;
	}
	if (inline_value) {
		a->value = inline_value;
		return o->key;
	}
	/* whatever follows is the value, even "-1" (torch's "no row limit"),
	 * but not "--": `run -o -- prog` forgot the file, and would have
	 * written a profile named "--" */
	if (a->i >= a->argc || !strcmp(a->argv[a->i], "--")) {
		sp_cli_bad(a, "option '%s' needs a value (%s)", a->spelled, o->arg);
		return -1;
	}
	a->value = a->argv[a->i++];
	return o->key;
}

static int sp_cli_short(struct sp_cli_args *a)
{
	char c = *a->bundle++;
	snprintf(a->spelled, sizeof(a->spelled), "-%c", c);
	if (c == 'h') {
		a->bundle = NULL;
		a->rc = sp_cli_help(a->cmd, false);
		return -1;
	}
	const struct sp_cli_opt *o = sp_cli_find_short(a->cmd, c);
	if (!o) {
		sp_cli_bad(a, "unknown option '-%c'", c);
		return -1;
	}
	const char *rest = a->bundle;
	if (!*a->bundle)
		a->bundle = NULL;
	if (!o->arg)
		return sp_cli_take(a, o, NULL);
	a->bundle = NULL; /* -xVALUE: the rest of the cluster is the value */
	return sp_cli_take(a, o, *rest ? rest : NULL);
}

int sp_cli_next(struct sp_cli_args *a)
{
	if (!a->operands) {
		sp_cli_bad(a, "out of memory");
		return -1;
	}
	a->value = NULL;
	if (a->bundle)
		return sp_cli_short(a);
	while (a->i < a->argc) {
		char *arg = a->argv[a->i];
		if (a->options_done || arg[0] != '-' || !arg[1]) {
			/* an operand ("-" included: stdin or stdout) */
			if (a->cmd->stop_at_operand) {
				while (a->i < a->argc)
					a->operands[a->n_operands++] = a->argv[a->i++];
				return 0;
			}
			a->operands[a->n_operands++] = arg;
			a->i++;
			continue;
		}
		a->i++;
		if (!strcmp(arg, "--")) {
			a->options_done = true;
			continue;
		}
		if (arg[1] != '-') {
			a->bundle = arg + 1;
			return sp_cli_short(a);
		}
		const char *name = arg + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		snprintf(a->spelled, sizeof(a->spelled), "--%.*s", (int)len, name);
		if (len == 4 && !strncmp(name, "help", 4)) {
			a->rc = sp_cli_help(a->cmd, false);
			return -1;
		}
		const struct sp_cli_opt *o = sp_cli_find_long(a->cmd, name, len);
		if (!o) {
			sp_cli_bad(a, "unknown option '%s'", a->spelled);
			return -1;
		}
		return sp_cli_take(a, o, eq ? eq + 1 : NULL);
	}
	return 0;
}

/* The help line's left part: "  -o, --output FILE" or "      --range NAME". */
static int sp_cli_opt_left(const struct sp_cli_opt *o, char *buf, size_t cap)
{
	int n;
	if (o->short_name && o->name)
		n = snprintf(buf, cap, "  -%c, --%s", o->short_name, o->name);
	else if (o->short_name)
		n = snprintf(buf, cap, "  -%c", o->short_name);
	else
		n = snprintf(buf, cap, "      --%s", o->name);
	if (o->arg && n > 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, " %s", o->arg);
	return n;
}

#define SP_HELP_COL 25

int sp_cli_help(const struct sp_cli_cmd *cmd, bool is_error)
{
	FILE *f = is_error ? stderr : stdout;
	fprintf(f, "usage: stackprof %s %s\n", cmd->name, cmd->synopsis);
	if (cmd->about)
		fprintf(f, "\n%s", cmd->about);
	fputs("\noptions:\n", f);
	for (const struct sp_cli_opt *o = cmd->opts; o && o->key; o++) {
		if (!o->help)
			continue;
		char left[128];
		int n = sp_cli_opt_left(o, left, sizeof(left));
		fputs(left, f);
		const char *h = o->help;
		bool first = true;
		while (*h) {
			size_t len = strcspn(h, "\n");
			if (first && n < SP_HELP_COL)
				fprintf(f, "%*s", SP_HELP_COL - n, "");
			else
				fprintf(f, "\n%*s", SP_HELP_COL, "");
			fprintf(f, "%.*s", (int)len, h);
			first = false;
			h += len + (h[len] == '\n');
		}
		fputc('\n', f);
	}
	fprintf(f, "  -h, --help%*sshow this help (also: stackprof help %s)\n", SP_HELP_COL - 12,
		"", cmd->name);
	if (cmd->more)
		fprintf(f, "\n%s", cmd->more);
	return is_error ? SP_EXIT_USAGE : SP_EXIT_OK;
}

bool sp_cli_operands(struct sp_cli_args *a, int want, const char *what)
{
	if (a->n_operands == want)
		return true;
	sp_cli_bad(a, "expected %s", what);
	return false;
}

bool sp_cli_operands_some(struct sp_cli_args *a, const char *what)
{
	if (a->n_operands >= 1)
		return true;
	sp_cli_bad(a, "expected %s", what);
	return false;
}

bool sp_cli_ulong(struct sp_cli_args *a, unsigned long min, unsigned long max, unsigned long *out)
{
	const char *s = a->value;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v < min || v > max) {
		sp_cli_bad(a, "%s: '%s' is not a number from %lu to %lu", a->spelled, s, min, max);
		return false;
	}
	*out = v;
	return true;
}

bool sp_cli_regex(struct sp_cli_args *a, regex_t *re, bool *have)
{
	if (*have)
		regfree(re);
	*have = false;
	int e = regcomp(re, a->value, REG_EXTENDED | REG_NOSUB);
	if (e) {
		char msg[256];
		regerror(e, re, msg, sizeof(msg));
		sp_cli_bad(a, "%s: '%s': %s", a->spelled, a->value, msg);
		return false;
	}
	*have = true;
	return true;
}

bool sp_cli_row_limit(struct sp_cli_args *a, size_t *out)
{
	const char *s = a->value;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (!strcmp(s, "-1")) {
		*out = 0;
		return true;
	}
	if (!*s || *end || errno || s[0] == '-' || v > 1000000000) {
		sp_cli_bad(a,
			   "%s: '%s' is not a number of rows (up to 1000000000; 0 or -1 for all)",
			   a->spelled, s);
		return false;
	}
	*out = v;
	return true;
}

bool sp_cli_metric(struct sp_cli_args *a, enum sp_metric *out)
{
	if (!strcmp(a->value, "us"))
		*out = SP_METRIC_US;
	else if (!strcmp(a->value, "samples"))
		*out = SP_METRIC_SAMPLES;
	else {
		sp_cli_bad(a, "--metric: '%s' is not us or samples", a->value);
		return false;
	}
	return true;
}

bool sp_cli_frame(struct sp_cli_args *a, enum sp_label_style *out)
{
	if (sp_label_style_parse(a->value, out) == 0)
		return true;
	sp_cli_bad(a, "--frame: '%s' is not 'func', 'func (file:line)' or 'pytorch'", a->value);
	return false;
}

/* ---------------------------------------------------------------- shared options */

int sp_cli_filter(struct sp_cli_args *a, int key, struct sp_cli_filters *f)
{
	struct sp_model_opts *mo = &f->mo;
	switch (key) {
	case SP_OPT_THREAD:
		if (!a->value[0] || a->value[0] == ',' || strstr(a->value, ",,") ||
		    a->value[strlen(a->value) - 1] == ',') {
			sp_cli_bad(a, "--thread: '%s' is not a list of thread ids or names",
				   a->value);
			return -1;
		}
		f->threads = a->value;
		return 1;
	case SP_OPT_RANGE:
		mo->range = a->value;
		return 1;
	case SP_OPT_EVENT:
		/* checked against each profile's kinds when it is read */
		if (!a->value[0]) {
			sp_cli_bad(a, "--event: give an event kind (cpu, wall, alloc, free, user)");
			return -1;
		}
		mo->event = a->value;
		return 1;
	case SP_OPT_NO_RANGES:
		mo->no_ranges = true;
		return 1;
	case SP_OPT_ALL_SAMPLES:
		mo->all_samples = true;
		return 1;
	case SP_OPT_PYTHON_PLUMBING:
		mo->python_plumbing = true;
		return 1;
	case SP_OPT_NO_INLINE:
		mo->sym_flags |= SP_SYM_NO_INLINE;
		return 1;
	case SP_OPT_BASENAMES:
		mo->sym_flags |= SP_SYM_BASENAMES;
		return 1;
	case SP_OPT_NO_MODULE_CLASS:
		mo->module_bare = true;
		return 1;
	case SP_OPT_SEARCH_DIR:
		mo->search_dir = a->value;
		return 1;
	case SP_OPT_STRIP_PATH: {
		if (!strcmp(a->value, "auto")) {
			mo->short_paths = true;
			mo->whole_paths = false;
			return 1;
		}
		if (!strcmp(a->value, "none")) {
			mo->short_paths = false;
			mo->whole_paths = true;
			mo->n_strip_prefixes = 0;
			return 1;
		}
		if (!a->value[0]) {
			sp_cli_bad(a, "--strip-path: give a PREFIX, auto or none");
			return -1;
		}
		const char **v = realloc(f->strips, (mo->n_strip_prefixes + 1) * sizeof(*v));
		if (!v) {
			sp_cli_bad(a, "out of memory");
			return -1;
		}
		f->strips = v;
		v[mo->n_strip_prefixes++] = a->value;
		mo->strip_prefixes = v;
		return 1;
	}
	default:
		return 0;
	}
}

void sp_cli_filters_release(struct sp_cli_filters *f)
{
	free(f->strips);
	f->strips = NULL;
}

/* ---------------------------------------------------------------- profiles and output */

struct sp_profile *sp_cli_read_profile(const char *path)
{
	char err[1024];
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	if (!p) {
		sp_cli_error("%s", err);
		return NULL;
	}
	/* Cut off: whole up to its last flush, then nothing (the reader checked
	 * every flush before). That is what a killed process leaves (a Pool's
	 * SIGTERMed workers, a raw exit_group): the output is that of the run
	 * up to then, so one line says so and the status stays 0. Damage
	 * (CORRUPT) says the output is partial, and exits 1 (sp_cli_partial). */
	if (p->status == SP_READ_TRUNCATED)
		fprintf(stderr,
			"stackprof: note: %s ends at its last flush (the process was killed or "
			"ended without finishing the profile): %zu sample%s read, the last "
			"moments are missing\n",
			path, p->n_samples, p->n_samples == 1 ? "" : "s");
	else if (p->status != SP_READ_OK)
		sp_cli_warn("%s: %s; using the %zu samples read before that: the output is partial "
			    "(exit status 1)",
			    path, p->error, p->n_samples);
	return p;
}

/* Lines that change what the output means: a binary not used, not found or damaged. */
static bool sp_cli_warning_matters(const char *line, size_t len)
{
	static const char *const keys[] = {"not used", "cannot open",	"cannot read", "not an ELF",
					   "damaged",  "not a regular", "too large to"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t k = strlen(keys[i]);
		for (size_t j = 0; j + k <= len; j++)
			if (!memcmp(line + j, keys[i], k))
				return true;
	}
	return false;
}

const char *sp_cli_cache_dir(void)
{
	static char dir[4096];
	const char *v = getenv("STACKPROF_CACHE_DIR");
	if (v && v[0])
		snprintf(dir, sizeof(dir), "%s", v);
	else if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/')
		snprintf(dir, sizeof(dir), "%s/stackprof", v);
	else if ((v = getenv("HOME")) && v[0])
		snprintf(dir, sizeof(dir), "%s/.cache/stackprof", v);
	else
		return NULL;
	return dir;
}

uint64_t sp_cli_cache_max(void)
{
	const char *v = getenv("STACKPROF_CACHE_MAX");
	if (!v || !v[0])
		return SP_BIDCACHE_DEFAULT_MAX;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || end == v || *end || v[0] == '-' || n > (UINT64_MAX >> shift)) {
		sp_cli_warn("STACKPROF_CACHE_MAX=%s is not a size (bytes, or with K, M or G); "
			    "using 1G",
			    v);
		return SP_BIDCACHE_DEFAULT_MAX;
	}
	return (uint64_t)n << shift;
}

struct sp_model *sp_cli_build_model(const char *path, const struct sp_profile *prof,
				    const struct sp_model_opts *opts)
{
	struct sp_model_opts mo_cached = *opts, *mo = &mo_cached;
	if (!mo->cache_dir)
		mo->cache_dir = sp_cli_cache_dir();
	struct sp_model *m = sp_model_build(prof, mo);
	if (!m) {
		sp_cli_error("%s: %s", path, strerror(errno));
		return NULL;
	}
	const char *w = sp_symbolizer_warnings(m->sym);
	int shown = 0, more = 0;
	while (w && *w) {
		const char *nl = strchr(w, '\n');
		size_t len = nl ? (size_t)(nl - w) : strlen(w);
		if (sp_cli_warning_matters(w, len)) {
			if (shown < 5)
				fprintf(stderr, "stackprof: warning: %.*s\n", (int)len, w);
			else
				more++;
			shown++;
		}
		w += len + (nl ? 1 : 0);
	}
	if (more)
		fprintf(stderr,
			"stackprof: warning: %d more like these ('stackprof info' lists them)\n",
			more);
	return m;
}

const char *sp_cli_output_name(const char *path)
{
	return !path || !strcmp(path, "-") ? "stdout" : path;
}

int sp_cli_finish_output(FILE *f, const char *path)
{
	if (fflush(f) == 0 && !ferror(f))
		return SP_EXIT_OK;
	if (errno == EPIPE)
		return SP_EXIT_OK;
	sp_cli_error("writing %s: %s", sp_cli_output_name(path), strerror(errno));
	return SP_EXIT_ERROR;
}

int sp_cli_end_output(FILE *out, const char *path, int err, bool partial)
{
	int rc;
	if (err && err != -EPIPE) {
		sp_cli_error("writing %s: %s", sp_cli_output_name(path), strerror(-err));
		rc = SP_EXIT_ERROR;
	} else {
		rc = err ? SP_EXIT_OK : sp_cli_finish_output(out, path);
	}
	if (out != stdout && fclose(out) && rc == SP_EXIT_OK) {
		sp_cli_error("writing %s: %s", sp_cli_output_name(path), strerror(errno));
		rc = SP_EXIT_ERROR;
	}
	if (rc == SP_EXIT_OK && partial)
		rc = SP_EXIT_ERROR;
	return rc;
}

bool sp_cli_output_ok(const char *path)
{
	if (!path || !strcmp(path, "-"))
		return true;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		sp_cli_error("cannot write %s: it names a directory", path);
		return false;
	}
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	int err = 0;
	if (stat(dir, &st) != 0)
		err = errno;
	else if (!S_ISDIR(st.st_mode))
		err = ENOTDIR;
	else if (access(dir, W_OK | X_OK) != 0)
		err = errno;
	if (err)
		sp_cli_error("cannot write %s: %s", path, strerror(err));
	return err == 0;
}

FILE *sp_cli_open_output(const char *path)
{
	if (!strcmp(path, "-"))
		return stdout;
	FILE *f = fopen(path, "w");
	if (!f)
		sp_cli_error("cannot write %s: %s", path, strerror(errno));
	return f;
}

/* "  4242 py-worker, 4243 python3, ..." of p's threads, into out. */
static void sp_cli_list_threads(const struct sp_profile *p, char *out, size_t cap)
{
	size_t len = 0, shown = 0;
	out[0] = '\0';
	for (size_t i = 0; i < p->n_threads && len < cap; i++) {
		bool dup = false; /* a renamed thread has a record per name: its last */
		for (size_t j = i + 1; j < p->n_threads && !dup; j++)
			dup = p->threads[j].tid == p->threads[i].tid;
		if (dup)
			continue;
		if (shown++ == 12) {
			snprintf(out + len, cap - len, ", ...");
			return;
		}
		const char *name = p->threads[i].name;
		int n = snprintf(out + len, cap - len, "%s%d %s", len ? ", " : "",
				 p->threads[i].tid, name && name[0] ? name : "(unnamed)");
		len += n > 0 ? (size_t)n : 0;
	}
}

/* Whether item names thread record t: its id, its name, or name-id (the
 * --per-thread views' roots). */
static bool sp_cli_thread_is(const struct sp_prof_thread *t, const char *item, size_t n)
{
	char id[16];
	snprintf(id, sizeof(id), "%d", t->tid);
	if (strlen(id) == n && !strncmp(item, id, n))
		return true;
	const char *name = t->name ? t->name : "";
	size_t k = strlen(name);
	if (!k || n < k || strncmp(item, name, k))
		return false;
	return n == k ||
	       (item[k] == '-' && n - k - 1 == strlen(id) && !strncmp(item + k + 1, id, n - k - 1));
}

/* Adds tid to the list once; false if there is no memory for it. */
static bool sp_tids_add(int32_t **tids, size_t *n, size_t *cap, int32_t tid)
{
	for (size_t j = 0; j < *n; j++)
		if ((*tids)[j] == tid)
			return true;
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 8;
		int32_t *v = realloc(*tids, c * sizeof(*v));
		if (!v)
			return false;
		*tids = v;
		*cap = c;
	}
	(*tids)[(*n)++] = tid;
	return true;
}

/* The thread ids --thread's items name in p, into *tids (malloc'd, the
 * caller frees it, also on failure); false after saying which item names
 * no thread, and what threads p has. */
static bool sp_cli_resolve_threads(const char *path, const char *spec, const struct sp_profile *p,
				   int32_t **tids, size_t *n)
{
	*tids = NULL;
	*n = 0;
	size_t cap = 0;
	for (const char *item = spec; *item;) {
		size_t len = strcspn(item, ",");
		bool found = false, ok = true;
		for (size_t i = 0; i < p->n_threads && ok; i++)
			if (sp_cli_thread_is(&p->threads[i], item, len)) {
				found = true;
				ok = sp_tids_add(tids, n, &cap, p->threads[i].tid);
			}
		/* an id with no THREAD record (a cut-off profile) is still its samples' */
		char *end;
		long id = strtol(item, &end, 10);
		for (size_t i = 0; !found && ok && end == item + len && id > 0 && i < p->n_samples;
		     i++)
			if (p->samples[i].tid == id) {
				found = true;
				ok = sp_tids_add(tids, n, &cap, (int32_t)id);
			}
		if (!ok) {
			sp_cli_error("%s: %s", path, strerror(ENOMEM));
			return false;
		}
		if (!found) {
			char list[1024];
			sp_cli_list_threads(p, list, sizeof(list));
			sp_cli_error(
			    "--thread: %s has no thread '%.*s' (by id or name); its threads: %s",
			    path, (int)len, item, list[0] ? list : "none");
			return false;
		}
		item += len + (item[len] == ',');
	}
	return true;
}

/* Whether p has a range named name; if not, says so with the names it has. */
static bool sp_cli_range_known(const char *path, const char *name, const struct sp_profile *p)
{
	char list[1024] = "";
	size_t len = 0, shown = 0;
	for (size_t i = 0; i < p->n_ranges; i++) {
		const char *r = p->ranges[i].name;
		if (!r)
			continue;
		if (!strcmp(r, name))
			return true;
		bool seen = false; /* names repeat: one record per push site */
		for (size_t j = 0; j < i && !seen; j++)
			seen = p->ranges[j].name && !strcmp(p->ranges[j].name, r);
		if (seen || shown > 12 || len >= sizeof(list))
			continue; /* go on looking for name all the same */
		int k = ++shown <= 12
			    ? snprintf(list + len, sizeof(list) - len, "%s'%s'", len ? ", " : "", r)
			    : snprintf(list + len, sizeof(list) - len, ", ...");
		len = k > 0 ? len + (size_t)k : len;
	}
	if (list[0])
		sp_cli_error("--range: %s has no range named '%s'; its ranges: %s", path, name,
			     list);
	else
		sp_cli_error("--range: %s has no named ranges (stackprof.record_function, "
			     "label_modules, stackprof_range_push)",
			     path);
	return false;
}

void sp_cli_list_events(const struct sp_profile *p, const char *sep, char *out, size_t cap)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t e = 0; e < p->n_events; e++) {
		uint64_t n = 0, w = 0;
		for (size_t i = 0; i < p->n_samples; i++)
			if (p->samples[i].event == p->events[e].id) {
				n++;
				w += p->samples[i].weight_ns;
			}
		if (!n || len >= cap)
			continue;
		char wt[SP_TEXTFMT_LEN + 64];
		sp_textfmt_weight(wt, sizeof(wt), w, p->events[e].unit);
		int k = snprintf(out + len, cap - len, "%s%s %llu sample%s (%s)", len ? sep : "",
				 p->events[e].name, (unsigned long long)n, n == 1 ? "" : "s", wt);
		len = k > 0 ? len + (size_t)k : len;
	}
	if (!out[0])
		snprintf(out, cap, "no samples");
}

/*
 * Whether p holds samples of the kind --event names; if not, says so with
 * the kinds it holds, and *rc is SP_EXIT_USAGE when neither stackprof nor
 * p knows the name (a typo), else SP_EXIT_ERROR.
 */
static bool sp_cli_event_held(const char *path, const char *name, const struct sp_profile *p,
			      int *rc)
{
	const struct sp_prof_event *e = sp_profile_event_named(p, name);
	for (size_t i = 0; e && i < p->n_samples; i++)
		if (p->samples[i].event == e->id)
			return true;
	char list[1024];
	sp_cli_list_events(p, ", ", list, sizeof(list));
	if (!e && !sp_prof_event_builtin_named(name)) {
		char known[256] = "";
		size_t len = 0;
		for (uint32_t i = 0; i < SP_EVENT_BUILTIN_COUNT && len < sizeof(known); i++) {
			int k = snprintf(known + len, sizeof(known) - len, "%s%s", i ? ", " : "",
					 sp_prof_event_builtin(i)->name);
			len = k > 0 ? len + (size_t)k : len;
		}
		sp_cli_error("--event: unknown event kind '%s' (stackprof knows %s; %s holds %s)",
			     name, known, path, list);
		*rc = SP_EXIT_USAGE;
	} else {
		sp_cli_error("--event: %s holds no %s samples; it holds %s", path, name, list);
		*rc = SP_EXIT_ERROR;
	}
	return false;
}

static bool sp_statx_after(struct statx_timestamp a, struct statx_timestamp b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

/*
 * The library never overwrites a profile: a plain LD_PRELOAD run whose
 * STACKPROF_OUT exists writes PATH.<pid> beside it, and a user who reads
 * PATH reads the earlier run's. Says so, once, when a PATH.<pid>[.<n>]
 * beside path was created after path was last written: no process of
 * path's own run (whose children write those names) starts that late.
 * Quiet where the file system keeps no creation time.
 */
static void sp_cli_note_later_run(const char *path)
{
	struct statx me, sib;
	if (statx(AT_FDCWD, path, 0, STATX_MTIME, &me) != 0)
		return;
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t blen = strlen(base);
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	DIR *d = dir ? opendir(dir) : NULL;
	char newest[256] = "";
	struct statx_timestamp newest_t = {0};
	struct dirent *e;
	while (d && (e = readdir(d))) {
		const char *rest = e->d_name + blen + 1;
		if (strncmp(e->d_name, base, blen) || e->d_name[blen] != '.' || !*rest ||
		    strspn(rest, "0123456789.") != strlen(rest) ||
		    strlen(e->d_name) >= sizeof(newest))
			continue;
		if (statx(dirfd(d), e->d_name, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sib) != 0 ||
		    !(sib.stx_mask & STATX_BTIME) || !sp_statx_after(sib.stx_btime, me.stx_mtime))
			continue;
		if (!newest[0] || sp_statx_after(sib.stx_btime, newest_t)) {
			snprintf(newest, sizeof(newest), "%s", e->d_name);
			newest_t = sib.stx_btime;
		}
	}
	if (newest[0])
		sp_cli_warn("%s is an earlier run's: %s%s%s was made after it (a run with plain "
			    "LD_PRELOAD never overwrites a profile: it writes PATH.<pid> beside "
			    "it); read that one, or set STACKPROF_OVERWRITE=1 to replace PATH",
			    path, slash ? dir : "", slash && strcmp(dir, "/") ? "/" : "", newest);
	if (d)
		closedir(d);
	free(dir);
}

bool sp_cli_load(const char *path, const struct sp_cli_filters *f, struct sp_cli_input *in)
{
	in->rc = SP_EXIT_ERROR;
	in->prof = sp_cli_read_profile(path);
	if (!in->prof)
		return false;
	/* asked for by name, a kind must be there; cpu by default need not
	 * (a process that never ran a sampled instruction has none) */
	if (f->mo.event && !sp_cli_event_held(path, f->mo.event, in->prof, &in->rc))
		return false;
	sp_cli_note_later_run(path);
	struct sp_model_opts mo = f->mo;
	int32_t *tids = NULL;
	if (f->threads && !sp_cli_resolve_threads(path, f->threads, in->prof, &tids, &mo.n_tids)) {
		free(tids);
		return false;
	}
	mo.tids = tids;
	if (mo.range && !sp_cli_range_known(path, mo.range, in->prof)) {
		free(tids);
		return false;
	}
	in->model = sp_cli_build_model(path, in->prof, &mo);
	free(tids); /* the model keeps the threads it kept, not the list */
	return in->model != NULL;
}

/* Whether the profile has a range pushed for an nn.Module call. */
static bool sp_cli_has_module_ranges(const struct sp_profile *p)
{
	for (size_t i = 0; p && i < p->n_ranges; i++)
		if (p->ranges[i].flags & SP_RANGE_MODULE)
			return true;
	return false;
}

void sp_cli_hint_by(const char *path, const struct sp_profile *p, enum sp_rollup_by by)
{
	if (by == SP_ROLLUP_MODULE_PATH && !sp_cli_has_module_ranges(p))
		sp_cli_warn("%s has no nn.Module ranges, so every sample is '[no module]': call "
			    "stackprof.torch.label_modules(model) before the model runs",
			    path);
}

struct sp_view *sp_cli_view_of(const char *path, const struct sp_model *m, enum sp_view_by by)
{
	struct sp_view *v = sp_view_new(m, by);
	if (!v)
		sp_cli_error("%s: %s", path, strerror(errno));
	return v;
}

struct sp_view *sp_cli_view(const char *path, const struct sp_model *m, enum sp_rollup_by by)
{
	sp_cli_hint_by(path, m->prof, by);
	return sp_cli_view_of(path, m,
			      by == SP_ROLLUP_MODULE_PATH ? SP_VIEW_MODULE_PATH : SP_VIEW_OP);
}

bool sp_cli_partial(const struct sp_cli_input *in)
{
	return in->prof && in->prof->status == SP_READ_CORRUPT;
}

void sp_cli_unload(struct sp_cli_input *in)
{
	sp_model_free(in->model);
	sp_profile_free(in->prof);
	in->model = NULL;
	in->prof = NULL;
}

bool sp_cli_load_set(char *const *paths, size_t n, const struct sp_cli_filters *f,
		     struct sp_cli_set *set)
{
	memset(set, 0, sizeof(*set));
	set->rc = SP_EXIT_ERROR;
	set->in = calloc(n ? n : 1, sizeof(*set->in));
	set->views = calloc(n ? n : 1, sizeof(*set->views));
	if (!set->in || !set->views) {
		sp_cli_error("%s", strerror(ENOMEM));
		return false;
	}
	set->n = n;
	/* every profile is read and symbolized on its own: each process had
	 * its own modules at its own addresses */
	for (size_t i = 0; i < n; i++)
		if (!sp_cli_load(paths[i], f, &set->in[i])) {
			set->rc = set->in[i].rc;
			return false;
		}
	set->model = set->in[0].model;
	return true;
}

bool sp_cli_set_merge(struct sp_cli_set *set, char *const *paths, bool per_process,
		      const enum sp_view_by *view)
{
	size_t n = set->n;
	const struct sp_model **models = calloc(n ? n : 1, sizeof(*models));
	bool ok = false;
	if (!models) {
		sp_cli_error("%s", strerror(ENOMEM));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		models[i] = set->in[i].model;
		if (view) {
			/* a view reads its own profile's ranges: made before the merge */
			if (*view == SP_VIEW_MODULE_PATH)
				sp_cli_hint_by(paths[i], set->in[i].prof, SP_ROLLUP_MODULE_PATH);
			set->views[i] = sp_cli_view_of(paths[i], models[i], *view);
			if (!set->views[i])
				goto out;
			models[i] = sp_view_model(set->views[i]);
		}
	}
	set->model = models[0];
	if (n > 1 || per_process) {
		set->merge = sp_merge_new(models, n, per_process);
		if (!set->merge) {
			sp_cli_error("merging %zu profiles: %s", n, strerror(errno));
			goto out;
		}
		set->model = sp_merge_model(set->merge);
	}
	ok = true;
out:
	free(models);
	return ok;
}

bool sp_cli_set_partial(const struct sp_cli_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		if (sp_cli_partial(&set->in[i]))
			return true;
	return false;
}

void sp_cli_set_release(struct sp_cli_set *set)
{
	sp_merge_free(set->merge);
	for (size_t i = 0; i < set->n; i++) {
		sp_view_free(set->views ? set->views[i] : NULL);
		sp_cli_unload(&set->in[i]);
	}
	free(set->views);
	free(set->in);
	memset(set, 0, sizeof(*set));
}
