/*
 * cmd-symbolize.c - `stackprof symbolize`: addr2line for one ELF file, with
 * the output of `eu-addr2line -f -i -C -e ELF ADDR...`, from the same
 * indexes the profile exporters use.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "symbolize.h"

static const char sp_symbolize_usage[] =
    "usage: stackprof symbolize -e ELF [--no-inline] [--no-demangle] [--basenames] [ADDR...]\n"
    "\n"
    "Prints, for each address, the function and file:line, then one pair per\n"
    "inlined call (innermost first): the output of `eu-addr2line -f -i -C`.\n"
    "Addresses are hex ELF virtual addresses (0x optional); with none given\n"
    "they are read from standard input, one per line, and each answer is\n"
    "written before more input is awaited, so it can serve as a co-process.\n"
    "Unknown parts print as \"??\" and \"??:0\".\n"
    "\n"
    "options:\n"
    "  -e, --exe ELF     the executable or shared library (required)\n"
    "  --no-inline       only the function and line, no inlined callers (eu-addr2line -f -C)\n"
    "  --no-demangle     keep C++ names mangled\n"
    "  -s, --basenames   file names without directories\n"
    "  -f, -i, -C        accepted for addr2line habits; always on\n"
    "  -h, --help        this text\n"
    "\n"
    "examples:\n"
    "  stackprof symbolize -e /usr/bin/python3.11d 0x4d0f9e 4e5d20\n"
    "  perf script -F ip | stackprof symbolize -e ./resnet18 --basenames\n"
    "  stackprof symbolize -e libfoo.so --no-inline < offsets.txt\n"
    "\n"
    "exit status: 0 ok, 1 a file or address could not be used, 2 usage.\n";

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
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sp_cli_error("symbolize: cannot open %s: %s", path, strerror(errno));
		return false;
	}
	struct stat st;
	char magic[4];
	ssize_t got = -1;
	int err = 0;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		err = EISDIR;
	else if ((got = read(fd, magic, sizeof(magic))) < 0)
		err = errno;
	close(fd);
	if (err) {
		sp_cli_error("symbolize: cannot read %s: %s", path, strerror(err));
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

int sp_cmd_symbolize(int argc, char **argv)
{
	struct sp_symopts o = {0};
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return sp_cli_usage(sp_symbolize_usage, false);
		if (!strcmp(a, "-e") || !strcmp(a, "--exe")) {
			if (++i == argc) {
				sp_cli_error("symbolize: %s needs a file name", a);
				return sp_cli_usage(sp_symbolize_usage, true);
			}
			o.exe = argv[i];
		} else if (!strncmp(a, "--exe=", 6)) {
			o.exe = a + 6;
		} else if (!strncmp(a, "-e", 2)) {
			o.exe = a + 2;
		} else if (!strcmp(a, "--no-inline")) {
			o.no_inline = true;
		} else if (!strcmp(a, "--no-demangle")) {
			o.flags |= SP_SYM_NO_DEMANGLE;
		} else if (!strcmp(a, "-s") || !strcmp(a, "--basenames")) {
			o.flags |= SP_SYM_BASENAMES;
		} else if (!strcmp(a, "-f") || !strcmp(a, "-i") || !strcmp(a, "-C") ||
			   !strcmp(a, "--functions") || !strcmp(a, "--inlines") ||
			   !strcmp(a, "--demangle")) {
			/* always on */
		} else {
			sp_cli_error("symbolize: unknown option '%s'", a);
			return sp_cli_usage(sp_symbolize_usage, true);
		}
	}
	if (!o.exe || !o.exe[0]) {
		sp_cli_error("symbolize: which ELF file? give -e ELF");
		return sp_cli_usage(sp_symbolize_usage, true);
	}
	if (!sp_check_elf(o.exe))
		return SP_EXIT_ERROR;

	int status = SP_EXIT_OK;
	struct sp_linereader *lr = NULL;
	struct sp_symbolizer *sym = sp_symbolizer_new(o.flags);
	/* the whole address space: every address is an ELF vaddr of this file */
	if (!sym || sp_symbolizer_add_module(sym, o.exe, 0, UINT64_MAX, 0, NULL, 0)) {
		sp_cli_error("symbolize: out of memory");
		status = SP_EXIT_ERROR;
		goto out;
	}
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));

	uint64_t addr;
	if (i < argc) {
		for (; i < argc; i++) {
			if (!sp_parse_addr(argv[i], &addr)) {
				fflush(stdout);
				status = sp_bad_addr(argv[i]);
				continue;
			}
			if (sp_symbolize_one(sym, &o, addr)) {
				sp_cli_error("symbolize: out of memory");
				status = SP_EXIT_ERROR;
				goto out;
			}
		}
	} else {
		lr = malloc(sizeof(*lr));
		if (!lr) {
			sp_cli_error("symbolize: out of memory");
			status = SP_EXIT_ERROR;
			goto out;
		}
		lr->start = lr->len = 0;
		lr->eof = false;
		lr->err = 0;
		char *line;
		while ((line = sp_next_line(lr)) != NULL) {
			if (!line[strspn(line, " \t\r")])
				continue; /* blank lines are not addresses, nor errors */
			if (!sp_parse_addr(line, &addr)) {
				fflush(stdout);
				status = sp_bad_addr(line);
				continue;
			}
			if (sp_symbolize_one(sym, &o, addr)) {
				sp_cli_error("symbolize: out of memory");
				status = SP_EXIT_ERROR;
				goto out;
			}
		}
		if (lr->err) {
			sp_cli_error("symbolize: reading standard input: %s", strerror(lr->err));
			status = SP_EXIT_ERROR;
		}
	}
out:
	if (sp_cli_finish_output(stdout, "standard output") != SP_EXIT_OK)
		status = SP_EXIT_ERROR;
	if (sym) {
		/* the library keeps its warnings; only tools print */
		const char *w = sp_symbolizer_warnings(sym);
		while (*w) {
			const char *nl = strchr(w, '\n');
			int len = nl ? (int)(nl - w) : (int)strlen(w);
			sp_cli_warn("%.*s", len, w);
			w += len + (nl ? 1 : 0);
		}
	}
	sp_symbolizer_free(sym);
	free(lr);
	return status;
}
