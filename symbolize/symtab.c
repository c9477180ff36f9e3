#include "symbolize/symtab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/arena.h"
#include "symbolize/demangle.h"
#include "symbolize/rangemap.h"

struct sp_sym {
	uint64_t value;
	uint64_t size;
	const char *name;    /* in the ELF string table */
	const char *display; /* demangled name, filled on first use */
	uint32_t shndx;
	uint32_t order; /* index in the ELF table: the tie-breaker libdwfl uses */
	uint8_t bind;	/* higher is preferred: global 3, weak 2, local 1 */
};

struct sp_scn {
	uint64_t addr;
	uint64_t size;
	uint32_t index;
};

struct sp_symtab {
	struct sp_sym *syms; /* by value; at one value the preferred last */
	uint64_t *max_end;   /* max_end[i]: highest value + size among syms[0..i] */
	/*
	 * Sized symbols flattened: where they overlap, the later in syms (the
	 * closer start, then the preferred) wins. A walk back over the sorted
	 * array would do, until one huge symbol makes every lookup after it
	 * walk back to it.
	 */
	struct sp_rangemap sized;
	size_t n;
	struct sp_scn *scns; /* allocated sections, in section-header order */
	size_t n_scns;
	int demangle;
	struct sp_arena names;
};

static uint8_t sp_bind_rank(unsigned bind)
{
	switch (bind) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/*
 * By value; at one value the one libdwfl prefers last: lower binding first,
 * then larger size, then later in the ELF table.
 */
static int sp_sym_cmp(const void *a, const void *b)
{
	const struct sp_sym *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->bind != y->bind)
		return x->bind < y->bind ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->order > y->order ? -1 : x->order < y->order;
}

/* Reads the allocated sections, for the sizeless-symbol rule. */
static int sp_symtab_read_scns(struct sp_symtab *t, Elf *elf)
{
	size_t nscn;
	if (elf_getshdrnum(elf, &nscn) != 0)
		return 0;
	t->scns = calloc(nscn ? nscn : 1, sizeof(*t->scns));
	if (!t->scns)
		return -ENOMEM;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		t->scns[t->n_scns++] = (struct sp_scn){sh.sh_addr, sh.sh_size, elf_ndxscn(scn)};
	}
	return 0;
}

int sp_symtab_new(Elf *elf, GElf_Word sh_type, int demangle, struct sp_symtab **out)
{
	int rc = -ENOENT;
	struct sp_symtab *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->demangle = demangle;
	sp_arena_init(&t->names);

	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == sh_type)
			break;
	if (!scn || !sh.sh_entsize)
		goto out;
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data)
		goto out;
	/* SHT_SYMTAB_SHNDX holds section indexes past 0xff00, rare but legal */
	Elf_Data *xdata = NULL;
	Elf_Scn *x = NULL;
	while ((x = elf_nextscn(elf, x)) != NULL) {
		GElf_Shdr xs;
		if (gelf_getshdr(x, &xs) && xs.sh_type == SHT_SYMTAB_SHNDX &&
		    xs.sh_link == elf_ndxscn(scn)) {
			xdata = elf_getdata(x, NULL);
			break;
		}
	}
	size_t count = sh.sh_size / sh.sh_entsize;
	rc = -ENOMEM;
	t->syms = malloc((count ? count : 1) * sizeof(*t->syms));
	if (!t->syms)
		goto out;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		Elf32_Word xndx = 0;
		if (!gelf_getsymshndx(data, xdata, (int)i, &sym, &xndx))
			continue;
		unsigned type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
		    type == STT_TLS)
			continue;
		const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		t->syms[t->n++] = (struct sp_sym){
		    .value = sym.st_value,
		    .size = sym.st_size,
		    .name = name,
		    .shndx = sym.st_shndx == SHN_XINDEX ? xndx : sym.st_shndx,
		    .order = (uint32_t)i,
		    .bind = sp_bind_rank(GELF_ST_BIND(sym.st_info)),
		};
	}
	if (!t->n) {
		rc = -ENOENT;
		goto out;
	}
	qsort(t->syms, t->n, sizeof(*t->syms), sp_sym_cmp);
	t->max_end = malloc(t->n * sizeof(*t->max_end));
	if (!t->max_end)
		goto out;
	uint64_t m = 0;
	size_t n_sized = 0;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t end = t->syms[i].value + t->syms[i].size;
		m = end > m ? end : m;
		t->max_end[i] = m;
		n_sized += t->syms[i].size != 0;
	}
	if (t->n > UINT32_MAX)
		goto out;
	struct sp_range *r = malloc((n_sized ? n_sized : 1) * sizeof(*r));
	if (!r)
		goto out;
	n_sized = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->syms[i].size)
			r[n_sized++] =
			    (struct sp_range){t->syms[i].value, t->syms[i].value + t->syms[i].size,
					      (uint32_t)i, (uint32_t)i};
	rc = sp_rangemap_build(&t->sized, r, n_sized);
	free(r);
	if (rc)
		goto out;
	rc = sp_symtab_read_scns(t, elf);
out:
	if (rc) {
		sp_symtab_free(t);
		t = NULL;
	}
	*out = t;
	return rc;
}

void sp_symtab_free(struct sp_symtab *t)
{
	if (!t)
		return;
	free(t->syms);
	free(t->max_end);
	sp_rangemap_release(&t->sized);
	free(t->scns);
	sp_arena_release(&t->names);
	free(t);
}

size_t sp_symtab_count(const struct sp_symtab *t)
{
	return t ? t->n : 0;
}

/* libdwfl's "same section" test for sizeless symbols. */
static bool sp_symtab_same_section(const struct sp_symtab *t, const struct sp_sym *s,
				   uint64_t vaddr)
{
	if (s->shndx >= SHN_LORESERVE && s->shndx != SHN_XINDEX)
		return s->value == vaddr;
	for (size_t i = 0; i < t->n_scns; i++)
		if (vaddr - t->scns[i].addr < t->scns[i].size)
			return t->scns[i].index == s->shndx;
	return false;
}

static const char *sp_symtab_display(struct sp_symtab *t, struct sp_sym *s)
{
	if (s->display)
		return s->display;
	s->display = s->name;
	if (t->demangle) {
		char *d = sp_demangle(s->name);
		if (d) {
			/* on allocation failure the mangled name is still right */
			const char *copy = sp_arena_strdup(&t->names, d);
			if (copy)
				s->display = copy;
			free(d);
		}
	}
	return s->display;
}

const char *sp_symtab_find(struct sp_symtab *t, uint64_t vaddr, uint64_t *start)
{
	if (!t || !t->n)
		return NULL;
	struct sp_sym *best = NULL;
	const struct sp_range *r = sp_rangemap_find(&t->sized, vaddr);
	if (r) {
		best = &t->syms[r->id];
	} else {
		/* a sizeless label: the closest at or below vaddr, in its
		 * section, with no symbol below it reaching past it */
		size_t lo = 0, hi = t->n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (t->syms[mid].value <= vaddr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			return NULL;
		uint64_t min_label = t->max_end[lo - 1];
		for (size_t j = lo; j-- > 0;) {
			struct sp_sym *s = &t->syms[j];
			if (s->value < min_label || (best && s->value < best->value))
				break;
			/* at one value the preferred comes last: the first found */
			if (!s->size && !best && sp_symtab_same_section(t, s, vaddr))
				best = s;
		}
	}
	if (!best)
		return NULL;
	if (start)
		*start = best->value;
	return sp_symtab_display(t, best);
}
