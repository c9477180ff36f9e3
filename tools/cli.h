/*
 * cli.h - what every stackprof subcommand shares: the command table entry,
 * one option parser, the options several commands take (help text written
 * once, here), exit codes, error printing and checked output.
 *
 * Exit codes follow elfutils and git: 0 ok, 1 error (bad input, I/O), 2 usage.
 * Only tools/ prints or exits; the layers below return errors.
 *
 * A command describes itself with a struct sp_cli_cmd (its synopsis, text,
 * option table and examples) and reads its arguments with sp_cli_next():
 *
 *	struct sp_cli_args a;
 *	sp_cli_args_init(&a, &sp_top_cmd, argc, argv);
 *	while ((c = sp_cli_next(&a)) > 0)
 *		switch (c) { case 'o': output = a.value; break; ... }
 *	if (c < 0)
 *		return a.rc;	(help printed: 0; usage error printed: 2)
 *
 * Options may come before, between or after the operands, as --name VALUE,
 * --name=VALUE, -x VALUE, -xVALUE, or bundled flags (-fiC). "--" ends the
 * options. A command that runs another program (run) stops at its first
 * operand instead: everything from there on is the program's.
 *
 * A usage error prints one line saying what was wrong and one pointing to
 * the command's --help, and exits 2.
 */
#ifndef SP_TOOLS_CLI_H
#define SP_TOOLS_CLI_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "export/collapse.h"
#include "export/label.h"
#include "export/merge.h"
#include "export/model.h"
#include "format/profile.h"
#include "export/rollup.h"
#include "export/view.h"

#define SP_EXIT_OK    0
#define SP_EXIT_ERROR 1
#define SP_EXIT_USAGE 2

struct sp_command {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0] is the command name */
	const char *summary;
};

/*
 * One spelling of an option. Entries that share a key are one option: the
 * first with help text is what --help shows, the others (help NULL) are
 * accepted aliases.
 */
struct sp_cli_opt {
	int key;	  /* what sp_cli_next() returns; > 0 */
	char short_name;  /* 'o' for -o, or 0 */
	const char *name; /* "output" for --output, or NULL */
	const char *arg;  /* the value's name in the help ("FILE"); NULL for a flag */
	const char *help; /* lines separated by '\n'; NULL for an alias */
};

/* A command's description: its help is made from it. */
struct sp_cli_cmd {
	const char *name;	       /* "top" */
	const char *synopsis;	       /* "[options] PROFILE" */
	const char *about;	       /* what it does, before the options */
	const struct sp_cli_opt *opts; /* ended by an entry with key 0; -h/--help is implied */
	const char *more;	       /* after the options: environment, examples */
	bool stop_at_operand;	       /* the first operand ends the options (run) */
};

/* The parser's state; operands are collected as the options are read. */
struct sp_cli_args {
	const struct sp_cli_cmd *cmd;
	int argc;
	char **argv;
	int i;		    /* next argv index */
	const char *bundle; /* the rest of a "-abc" cluster */
	const char *value;  /* the current option's value (NULL for a flag) */
	char spelled[64];   /* the current option as written, for messages: "--top" */
	char **operands;    /* malloc'd; the strings are argv's */
	int n_operands;	    /* with stop_at_operand: the program and its arguments */
	int rc;		    /* the exit status when sp_cli_next() returns -1 */
	bool options_done;
};

/* argv[0] is the command name. */
void sp_cli_args_init(struct sp_cli_args *a, const struct sp_cli_cmd *cmd, int argc, char **argv);
void sp_cli_args_release(struct sp_cli_args *a);

/*
 * The next option's key, with its value in a->value; 0 when the options
 * are done (the operands are in a->operands); -1 when the command must stop
 * with exit status a->rc: after printing the help for -h/--help (0), or a
 * usage error such as an unknown option or a missing value (2).
 */
int sp_cli_next(struct sp_cli_args *a);

