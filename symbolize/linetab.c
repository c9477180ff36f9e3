#define _GNU_SOURCE /* qsort_r */
#include "symbolize/linetab.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/arena.h"
#include "format/leb.h"

struct sp_linerow {
	uint64_t addr;
	uint32_t file;
	int32_t line;
	uint32_t column;
	uint32_t end; /* DW_LNE_end_sequence */
};

/*
 * Rows per block of the search index. A lookup binary-searches the block
 * starts (8 bytes each, few cache lines) and then one block of rows: a
 * batch of random addresses otherwise pays a cache miss per halving of a
 * table megabytes long.
 */
#define SP_LINE_BLOCK 16

/* A file entry; most are never asked for, so the path is joined on demand. */
struct sp_linefile {
	const char *dir; /* NULL: name is complete */
	const char *name;
	const char *full;
};

struct sp_linetab {
	struct sp_linerow *rows;
	size_t n;
	uint64_t *block_addr; /* rows[i * SP_LINE_BLOCK].addr */
	size_t n_blocks;
	struct sp_linefile *files;
	size_t n_files;
	const char **dirs; /* kept for the names joined on first use */
	struct sp_arena strings;
};

/* A bounds-checked reader; any overrun sets bad and reads zeros. */
struct sp_lcur {
	const uint8_t *p;
	const uint8_t *end;
	bool bad;
};

