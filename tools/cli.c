#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

struct sp_profile *sp_cli_read_profile(const char *path)
{
	char err[512];
	struct sp_profile *p = sp_profile_read(path, err, sizeof(err));
	if (!p) {
		sp_cli_error("%s", err);
		return NULL;
	}
	if (p->status != SP_READ_OK)
		sp_cli_warn("%s: %s; using the %zu samples read before that", path, p->error,
			    p->n_samples);
	return p;
}

int sp_cli_model_option(struct sp_model_opts *mo, int32_t **tids, int opt, const char *arg,
			const char *usage, int *rc)
{
	switch (opt) {
	case SP_OPT_THREAD:
		free(*tids);
		*tids = NULL;
		if (sp_model_parse_tids(arg, tids, &mo->n_tids)) {
			sp_cli_error("--thread: '%s' is not a list of thread ids", arg);
			*rc = SP_EXIT_USAGE;
			return 0;
		}
		mo->tids = *tids;
		return 1;
	case SP_OPT_RANGE:
		mo->range = arg;
		return 1;
	case SP_OPT_NO_RANGES:
		mo->no_ranges = true;
		return 1;
	case SP_OPT_NO_INLINE:
		mo->sym_flags |= SP_SYM_NO_INLINE;
		return 1;
	case SP_OPT_BASENAMES:
		mo->sym_flags |= SP_SYM_BASENAMES;
		return 1;
	case SP_OPT_SEARCH_DIR:
		mo->search_dir = arg;
		return 1;
	default:
		*rc = sp_cli_usage(usage, true);
		return 0;
	}
}

/* Lines that change what the output means: a binary not used, or not found. */
static bool sp_cli_warning_matters(const char *line, size_t len)
{
	static const char *const keys[] = {"not used", "cannot open", "cannot read", "not an ELF"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t k = strlen(keys[i]);
		for (size_t j = 0; j + k <= len; j++)
			if (!memcmp(line + j, keys[i], k))
				return true;
	}
	return false;
}

struct sp_model *sp_cli_build_model(const char *path, const struct sp_profile *prof,
				    const struct sp_model_opts *mo)
{
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

int sp_cli_finish_output(FILE *f, const char *name)
{
	if (fflush(f) == 0 && !ferror(f))
		return SP_EXIT_OK;
	if (errno == EPIPE)
		return SP_EXIT_OK;
	sp_cli_error("writing %s: %s", name, strerror(errno));
	return SP_EXIT_ERROR;
}

int sp_cli_end_output(FILE *out, const char *name, int err, bool partial)
{
	int rc;
	if (err && err != -EPIPE) {
		sp_cli_error("writing %s: %s", strcmp(name, "-") ? name : "stdout", strerror(-err));
		rc = SP_EXIT_ERROR;
	} else {
		rc = err ? SP_EXIT_OK : sp_cli_finish_output(out, name);
	}
	if (out != stdout && fclose(out) && rc == SP_EXIT_OK) {
		sp_cli_error("writing %s: %s", name, strerror(errno));
		rc = SP_EXIT_ERROR;
	}
	if (rc == SP_EXIT_OK && partial)
		rc = SP_EXIT_ERROR;
	return rc;
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

bool sp_cli_parse_ulong(const char *opt, const char *s, unsigned long min, unsigned long max,
			unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v < min || v > max) {
		sp_cli_error("%s: '%s' is not a number from %lu to %lu", opt, s, min, max);
		return false;
	}
	*out = v;
	return true;
}

int sp_cli_usage(const char *text, bool is_error)
{
	fputs(text, is_error ? stderr : stdout);
	return is_error ? SP_EXIT_USAGE : SP_EXIT_OK;
}

bool sp_cli_operands(int argc, int optind, int want, const char *what, const char *usage, int *rc)
{
	if (argc - optind == want)
		return true;
	sp_cli_error("%s", what);
	*rc = sp_cli_usage(usage, true);
	return false;
}

bool sp_cli_parse_metric(const char *s, enum sp_metric *out)
{
	if (!strcmp(s, "us"))
		*out = SP_METRIC_US;
	else if (!strcmp(s, "samples"))
		*out = SP_METRIC_SAMPLES;
	else {
		sp_cli_error("--metric: '%s' is not us or samples", s);
		return false;
	}
	return true;
}

bool sp_cli_parse_frame(const char *s, enum sp_label_style *out)
{
	if (sp_label_style_parse(s, out) == 0)
		return true;
	sp_cli_error("--frame: '%s' is not 'func', 'func (file:line)' or 'pytorch'", s);
	return false;
}

bool sp_cli_load(const char *path, const struct sp_model_opts *mo, struct sp_cli_input *in)
{
	in->prof = sp_cli_read_profile(path);
	if (!in->prof)
		return false;
	in->model = sp_cli_build_model(path, in->prof, mo);
	return in->model != NULL;
}

bool sp_cli_partial(const struct sp_cli_input *in)
{
	return in->prof && in->prof->status != SP_READ_OK;
}

void sp_cli_unload(struct sp_cli_input *in)
{
	sp_model_free(in->model);
	sp_profile_free(in->prof);
	in->model = NULL;
	in->prof = NULL;
}