/* Prints the command's help: to stdout with status 0, or (is_error) to stderr with 2. */
int sp_cli_help(const struct sp_cli_cmd *cmd, bool is_error);

/*
 * Prints a usage error, "stackprof: NAME: <msg>", and the line pointing to
 * the command's --help; returns SP_EXIT_USAGE (also stored in a->rc).
 */
int sp_cli_bad(struct sp_cli_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Checks that there are exactly want operands; if not, prints "expected
 * WHAT" as a usage error and returns false.
 */
bool sp_cli_operands(struct sp_cli_args *a, int want, const char *what);

/* Checks that there is at least one operand; if not, prints "expected
 * WHAT" as a usage error and returns false. */
bool sp_cli_operands_some(struct sp_cli_args *a, const char *what);

/* Parses the current option's value as an integer in [min, max] (a usage error if not). */
bool sp_cli_ulong(struct sp_cli_args *a, unsigned long min, unsigned long max, unsigned long *out);

/*
 * --name REGEX: compiles the current option's value (POSIX extended,
 * matched anywhere) into *re, freeing an earlier one if *have; a usage
 * error, and *have false, if it does not compile.
 */
bool sp_cli_regex(struct sp_cli_args *a, regex_t *re, bool *have);

/* --row-limit N: 0 or -1 (torch's spelling) print every row. */
bool sp_cli_row_limit(struct sp_cli_args *a, size_t *out);

/* --metric us|samples and --frame STYLE, from the current option's value. */
bool sp_cli_metric(struct sp_cli_args *a, enum sp_metric *out);
bool sp_cli_frame(struct sp_cli_args *a, enum sp_label_style *out);

/* Prints "stackprof: <msg>\n" to stderr. */
void sp_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sp_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------ options several commands share */

/* Keys of the shared options (short options use their letter). */
enum {
	SP_OPT_THREAD = 0x1000,
	SP_OPT_RANGE,
	SP_OPT_NO_RANGES,
	SP_OPT_NO_INLINE,
	SP_OPT_BASENAMES,
	SP_OPT_SEARCH_DIR,
	SP_OPT_STRIP_PATH,
	SP_OPT_ROW_LIMIT,
	SP_OPT_SORT_BY,
	SP_OPT_FRAME,
	SP_OPT_METRIC,
	SP_OPT_PER_THREAD,
	SP_OPT_INLINE_MARK,
	SP_OPT_ALL_SAMPLES,
	SP_OPT_PYTHON_PLUMBING,
	SP_OPT_NO_MODULE_CLASS,
	SP_OPT_PER_PROCESS,
	SP_OPT_EVENT,
};

/* Their table entries; each help text exists only here. */
#define SP_CLI_OPT_OUTPUT                                                                          \
	{                                                                                          \
		'o', 'o', "output", "FILE", "write to FILE instead of stdout"                      \
	}

/* --row-limit N (-l), also spelled -t, --top and --limit; dflt: "default 20". */
#define SP_CLI_OPT_ROW_LIMIT(dflt)                                                                 \
	{SP_OPT_ROW_LIMIT, 'l', "row-limit", "N",                                                  \
	 "print at most N rows (" dflt "; 0 or -1 for all);\n"                                     \
	 "-t, --top and --limit are the same option"},                                             \
	    {SP_OPT_ROW_LIMIT, 't', "top", "N", NULL},                                             \
	{                                                                                          \
		SP_OPT_ROW_LIMIT, 0, "limit", "N", NULL                                            \
	}

/* --sort-by KEY (-s), also spelled --order-by and --sort; keys: the command's list. */
#define SP_CLI_OPT_SORT_BY(keys)                                                                   \
	{SP_OPT_SORT_BY, 's', "sort-by", "KEY",                                                    \
	 keys "\n--order-by and --sort are the same option"},                                      \
	    {SP_OPT_SORT_BY, 0, "order-by", "KEY", NULL},                                          \
	{                                                                                          \
		SP_OPT_SORT_BY, 0, "sort", "KEY", NULL                                             \
	}

/* --frame STYLE; dflt names the command's default style. */
#define SP_CLI_OPT_FRAME(dflt)                                                                     \
	{                                                                                          \
		SP_OPT_FRAME, 0, "frame", "STYLE",                                                 \
		    "frame text: 'func (file:line)', 'func', or 'pytorch'\n"                       \
		    "for PyTorch's 'file(line): func' (default " dflt ")"                          \
	}

#define SP_CLI_OPT_METRIC                                                                          \
	{                                                                                          \
		SP_OPT_METRIC, 0, "metric", "us|samples",                                          \
		    "values in CPU microseconds (default) or samples; with\n"                      \
		    "--event, the kind's weight (wall microseconds, bytes)"                        \
	}

#define SP_CLI_OPT_PER_THREAD                                                                      \
	{                                                                                          \
		SP_OPT_PER_THREAD, 0, "per-thread", NULL,                                          \
		    "root every stack at its thread (\"name-tid\")"                                \
	}

#define SP_CLI_OPT_PER_PROCESS                                                                     \
	{                                                                                          \
		SP_OPT_PER_PROCESS, 0, "per-process", NULL,                                        \
		    "root every stack at its process (\"python3 (pid N)\"),\n"                     \
		    "above the thread with --per-thread: the PROFILEs\n"                           \
		    "of one run (PATH PATH.*) side by side"                                        \
	}

#define SP_CLI_OPT_INLINE_MARK                                                                     \
	{                                                                                          \
		SP_OPT_INLINE_MARK, 0, "inline-mark", NULL,                                        \
		    "append _[i] to inlined frames (flamegraph.pl --color=java\n"                  \
		    "draws them aqua, as perf's --inline output)"                                  \
	}

/* The filters and symbolizer options of every command that reads stacks. */
#define SP_CLI_OPTS_FILTERS                                                                        \
	{SP_OPT_EVENT, 0, "event", "KIND",                                                         \
	 "show the samples of this event kind: cpu (the default),\n"                               \
	 "wall, alloc, free, user, or another kind the profile\n"                                  \
	 "names ('stackprof info' lists them); one kind at a time,\n"                              \
	 "as their weights are in different units"},                                               \
	    {SP_OPT_THREAD, 0, "thread", "T[,T]",                                                  \
	     "keep only these threads: ids, or names as the views\nshow them (py-worker)"},        \
	    {SP_OPT_RANGE, 0, "range", "NAME", "keep only samples inside a range named NAME"},     \
	    {SP_OPT_NO_RANGES, 0, "no-ranges", NULL, "leave named ranges out"},                    \
	    {SP_OPT_NO_INLINE, 0, "no-inline", NULL, "one frame per address: no inlined frames"},  \
	    {SP_OPT_ALL_SAMPLES, 0, "all-samples", NULL,                                           \
	     "keep samples outside the program's profile() windows\n"                              \
	     "(stackprof.profile(), stackprof_window_begin); by\n"                                 \
	     "default a profile with windows shows only theirs"},                                  \
	    {SP_OPT_PYTHON_PLUMBING, 0, "python-plumbing", NULL,                                   \
	     "keep the interpreter's own C frames (_PyEval_EvalFrameDefault,\n"                    \
	     "_PyFunction_Vectorcall, ...) between Python frames; by\n"                            \
	     "default they are folded away"},                                                      \
	    {SP_OPT_NO_MODULE_CLASS, 0, "no-module-class", NULL,                                   \
	     "module paths without their module's class: features/0/1,\n"                          \
	     "not features/0/1 (BatchNorm2d)"},                                                    \
	    {SP_OPT_BASENAMES, 0, "basenames", NULL, "file names without directories"},            \
	    {SP_OPT_STRIP_PATH, 0, "strip-path", "PREFIX",                                         \
	     "remove PREFIX from the start of file names; 'auto'\n"                                \
	     "shortens build trees (/build/pkg-1.0/Python/ceval.c\n"                               \
	     "becomes Python/ceval.c) and the current directory;\n"                                \
	     "'none' keeps whole paths; may be given again"},                                      \
	{                                                                                          \
		SP_OPT_SEARCH_DIR, 0, "search-dir", "DIR",                                         \
		    "look for binaries missing at their recorded path in DIR"                      \
	}

/* What the filters set: model options, and the memory behind them. */
struct sp_cli_filters {
	struct sp_model_opts mo;
	/* --thread as given: ids and names, resolved against each profile by
	 * sp_cli_load (two runs of one program have other ids, the same names) */
	const char *threads;
	const char **strips; /* mo.strip_prefixes points here; the strings are argv's */
};

/*
 * Applies key if it is one of SP_CLI_OPTS_FILTERS. Returns 1 if it was, 0
 * if not, -1 after a usage error (a bad value).
 */
int sp_cli_filter(struct sp_cli_args *a, int key, struct sp_cli_filters *f);
void sp_cli_filters_release(struct sp_cli_filters *f);

/* ------------------------------------------------ reading profiles, writing output */

/*
 * Reads a profile for a command. On failure prints why and returns NULL. A
 * profile cut off at its last flush is returned with one note saying so
 * (it is whole up to there: not an error); a corrupt one with one warning
 * saying what was kept. The caller frees it with sp_profile_free().
 */
struct sp_profile *sp_cli_read_profile(const char *path);

/*
 * Symbolizes prof into a model for a command. On failure prints why and
 * returns NULL. Prints to stderr the symbolizer warnings a user must see
 * (a binary that changed since the run, a missing or damaged file), at
 * most a few; "no debug info" notes are left to `stackprof info`.
 */
struct sp_model *sp_cli_build_model(const char *path, const struct sp_profile *prof,
				    const struct sp_model_opts *mo);

/*
 * The build-id cache's directory (symbolize/bidcache.h): $STACKPROF_CACHE_DIR,
 * else $XDG_CACHE_HOME/stackprof, else $HOME/.cache/stackprof; NULL if none
 * of those is set. Borrowed (a static buffer).
 */
const char *sp_cli_cache_dir(void);

/*
 * The cache's bound in bytes: $STACKPROF_CACHE_MAX (a number, optionally
 * with K, M or G), else SP_BIDCACHE_DEFAULT_MAX. 0: keep no copies. A bad
 * value is warned about and the default kept.
 */
uint64_t sp_cli_cache_max(void);

/* "stdout" for "-" (and NULL), else path: the one name error messages use. */
const char *sp_cli_output_name(const char *path);

/*
 * Flushes and checks f, named path in messages ("-": stdout). Returns
 * SP_EXIT_OK, or prints the error and returns SP_EXIT_ERROR. A closed pipe
 * (EPIPE, as after `| head`) is quiet success: the reader asked for no more.
 */
int sp_cli_finish_output(FILE *f, const char *path);

/*
 * Ends a command's output, written by a writer that returned err (0 or
 * -errno; -EPIPE, a reader that went away, is quiet success). Closes out
 * unless it is stdout. Returns the exit status: 1 on a write error, and
 * also when partial (the profile is damaged: what was read before the
 * damage was printed, but a script must not take the run for clean).
 */
int sp_cli_end_output(FILE *out, const char *path, int err, bool partial);

/*
 * "cpu 615 samples (6.136s)<sep>user 12 samples (12 count)": the event
 * kinds p holds samples of, into out. Kinds it declares without a sample
 * are left out; "no samples" when there are none.
 */
void sp_cli_list_events(const struct sp_profile *p, const char *sep, char *out, size_t cap);

/* Whether path could be written ("-" is stdout): its directory is there
 * and writable, and it is not a directory; says why not. Checked before a
 * profile is read, so that a typo costs no symbolization. Creates nothing. */
bool sp_cli_output_ok(const char *path);

/* Opens path for writing ("-" is stdout); prints why and returns NULL on error. */
FILE *sp_cli_open_output(const char *path);

/* A profile read and symbolized for a command. */
struct sp_cli_input {
	struct sp_profile *prof;
	struct sp_model *model;
	/* when sp_cli_load failed: the exit status, SP_EXIT_ERROR, or
	 * SP_EXIT_USAGE for an --event kind that neither stackprof nor the
	 * profile knows */
	int rc;
};

/*
 * Reads path and builds its model with f (sp_cli_read_profile, then
 * sp_cli_build_model). A --thread or --range that names nothing in the
 * profile is an error that lists what it has; so is an --event kind that
 * it holds no sample of (an unknown kind is a usage error: in->rc). On failure prints why and
 * returns false; whatever was made stays in *in for sp_cli_unload, which takes a zeroed *in too.
 */
bool sp_cli_load(const char *path, const struct sp_cli_filters *f, struct sp_cli_input *in);
/*
 * The view of model m (read from path) by operator (SP_ROLLUP_OP) or module
 * path (SP_ROLLUP_MODULE_PATH); see view.h. On failure prints why and
 * returns NULL. Free it with sp_view_free() before the model.
 */
struct sp_view *sp_cli_view(const char *path, const struct sp_model *m, enum sp_rollup_by by);

/* One line on stderr when aggregating path by `by` can only give an empty
 * answer: by module path, a profile without nn.Module ranges (sp_cli_view
 * says it itself; a rollup of the model calls this). */
void sp_cli_hint_by(const char *path, const struct sp_profile *p, enum sp_rollup_by by);
/* The same for any view of view.h (SP_VIEW_OP_PYTHON: table's operators
 * by their Python callers). */
struct sp_view *sp_cli_view_of(const char *path, const struct sp_model *m, enum sp_view_by by);

/* Whether in's profile is damaged (its output is then not a clean run's).
 * One cut off at its last flush is not: it is whole up to there. */
bool sp_cli_partial(const struct sp_cli_input *in);
void sp_cli_unload(struct sp_cli_input *in);

/*
 * Several profiles read as one: a run's processes (PATH and its PATH.<pid>
 * children, a Pool's workers). Each is loaded as sp_cli_load does, seen
 * through its own view when view is set (an operator or module-path view
 * needs its own profile), then merged (merge.h). One profile without
 * per_process is no merge: its model (view) is written as before.
 */
struct sp_cli_set {
	struct sp_cli_input *in; /* n of them, in operand order */
	struct sp_view **views;	 /* per input when a view was asked, else NULLs */
	size_t n;
	struct sp_merge *merge;	      /* when n > 1 or per_process */
	const struct sp_model *model; /* what to write: borrowed from the above */
	int rc; /* when sp_cli_load_set failed: its exit status (sp_cli_input) */
};

/*
 * Loads paths[0..n) into set (n >= 1), each with sp_cli_load; set->model
 * is the first one's until sp_cli_set_merge. On failure prints why (naming
 * the file) and returns false; whatever was made stays in *set for
 * sp_cli_set_release.
 */
bool sp_cli_load_set(char *const *paths, size_t n, const struct sp_cli_filters *f,
		     struct sp_cli_set *set);
/*
 * Makes set->model what the command writes: each profile's view when view
 * is set, and their merge when there are several or per_process. paths
 * are the ones set was loaded from, for messages. Call once; false after
 * saying why.
 */
bool sp_cli_set_merge(struct sp_cli_set *set, char *const *paths, bool per_process,
		      const enum sp_view_by *view);
/* Whether any of set's profiles is damaged (sp_cli_partial). */
bool sp_cli_set_partial(const struct sp_cli_set *set);
/* Frees what set holds; a zeroed set is fine. */
void sp_cli_set_release(struct sp_cli_set *set);

#endif