static uint64_t sp_lcur_fixed(struct sp_lcur *c, unsigned n)
{
	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	uint64_t v = 0;
	/* DWARF is in the target's byte order; x86-64 and aarch64 are little-endian */
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static uint64_t sp_lcur_uleb(struct sp_lcur *c)
{
	return sp_leb_u(&c->p, c->end, &c->bad);
}

static int64_t sp_lcur_sleb(struct sp_lcur *c)
{
	return sp_leb_s(&c->p, c->end, &c->bad);
}

static const char *sp_lcur_cstr(struct sp_lcur *c)
{
	const uint8_t *nul = memchr(c->p, '\0', (size_t)(c->end - c->p));
	if (!nul) {
		c->bad = true;
		c->p = c->end;
		return NULL;
	}
	const char *s = (const char *)c->p;
	c->p = nul + 1;
	return s;
}

static const char *sp_section_str(const uint8_t *sec, size_t len, uint64_t off)
{
	if (!sec || off >= len || !memchr(sec + off, '\0', len - off))
		return NULL;
	return (const char *)sec + off;
}

/*
 * Reads one DWARF 5 entry-format value. Strings come back in *str, numbers
 * in *num. Returns false for a form this decoder does not take.
 */
static bool sp_lcur_form(struct sp_lcur *c, const struct sp_linesrc *src, uint64_t form,
			 unsigned offset_size, const char **str, uint64_t *num)
{
	*str = NULL;
	*num = 0;
	switch (form) {
	case DW_FORM_string:
		*str = sp_lcur_cstr(c);
		return true;
	case DW_FORM_line_strp:
		*str =
		    sp_section_str(src->line_str, src->line_str_len, sp_lcur_fixed(c, offset_size));
		return true;
	case DW_FORM_strp:
		*str = sp_section_str(src->str, src->str_len, sp_lcur_fixed(c, offset_size));
		return true;
	case DW_FORM_udata:
		*num = sp_lcur_uleb(c);
		return true;
	case DW_FORM_sdata:
		*num = (uint64_t)sp_lcur_sleb(c);
		return true;
	case DW_FORM_data1:
	case DW_FORM_flag:
		*num = sp_lcur_fixed(c, 1);
		return true;
	case DW_FORM_data2:
		*num = sp_lcur_fixed(c, 2);
		return true;
	case DW_FORM_data4:
		*num = sp_lcur_fixed(c, 4);
		return true;
	case DW_FORM_data8:
		*num = sp_lcur_fixed(c, 8);
		return true;
	case DW_FORM_data16:
		sp_lcur_fixed(c, 8);
		sp_lcur_fixed(c, 8);
		return true;
	case DW_FORM_block: {
		uint64_t n = sp_lcur_uleb(c);
		if (n > (uint64_t)(c->end - c->p))
			c->bad = true;
		else
			c->p += n;
		return true;
	}
	default:
		/* strx needs the unit's str_offsets base: libdw does this one */
		return false;
	}
}

struct sp_lfmt {
	uint64_t desc;
	uint64_t form;
};

/* Reads a DWARF 5 entry format list. Returns its length, or -1. */
static int sp_lcur_formats(struct sp_lcur *c, struct sp_lfmt *fmt)
{
	unsigned n = (unsigned)sp_lcur_fixed(c, 1);
	for (unsigned i = 0; i < n; i++) {
		fmt[i].desc = sp_lcur_uleb(c);
		fmt[i].form = sp_lcur_uleb(c);
	}
	return c->bad ? -1 : (int)n;
}

static int sp_linetab_add_file(struct sp_linetab *t, size_t *cap, const char *dir, const char *name)
{
	if (t->n_files == *cap) {
		size_t n = *cap ? *cap * 2 : 32;
		struct sp_linefile *p = realloc(t->files, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->files = p;
		*cap = n;
	}
	/* libdw's composition: absolute names as they are, else "dir/name" */
	if (name[0] == '/')
		dir = NULL;
	t->files[t->n_files++] = (struct sp_linefile){dir, name, dir ? NULL : name};
	return 0;
}

/* Stable order of libdw's compare_lines: address, end of sequence first, program order. */
static int sp_linerow_cmp(const void *a, const void *b, void *arg)
{
	const struct sp_linerow *rows = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct sp_linerow *x = &rows[i], *y = &rows[j];
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->end != y->end)
		return x->end ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int sp_linetab_sort(struct sp_linetab *t)
{
	bool sorted = true;
	for (size_t i = 1; i < t->n && sorted; i++) {
		const struct sp_linerow *a = &t->rows[i - 1], *b = &t->rows[i];
		sorted = a->addr < b->addr || (a->addr == b->addr && a->end >= b->end);
	}
	if (sorted)
		return 0;
	if (t->n > UINT32_MAX)
		return -EINVAL;
	uint32_t *idx = malloc(t->n * sizeof(*idx));
	struct sp_linerow *out = malloc(t->n * sizeof(*out));
	if (!idx || !out) {
		free(idx);
		free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, t->n, sizeof(*idx), sp_linerow_cmp, t->rows);
	for (size_t i = 0; i < t->n; i++)
		out[i] = t->rows[idx[i]];
	free(idx);
	free(t->rows);
	t->rows = out;
	return 0;
}

/*
 * A line program being decoded: what its header says, and the state the
 * steps below share. Each step returns 0, -EINVAL for a program this
 * decoder does not handle, or -ENOMEM.
 */
struct sp_lineprog {
	const struct sp_linesrc *src;
	struct sp_lcur c;
	struct sp_linetab *t;
	unsigned version, offset_size, address_size;
	const uint8_t *header_end;
	unsigned min_inst, max_ops, line_range, opcode_base;
	int line_base;
	const uint8_t *std_len; /* std_len[op] for 1 <= op < opcode_base */
	const char **dirs;
	size_t n_dirs, dirs_cap, files_cap, rows_cap;
	struct sp_lfmt fmt[256];
};

/* The registers of the line state machine. */
struct sp_linestate {
	uint64_t addr;
	unsigned op_index, column;
	uint64_t file;
	int64_t line;
};

/* The unit header, up to the directory table. */
static int sp_lineprog_header(struct sp_lineprog *p, uint64_t off)
{
	struct sp_lcur *c = &p->c;
	*c = (struct sp_lcur){p->src->line + off, p->src->line + p->src->line_len, false};
	p->offset_size = 4;
	uint64_t unit_length = sp_lcur_fixed(c, 4);
	if (unit_length == 0xffffffffu) {
		p->offset_size = 8;
		unit_length = sp_lcur_fixed(c, 8);
	}
	if (c->bad || unit_length > (uint64_t)(c->end - c->p))
		return -EINVAL;
	c->end = c->p + unit_length;
	p->version = (unsigned)sp_lcur_fixed(c, 2);
	if (p->version < 2 || p->version > 5)
		return -EINVAL;
	if (p->version >= 5 && (sp_lcur_fixed(c, 1) != p->address_size || sp_lcur_fixed(c, 1) != 0))
		return -EINVAL;
	uint64_t header_length = sp_lcur_fixed(c, p->offset_size);
	if (c->bad || header_length > (uint64_t)(c->end - c->p))
		return -EINVAL;
	p->header_end = c->p + header_length;
	p->min_inst = (unsigned)sp_lcur_fixed(c, 1);
	p->max_ops = p->version >= 4 ? (unsigned)sp_lcur_fixed(c, 1) : 1;
	sp_lcur_fixed(c, 1); /* default_is_stmt: every row is kept either way */
	p->line_base = (int8_t)sp_lcur_fixed(c, 1);
	p->line_range = (unsigned)sp_lcur_fixed(c, 1);
	p->opcode_base = (unsigned)sp_lcur_fixed(c, 1);
	if (c->bad || !p->max_ops || !p->opcode_base ||
	    (size_t)(c->end - c->p) < p->opcode_base - 1)
		return -EINVAL;
	p->std_len = c->p - 1;
	c->p += p->opcode_base - 1;
	return 0;
}

static int sp_lineprog_add_dir(struct sp_lineprog *p, const char *d)
{
	if (p->n_dirs == p->dirs_cap) {
		size_t cap = p->dirs_cap ? p->dirs_cap * 2 : 16;
		const char **v = realloc(p->dirs, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->dirs = v;
		p->dirs_cap = cap;
	}
	p->dirs[p->n_dirs++] = d;
	return 0;
}

/*
 * Reads a DWARF 5 entry list (directories or files): its format, then count
 * entries of it, storing each entry's path and directory index.
 */
static int sp_lineprog_entries5(struct sp_lineprog *p, bool files)
{
	struct sp_lcur *c = &p->c;
	int nf = sp_lcur_formats(c, p->fmt);
	uint64_t count = sp_lcur_uleb(c);
	if (nf < 0 || c->bad || (nf == 0 && count) ||
	    (nf && count > (uint64_t)(c->end - c->p) / (unsigned)nf))
		return -EINVAL;
	if (files && !count && sp_linetab_add_file(p->t, &p->files_cap, NULL, "???"))
		return -ENOMEM;
	for (uint64_t i = 0; i < count; i++) {
		const char *path = NULL;
		uint64_t di = UINT64_MAX;
		for (int k = 0; k < nf; k++) {
			const char *s;
			uint64_t v;
			if (!sp_lcur_form(c, p->src, p->fmt[k].form, p->offset_size, &s, &v))
				return -EINVAL;
			if (p->fmt[k].desc == DW_LNCT_path)
				path = s;
			else if (p->fmt[k].desc == DW_LNCT_directory_index)
				di = v;
		}
		if (!path || c->bad || (files && di >= p->n_dirs))
			return -EINVAL;
		int rc = files ? sp_linetab_add_file(p->t, &p->files_cap, p->dirs[di], path)
			       : sp_lineprog_add_dir(p, path);
		if (rc)
			return rc;
	}
	return 0;
}

/* Directory 0 is DW_AT_comp_dir before DWARF 5, the table's first entry in 5. */
static int sp_lineprog_dirs(struct sp_lineprog *p, const char *comp_dir)
{
	if (p->version >= 5)
		return sp_lineprog_entries5(p, false);
	int rc = sp_lineprog_add_dir(p, comp_dir);
	for (const char *d; !rc && (d = sp_lcur_cstr(&p->c)) && d[0];)
		rc = sp_lineprog_add_dir(p, d);
	return rc;
}

/* File 0 is libdw's "???" before DWARF 5, the table's first entry in 5. */
static int sp_lineprog_files(struct sp_lineprog *p)
{
	struct sp_lcur *c = &p->c;
	int rc = 0;
	if (p->version >= 5)
		rc = sp_lineprog_entries5(p, true);
	else if (sp_linetab_add_file(p->t, &p->files_cap, NULL, "???"))
		rc = -ENOMEM;
	else
		for (const char *name; !rc && (name = sp_lcur_cstr(c)) && name[0];) {
			uint64_t di = sp_lcur_uleb(c);
			sp_lcur_uleb(c); /* mtime */
			sp_lcur_uleb(c); /* length */
			if (c->bad || di >= p->n_dirs)
				return -EINVAL;
			rc = sp_linetab_add_file(p->t, &p->files_cap, p->dirs[di], name);
		}
	if (!rc && (c->bad || c->p != p->header_end))
		rc = -EINVAL;
	return rc;
}

static int sp_lineprog_row(struct sp_lineprog *p, const struct sp_linestate *st, uint32_t end)
{
	struct sp_linetab *t = p->t;
	if (t->n == p->rows_cap) {
		size_t n = p->rows_cap ? p->rows_cap * 2 : 1024;
		struct sp_linerow *rows = realloc(t->rows, n * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		p->rows_cap = n;
	}
	t->rows[t->n++] =
	    (struct sp_linerow){st->addr, (uint32_t)st->file, (int32_t)st->line, st->column, end};
	return 0;
}

static void sp_lineprog_advance(const struct sp_lineprog *p, struct sp_linestate *st, uint64_t adv)
{
	st->addr += p->min_inst * ((st->op_index + adv) / p->max_ops);
	st->op_index = (unsigned)((st->op_index + adv) % p->max_ops);
}

static void sp_linestate_reset(struct sp_linestate *st)
{
	*st = (struct sp_linestate){.file = 1, .line = 1};
}

/* An extended opcode (after its 0 byte). */
static int sp_lineprog_extended(struct sp_lineprog *p, struct sp_linestate *st)
{
	struct sp_lcur *c = &p->c;
	uint64_t len = sp_lcur_uleb(c);
	if (!len || len > (uint64_t)(c->end - c->p))
		return -EINVAL;
	const uint8_t *next = c->p + len;
	int rc = 0;
	switch (*c->p++) {
	case DW_LNE_end_sequence:
		rc = sp_lineprog_row(p, st, 1);
		sp_linestate_reset(st);
		break;
	case DW_LNE_set_address:
		st->addr = sp_lcur_fixed(c, p->address_size);
		st->op_index = 0;
		break;
	case DW_LNE_define_file: {
		const char *name = sp_lcur_cstr(c);
		uint64_t di = sp_lcur_uleb(c);
		if (!name || c->bad || di >= p->n_dirs)
			return -EINVAL;
		rc = sp_linetab_add_file(p->t, &p->files_cap, p->dirs[di], name);
		break;
	}
	default:
		break;
	}
	c->p = next;
	return rc;
}

/* A standard opcode (1 <= op < opcode_base). */
static int sp_lineprog_standard(struct sp_lineprog *p, struct sp_linestate *st, unsigned op)
{
	struct sp_lcur *c = &p->c;
	switch (op) {
	case DW_LNS_copy:
		return sp_lineprog_row(p, st, 0);
	case DW_LNS_advance_pc:
		sp_lineprog_advance(p, st, sp_lcur_uleb(c));
		break;
	case DW_LNS_advance_line:
		st->line = (int64_t)((uint64_t)st->line + (uint64_t)sp_lcur_sleb(c));
		break;
	case DW_LNS_set_file:
		st->file = sp_lcur_uleb(c);
		break;
	case DW_LNS_set_column:
		st->column = (unsigned)sp_lcur_uleb(c);
		break;
	case DW_LNS_const_add_pc:
		if (!p->line_range)
			return -EINVAL;
		sp_lineprog_advance(p, st, (255 - p->opcode_base) / p->line_range);
		break;
	case DW_LNS_fixed_advance_pc:
		st->addr += sp_lcur_fixed(c, 2);
		st->op_index = 0;
		break;
	case DW_LNS_set_isa:
		sp_lcur_uleb(c);
		break;
	case DW_LNS_negate_stmt:
	case DW_LNS_set_basic_block:
	case DW_LNS_set_prologue_end:
	case DW_LNS_set_epilogue_begin:
		break;
	default:
		/* an opcode newer than this decoder: skip its operands */
		for (unsigned k = p->std_len[op]; k > 0; k--)
			sp_lcur_uleb(c);
		break;
	}
	return 0;
}

/* Runs the line program, one row per row it emits. */
static int sp_lineprog_run(struct sp_lineprog *p)
{
	struct sp_lcur *c = &p->c;
	struct sp_linestate st;
	int rc = 0;
	sp_linestate_reset(&st);
	while (!rc && c->p < c->end && !c->bad) {
		unsigned op = *c->p++;
		if (op >= p->opcode_base) {
			if (!p->line_range)
				return -EINVAL;
			unsigned adj = op - p->opcode_base;
			/* wrap, don't overflow: a corrupt table may say anything */
			st.line = (int64_t)((uint64_t)st.line +
					    (uint64_t)(int64_t)(p->line_base +
								(int)(adj % p->line_range)));
			sp_lineprog_advance(p, &st, adj / p->line_range);
			rc = sp_lineprog_row(p, &st, 0);
		} else if (op == 0) {
			rc = sp_lineprog_extended(p, &st);
		} else {
			rc = sp_lineprog_standard(p, &st, op);
		}
	}
	return !rc && c->bad ? -EINVAL : rc;
}

/* Sorts the rows, marks the last as an end, and builds the block index. */
static int sp_linetab_finish(struct sp_linetab *t)
{
	int rc = sp_linetab_sort(t);
	if (rc)
		return rc;
	/* libdw marks the highest row as the end even where a compiler forgot */
	if (t->n)
		t->rows[t->n - 1].end = 1;
	t->n_blocks = (t->n + SP_LINE_BLOCK - 1) / SP_LINE_BLOCK;
	t->block_addr = malloc((t->n_blocks ? t->n_blocks : 1) * sizeof(*t->block_addr));
	if (!t->block_addr)
		return -ENOMEM;
	for (size_t b = 0; b < t->n_blocks; b++)
		t->block_addr[b] = t->rows[b * SP_LINE_BLOCK].addr;
	return 0;
}

int sp_linetab_new(const struct sp_linesrc *src, uint64_t off, unsigned address_size,
		   const char *comp_dir, struct sp_linetab **out)
{
	struct sp_lineprog *p = NULL;
	int rc = -EINVAL;
	*out = NULL;
	if (!src->line || off >= src->line_len || (address_size != 4 && address_size != 8))
		return -EINVAL;
	rc = -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->t = calloc(1, sizeof(*p->t))))
		goto out;
	sp_arena_init(&p->t->strings);
	p->src = src;
	p->address_size = address_size;
	if ((rc = sp_lineprog_header(p, off)) || (rc = sp_lineprog_dirs(p, comp_dir)) ||
	    (rc = sp_lineprog_files(p)) || (rc = sp_lineprog_run(p)) ||
	    (rc = sp_linetab_finish(p->t)))
		goto out;
	p->t->dirs = p->dirs; /* the names joined on first use point into them */
	p->dirs = NULL;
	*out = p->t;
	p->t = NULL;
out:
	if (p) {
		free(p->dirs);
		sp_linetab_free(p->t);
	}
	free(p);
	return rc;
}

void sp_linetab_free(struct sp_linetab *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->block_addr);
	free(t->files);
	free(t->dirs);
	sp_arena_release(&t->strings);
	free(t);
}

size_t sp_linetab_rows(const struct sp_linetab *t)
{
	return t ? t->n : 0;
}

const char *sp_linetab_file(struct sp_linetab *t, uint64_t index)
{
	if (!t || index >= t->n_files)
		return NULL;
	struct sp_linefile *f = &t->files[index];
	if (!f->full) {
		f->full = sp_arena_printf(&t->strings, "%s/%s", f->dir, f->name);
		if (!f->full)
			return f->name; /* out of memory: the bare name, not cached */
	}
	return f->full;
}

bool sp_linetab_find(struct sp_linetab *t, uint64_t addr, const char **file, unsigned *line,
		     unsigned *column)
{
	if (!t || !t->n || addr < t->block_addr[0])
		return false;
	/* the last block starting at or below addr holds the last row at or
	 * below it: every later block starts above addr */
	size_t lo = 0, hi = t->n_blocks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->block_addr[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = (lo - 1) * SP_LINE_BLOCK;
	size_t l = first, u = first + SP_LINE_BLOCK - 1;
	if (u >= t->n)
		u = t->n - 1;
	while (l < u) {
		size_t mid = u - (u - l) / 2;
		if (addr < t->rows[mid].addr)
			u = mid - 1;
		else
			l = mid;
	}
	const struct sp_linerow *r = &t->rows[l];
	if (r->end || r->addr > addr)
		return false;
	*file = sp_linetab_file(t, r->file);
	*line = r->line > 0 ? (unsigned)r->line : 0;
	*column = r->column;
	return true;
}
