/*
 * cmd-symbolize.c - `stackprof symbolize`: addr2line for one ELF file, with
 * the output of `eu-addr2line -f -i -C -e ELF ADDR...`, from the same
 * indexes the profile exporters use.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "symbolize/symbolize.h"

enum { OPT_NO_INLINE = 256, OPT_NO_DEMANGLE, OPT_ADDR2LINE };

static const struct sp_cli_opt sp_symbolize_opts[] = {
    {'e', 'e', "exe", "ELF", "the executable or shared library (required)"},
    {OPT_NO_INLINE, 0, "no-inline", NULL,
     "only the function and line, no inlined callers\n(eu-addr2line -f -C)"},
    {OPT_NO_DEMANGLE, 0, "no-demangle", NULL, "keep C++ names mangled"},
    {'s', 's', "basenames", NULL, "file names without directories"},
    {OPT_ADDR2LINE, 'f', NULL, NULL, "(and -i, -C) accepted for addr2line habits; always on"},
    {OPT_ADDR2LINE, 'i', NULL, NULL, NULL},
    {OPT_ADDR2LINE, 'C', NULL, NULL, NULL},
    {OPT_ADDR2LINE, 0, "functions", NULL, NULL},
    {OPT_ADDR2LINE, 0, "inlines", NULL, NULL},
    {OPT_ADDR2LINE, 0, "demangle", NULL, NULL},
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_symbolize_cmd = {
    .name = "symbolize",
    .synopsis = "-e ELF [--no-inline] [--no-demangle] [--basenames] [ADDR...]",
    .about = "Prints, for each address, the function and file:line, then one pair per\n"
	     "inlined call (innermost first): the output of `eu-addr2line -f -i -C`.\n"
	     "Addresses are hex ELF virtual addresses (0x optional); with none given\n"
	     "they are read from standard input, one per line, and each answer is\n"
	     "written before more input is awaited, so it can serve as a co-process.\n"
	     "Unknown parts print as \"??\" and \"??:0\".\n",
    .opts = sp_symbolize_opts,
    .more = "examples:\n"
	    "  stackprof symbolize -e /usr/bin/python3.11d 0x4d0f9e 4e5d20\n"
	    "  perf script -F ip | stackprof symbolize -e ./resnet18 --basenames\n"
	    "  stackprof symbolize -e libfoo.so --no-inline < offsets.txt\n"
	    "\n"
	    "exit status: 0 ok, 1 a file or address could not be used, 2 usage.\n",
};

struct sp_symopts {
	const char *exe;
	bool no_inline;
	unsigned flags;
};

/* Parses a hex address, 0x optional, surrounding blanks allowed. */
static bool sp_parse_addr(const char *s, uint64_t *out)
{
	while (*s == ' ' || *s == '\t')
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	uint64_t v = 0;
	int digits = 0;
	for (; *s; s++, digits++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (v >> 60)
			return false; /* more than 64 bits */
		v = v << 4 | (uint64_t)d;
	}
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	if (!digits || *s)
		return false;
	*out = v;
	return true;
}

static void sp_print_loc(const struct sp_frame *f)
{
	if (!f->file)
		fputs("??:0\n", stdout);
	else if (f->column)
		printf("%s:%u:%u\n", f->file, f->line, f->column);
	else
		printf("%s:%u\n", f->file, f->line);
}

static const char *sp_frame_name(const struct sp_frame *f)
{
	return f->kind == SP_FRAME_UNNAMED || f->kind == SP_FRAME_UNKNOWN ? "??" : f->func;
}

