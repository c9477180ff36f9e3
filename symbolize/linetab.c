#define _GNU_SOURCE /* qsort_r */
#include "linetab.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "leb.h"

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

int sp_linetab_new(const struct sp_linesrc *src, uint64_t off, unsigned address_size,
		   const char *comp_dir, struct sp_linetab **out)
{
	int rc = -EINVAL;
	size_t files_cap = 0, rows_cap = 0;
	const char **dirs = NULL;
	size_t n_dirs = 0;
	*out = NULL;
	if (!src->line || off >= src->line_len || (address_size != 4 && address_size != 8))
		return -EINVAL;
	struct sp_linetab *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	sp_arena_init(&t->strings);

	struct sp_lcur c = {src->line + off, src->line + src->line_len, false};
	unsigned offset_size = 4;
	uint64_t unit_length = sp_lcur_fixed(&c, 4);
	if (unit_length == 0xffffffffu) {
		offset_size = 8;
		unit_length = sp_lcur_fixed(&c, 8);
	}
	if (c.bad || unit_length > (uint64_t)(c.end - c.p))
		goto out;
	c.end = c.p + unit_length;
	unsigned version = (unsigned)sp_lcur_fixed(&c, 2);
	if (version < 2 || version > 5)
		goto out;
	if (version >= 5 && (sp_lcur_fixed(&c, 1) != address_size || sp_lcur_fixed(&c, 1) != 0))
		goto out;
	uint64_t header_length = sp_lcur_fixed(&c, offset_size);
	const uint8_t *header_start = c.p;
	unsigned min_inst = (unsigned)sp_lcur_fixed(&c, 1);
	unsigned max_ops = version >= 4 ? (unsigned)sp_lcur_fixed(&c, 1) : 1;
	unsigned default_is_stmt = (unsigned)sp_lcur_fixed(&c, 1);
	int line_base = (int8_t)sp_lcur_fixed(&c, 1);
	unsigned line_range = (unsigned)sp_lcur_fixed(&c, 1);
	unsigned opcode_base = (unsigned)sp_lcur_fixed(&c, 1);
	(void)default_is_stmt;
	if (c.bad || !max_ops || !opcode_base || (size_t)(c.end - c.p) < opcode_base - 1)
		goto out;
	const uint8_t *std_len = c.p - 1; /* std_len[op] for 1 <= op < opcode_base */
	c.p += opcode_base - 1;

	/* directories */
	struct sp_lfmt fmt[256];
	if (version < 5) {
		size_t cap = 16;
		dirs = malloc(cap * sizeof(*dirs));
		if (!dirs)
			goto nomem;
		dirs[n_dirs++] = comp_dir;
		for (;;) {
			const char *d = sp_lcur_cstr(&c);
			if (!d || !d[0])
				break;
			if (n_dirs == cap) {
				const char **p = realloc(dirs, 2 * cap * sizeof(*p));
				if (!p)
					goto nomem;
				dirs = p;
				cap *= 2;
			}
			dirs[n_dirs++] = d;
		}
	} else {
		int nf = sp_lcur_formats(&c, fmt);
		uint64_t count = sp_lcur_uleb(&c);
		if (nf < 0 || c.bad || (nf == 0 && count) ||
		    (nf && count > (uint64_t)(c.end - c.p) / (unsigned)nf))
			goto out;
		dirs = malloc((count ? count : 1) * sizeof(*dirs));
		if (!dirs)
			goto nomem;
		for (uint64_t i = 0; i < count; i++) {
			const char *d = NULL;
			for (int k = 0; k < nf; k++) {
				const char *s;
				uint64_t v;
				if (!sp_lcur_form(&c, src, fmt[k].form, offset_size, &s, &v))
					goto out;
				if (fmt[k].desc == DW_LNCT_path)
					d = s;
			}
			if (!d || c.bad)
				goto out;
			dirs[n_dirs++] = d;
		}
	}

	/* files: index 0 is libdw's "???" before DWARF 5, the first entry in 5 */
	if (version < 5) {
		if (sp_linetab_add_file(t, &files_cap, NULL, "???"))
			goto nomem;
		for (;;) {
			const char *name = sp_lcur_cstr(&c);
			if (!name || !name[0])
				break;
			uint64_t di = sp_lcur_uleb(&c);
			sp_lcur_uleb(&c);
			sp_lcur_uleb(&c);
			if (c.bad || di >= n_dirs)
				goto out;
			if (sp_linetab_add_file(t, &files_cap, dirs[di], name))
				goto nomem;
		}
	} else {
		int nf = sp_lcur_formats(&c, fmt);
		uint64_t count = sp_lcur_uleb(&c);
		if (nf < 0 || c.bad || (nf == 0 && count) ||
		    (nf && count > (uint64_t)(c.end - c.p) / (unsigned)nf))
			goto out;
		if (!count && sp_linetab_add_file(t, &files_cap, NULL, "???"))
			goto nomem;
		for (uint64_t i = 0; i < count; i++) {
			const char *name = NULL;
			uint64_t di = UINT64_MAX;
			for (int k = 0; k < nf; k++) {
				const char *s;
				uint64_t v;
				if (!sp_lcur_form(&c, src, fmt[k].form, offset_size, &s, &v))
					goto out;
				if (fmt[k].desc == DW_LNCT_path)
					name = s;
				else if (fmt[k].desc == DW_LNCT_directory_index)
					di = v;
			}
			if (!name || c.bad || di >= n_dirs)
				goto out;
			if (sp_linetab_add_file(t, &files_cap, dirs[di], name))
				goto nomem;
		}
	}
	if (c.bad || c.p != header_start + header_length)
		goto out;

	/* the program */
	uint64_t addr = 0;
	unsigned op_index = 0, column = 0;
	uint64_t file = 1;
	int64_t line = 1;
#define SP_ADVANCE(op)                                                                             \
	do {                                                                                       \
		uint64_t adv_ = (op);                                                              \
		addr += min_inst * ((op_index + adv_) / max_ops);                                  \
		op_index = (unsigned)((op_index + adv_) % max_ops);                                \
	} while (0)
#define SP_ROW(is_end)                                                                             \
	do {                                                                                       \
		if (t->n == rows_cap) {                                                            \
			size_t n_ = rows_cap ? rows_cap * 2 : 1024;                                \
			struct sp_linerow *p_ = realloc(t->rows, n_ * sizeof(*p_));                \
			if (!p_)                                                                   \
				goto nomem;                                                        \
			t->rows = p_;                                                              \
			rows_cap = n_;                                                             \
		}                                                                                  \
		t->rows[t->n++] =                                                                  \
		    (struct sp_linerow){addr, (uint32_t)file, (int32_t)line, column, (is_end)};    \
	} while (0)

	while (c.p < c.end && !c.bad) {
		unsigned op = *c.p++;
		if (op >= opcode_base) {
			if (!line_range)
				goto out;
			/* wrap, don't overflow: a corrupt table may say anything */
			line = (int64_t)((uint64_t)line +
					 (uint64_t)(int64_t)(line_base + (int)((op - opcode_base) %
									       line_range)));
			SP_ADVANCE((op - opcode_base) / line_range);
			SP_ROW(0);
		} else if (op == 0) {
			uint64_t len = sp_lcur_uleb(&c);
			if (!len || len > (uint64_t)(c.end - c.p))
				goto out;
			const uint8_t *next = c.p + len;
			unsigned sub = *c.p++;
			switch (sub) {
			case DW_LNE_end_sequence:
				SP_ROW(1);
				addr = 0;
				op_index = 0;
				file = 1;
				line = 1;
				column = 0;
				break;
			case DW_LNE_set_address:
				addr = sp_lcur_fixed(&c, address_size);
				op_index = 0;
				break;
			case DW_LNE_define_file: {
				const char *name = sp_lcur_cstr(&c);
				uint64_t di = sp_lcur_uleb(&c);
				if (!name || c.bad || di >= n_dirs)
					goto out;
				if (sp_linetab_add_file(t, &files_cap, dirs[di], name))
					goto nomem;
				break;
			}
			default:
				break;
			}
			c.p = next;
		} else if (op <= DW_LNS_set_isa) {
			switch (op) {
			case DW_LNS_copy:
				SP_ROW(0);
				break;
			case DW_LNS_advance_pc:
				SP_ADVANCE(sp_lcur_uleb(&c));
				break;
			case DW_LNS_advance_line:
				line = (int64_t)((uint64_t)line + (uint64_t)sp_lcur_sleb(&c));
				break;
			case DW_LNS_set_file:
				file = sp_lcur_uleb(&c);
				break;
			case DW_LNS_set_column:
				column = (unsigned)sp_lcur_uleb(&c);
				break;
			case DW_LNS_const_add_pc:
				if (!line_range)
					goto out;
				SP_ADVANCE((255 - opcode_base) / line_range);
				break;
			case DW_LNS_fixed_advance_pc:
				addr += sp_lcur_fixed(&c, 2);
				op_index = 0;
				break;
			case DW_LNS_set_isa:
				sp_lcur_uleb(&c);
				break;
			default: /* negate_stmt, basic_block, prologue_end, epilogue_begin */
				break;
			}
		} else {
			/* an opcode newer than this decoder: skip its operands */
			for (unsigned k = std_len[op]; k > 0; k--)
				sp_lcur_uleb(&c);
		}
	}
#undef SP_ADVANCE
#undef SP_ROW
	if (c.bad)
		goto out;
	rc = sp_linetab_sort(t);
	if (rc)
		goto out;
	/* libdw marks the highest row as the end even where a compiler forgot */
	if (t->n)
		t->rows[t->n - 1].end = 1;
	t->n_blocks = (t->n + SP_LINE_BLOCK - 1) / SP_LINE_BLOCK;
	t->block_addr = malloc((t->n_blocks ? t->n_blocks : 1) * sizeof(*t->block_addr));
	if (!t->block_addr)
		goto nomem;
	for (size_t b = 0; b < t->n_blocks; b++)
		t->block_addr[b] = t->rows[b * SP_LINE_BLOCK].addr;
	t->dirs = dirs;
	dirs = NULL;
	*out = t;
	t = NULL;
	rc = 0;
	goto out;
nomem:
	rc = -ENOMEM;
out:
	free(dirs);
	sp_linetab_free(t);
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