/* Prints one address's answer. Returns 0, or -ENOMEM. */
static int sp_symbolize_one(struct sp_symbolizer *sym, const struct sp_symopts *o, uint64_t addr)
{
	const struct sp_frame *fr;
	int n = sp_symbolizer_lookup(sym, addr, false, &fr);
	if (n < 0)
		return n;
	fputs(sp_frame_name(&fr[0]), stdout);
	if (fr[0].kind == SP_FRAME_INLINED) {
		/* eu-addr2line names the innermost inlined call with its call
		 * site, then the ELF symbol the code sits in */
		fputs(" inlined", stdout);
		if (n > 1 && fr[1].file) {
			if (!fr[1].line)
				printf(" from %s", fr[1].file);
			else if (!fr[1].column)
				printf(" at %s:%u", fr[1].file, fr[1].line);
			else
				printf(" at %s:%u:%u", fr[1].file, fr[1].line, fr[1].column);
		}
		const char *symbol = sp_symbolizer_symbol(sym, addr, NULL);
		printf(" in %s", symbol ? symbol : "??");
	}
	putchar('\n');
	sp_print_loc(&fr[0]);
	if (o->no_inline)
		return 0;
	for (int i = 1; i < n; i++) {
		puts(sp_frame_name(&fr[i]));
		sp_print_loc(&fr[i]);
	}
	return 0;
}

/*
 * Reads stdin line by line with read(2) so that output is flushed exactly
 * when more input must be waited for: a co-process gets each answer at once,
 * a file or a fast pipe costs one flush per buffer, not one per line.
 */
struct sp_linereader {
	char buf[1 << 16];
	size_t start, len;
	bool eof;
	int err;
};

/* Returns the next line (NUL-terminated, no newline) or NULL at the end. */
static char *sp_next_line(struct sp_linereader *r)
{
	for (;;) {
		char *nl = memchr(r->buf + r->start, '\n', r->len - r->start);
		if (nl) {
			*nl = '\0';
			char *line = r->buf + r->start;
			r->start = (size_t)(nl - r->buf) + 1;
			return line;
		}
		if (r->eof) {
			if (r->start == r->len)
				return NULL;
			/* a last line without a newline */
			r->buf[r->len] = '\0';
			char *line = r->buf + r->start;
			r->start = r->len;
			return line;
		}
		memmove(r->buf, r->buf + r->start, r->len - r->start);
		r->len -= r->start;
		r->start = 0;
		if (r->len >= sizeof(r->buf) - 1) {
			/* an absurd line: cut it here and treat the rest as new lines */
			r->buf[r->len] = '\0';
			r->start = r->len = 0;
			return r->buf;
		}
		fflush(stdout);
		ssize_t got = read(STDIN_FILENO, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			r->err = errno;
		if (got <= 0)
			r->eof = true;
		else
			r->len += (size_t)got;
	}
}

/* Checks up front what the symbolizer would only warn about later. */
static bool sp_check_elf(const char *path)
{
	/* O_NONBLOCK: a FIFO must not hang us before fstat says what it is */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		sp_cli_error("symbolize: cannot open %s: %s", path, strerror(errno));
		return false;
	}
	struct stat st;
	char magic[4];
	ssize_t got = -1;
	int err = 0;
	if (fstat(fd, &st) < 0)
		err = errno;
	else if (S_ISDIR(st.st_mode))
		err = EISDIR;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	else if ((got = read(fd, magic, sizeof(magic))) < 0)
		err = errno;
	close(fd);
	if (err) {
		sp_cli_error("symbolize: cannot read %s: %s", path,
			     err == EINVAL ? "not a regular file" : strerror(err));
		return false;
	}
	if (got != sizeof(magic) || memcmp(magic, "\177ELF", 4)) {
		sp_cli_error("symbolize: %s is not an ELF file", path);
		return false;
	}
	return true;
}

static int sp_bad_addr(const char *s)
{
	sp_cli_error("symbolize: '%s' is not a hex address", s);
	return SP_EXIT_ERROR;
}

/* Symbolizes each address of the list; the status so far. */
static int sp_symbolize_list(struct sp_symbolizer *sym, const struct sp_symopts *o, char **addrs,
			     int n)
{
	int status = SP_EXIT_OK;
	uint64_t addr;
	for (int i = 0; i < n; i++) {
		if (!sp_parse_addr(addrs[i], &addr)) {
			fflush(stdout);
			status = sp_bad_addr(addrs[i]);
			continue;
		}
		if (sp_symbolize_one(sym, o, addr)) {
			sp_cli_error("symbolize: out of memory");
			return SP_EXIT_ERROR;
		}
	}
	return status;
}

/* Symbolizes the addresses read from stdin, one a line. */
static int sp_symbolize_stdin(struct sp_symbolizer *sym, const struct sp_symopts *o)
{
	int status = SP_EXIT_OK;
	struct sp_linereader *lr = malloc(sizeof(*lr));
	if (!lr) {
		sp_cli_error("symbolize: out of memory");
		return SP_EXIT_ERROR;
	}
	lr->start = lr->len = 0;
	lr->eof = false;
	lr->err = 0;
	char *line;
	uint64_t addr;
	while ((line = sp_next_line(lr)) != NULL) {
		if (!line[strspn(line, " \t\r")])
			continue; /* blank lines are not addresses, nor errors */
		if (!sp_parse_addr(line, &addr)) {
			fflush(stdout);
			status = sp_bad_addr(line);
			continue;
		}
		if (sp_symbolize_one(sym, o, addr)) {
			sp_cli_error("symbolize: out of memory");
			status = SP_EXIT_ERROR;
			goto out;
		}
	}
	if (lr->err) {
		sp_cli_error("symbolize: reading stdin: %s", strerror(lr->err));
		status = SP_EXIT_ERROR;
	}
out:
	free(lr);
	return status;
}

int sp_cmd_symbolize(int argc, char **argv)
{
	struct sp_symopts o = {0};
	struct sp_symbolizer *sym = NULL;
	struct sp_cli_args a;
	int status = SP_EXIT_USAGE, c;

	sp_cli_args_init(&a, &sp_symbolize_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		switch (c) {
		case 'e':
			o.exe = a.value;
			break;
		case OPT_NO_INLINE:
			o.no_inline = true;
			break;
		case OPT_NO_DEMANGLE:
			o.flags |= SP_SYM_NO_DEMANGLE;
			break;
		case 's':
			o.flags |= SP_SYM_BASENAMES;
			break;
		default:
			break; /* -f, -i, -C: always on */
		}
	}
	if (c < 0) {
		status = a.rc;
		goto out;
	}
	if (!o.exe || !o.exe[0]) {
		sp_cli_bad(&a, "which ELF file? give -e ELF");
		goto out;
	}
	status = SP_EXIT_ERROR;
	if (!sp_check_elf(o.exe))
		goto out;
	sym = sp_symbolizer_new(o.flags);
	/* the whole address space: every address is an ELF vaddr of this file */
	if (!sym || sp_symbolizer_add_module(sym, o.exe, 0, UINT64_MAX, 0, NULL, 0)) {
		sp_cli_error("symbolize: out of memory");
		goto out;
	}
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	if (a.n_operands)
		status = sp_symbolize_list(sym, &o, a.operands, a.n_operands);
	else
		status = sp_symbolize_stdin(sym, &o);
	if (sp_cli_finish_output(stdout, "-") != SP_EXIT_OK)
		status = SP_EXIT_ERROR;
	/* the library keeps its warnings; only tools print */
	const char *w = sp_symbolizer_warnings(sym);
	while (*w) {
		const char *nl = strchr(w, '\n');
		int len = nl ? (int)(nl - w) : (int)strlen(w);
		sp_cli_warn("%.*s", len, w);
		/* a damaged file answered "??" to everything: not a clean run */
		if (memmem(w, (size_t)len, "not used", 8))
			status = SP_EXIT_ERROR;
		w += len + (nl ? 1 : 0);
	}
out:
	sp_symbolizer_free(sym);
	sp_cli_args_release(&a);
	return status;
}
