#include "symbolize/dwarfidx.h"

#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/addrmap.h"
#include "symbolize/arena.h"
#include "symbolize/demangle.h"
#include "symbolize/linetab.h"
#include "symbolize/rangemap.h"
#include "symbolize/symbolize.h"

/* A subprogram or inlined_subroutine DIE that has code. */
struct sp_dwnode {
	Dwarf_Die die;
	int32_t parent;		   /* the node an inlined call sits in; -1 for a subprogram */
	bool inlined;		   /* DW_TAG_inlined_subroutine */
	bool expanded;		   /* a subprogram whose inline tree was read */
	const char *name;	   /* resolved on first use */
	struct sp_rangemap *inner; /* a subprogram's inline tree: address -> innermost node */
};

enum sp_dwcu_state { SP_DWCU_NEW = 0, SP_DWCU_READY, SP_DWCU_FAILED };

struct sp_dwcu {
	Dwarf_Die die;
	enum sp_dwcu_state state;
	bool has_ranges;
	bool split;  /* a split-DWARF unit: its line table is in the .dwo */
	bool c_only; /* a C unit: no functions inside struct or union types */
	struct sp_dwnode *nodes;
	size_t n_nodes;
	size_t nodes_cap;
	struct sp_rangemap segs; /* address -> outermost subprogram node */
	struct sp_linetab *lt;	 /* our decoding of the line table, or */
	Dwarf_Lines *lines;	 /* libdw's where ours declined; NULL when none */
	size_t n_lines;
	Dwarf_Files *files;
	const char *comp_dir;
};

struct sp_dwarfidx {
	Dwarf *dw;
	unsigned flags;
	struct sp_dwcu *cus;
	size_t n_cus;
	size_t n_indexed;
	struct sp_rangemap cu_map; /* address -> unit */
	struct sp_addrmap paths;   /* file name from libdw -> name to show */
	struct sp_addrmap names;   /* DIE name from libdw -> demangled name */
	struct sp_arena strings;
	struct sp_dwframe *out; /* the last lookup's frames */
	size_t out_cap;
	struct sp_range *pieces; /* scratch for the unit or function being indexed */
	size_t n_pieces;
	size_t pieces_cap;
	struct sp_linesrc linesrc; /* sections for sp_linetab */
};

/* Appends die's address ranges as pieces; returns how many, or -ENOMEM. */
static int sp_dwarfidx_add_ranges(struct sp_dwarfidx *x, Dwarf_Die *die, uint32_t id, uint32_t prio)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int n = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (sp_array_grow((void **)&x->pieces, &x->pieces_cap, x->n_pieces + 1,
				  sizeof(*x->pieces)))
			return -ENOMEM;
		x->pieces[x->n_pieces++] = (struct sp_range){lo, hi, id, prio};
		n++;
	}
	return n;
}

static bool sp_die_has_code(Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	return dwarf_ranges(die, 0, &base, &lo, &hi) > 0;
}

#define SP_DWARF_MAX_DEPTH 256

/*
 * Collects the function and inline DIEs under parent. DIEs without code are
 * pruned with their subtrees, as dwarf_getscopes does: declarations, abstract
 * inline instances, empty blocks. At unit level (deep false) a subprogram is
 * recorded without its subtree: its inline tree is read on the first lookup
 * that lands in it, so a profile touching ten functions of a huge unit pays
 * for ten.
 */
static int sp_dwcu_walk(struct sp_dwarfidx *x, struct sp_dwcu *cu, Dwarf_Die *parent,
			int32_t parent_node, uint32_t depth, bool deep)
{
	/* Real code nests a few dozen levels; a crafted file nested 55,000
	 * deep overflowed the stack (found by fuzzing). Deeper DIEs are left
	 * out: their code is reported as the enclosing function. */
	if (depth > SP_DWARF_MAX_DEPTH)
		return 0;
	Dwarf_Die c;
	if (dwarf_child(parent, &c) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&c);
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point: {
			if (cu->n_nodes >= INT32_MAX)
				return 0;
			int32_t id = (int32_t)cu->n_nodes;
			int n = sp_dwarfidx_add_ranges(x, &c, (uint32_t)id, deep ? depth : 0);
			if (n < 0)
				return n;
			if (n == 0)
				break;
			if (sp_array_grow((void **)&cu->nodes, &cu->nodes_cap, cu->n_nodes + 1,
					  sizeof(*cu->nodes)))
				return -ENOMEM;
			bool inl = tag == DW_TAG_inlined_subroutine;
			bool kids = dwarf_haschildren(&c) > 0;
			cu->nodes[cu->n_nodes++] = (struct sp_dwnode){
			    .die = c,
			    .parent = inl ? parent_node : -1,
			    .inlined = inl,
			    .expanded = deep || !kids,
			};
			if (deep && kids) {
				int rc = sp_dwcu_walk(x, cu, &c, id, depth + 1, true);
				if (rc < 0)
					return rc;
			}
			break;
		}
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (dwarf_haschildren(&c) > 0 && sp_die_has_code(&c)) {
				int rc = sp_dwcu_walk(x, cu, &c, parent_node, depth + 1, deep);
				if (rc < 0)
					return rc;
			}
			break;
		/* no code of their own, but C++ and Fortran put functions in
		 * them; C structs are skipped whole (they are most of a C unit) */
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (cu->c_only)
				break;
			/* fall through */
		case DW_TAG_namespace:
		case DW_TAG_module:
			if (dwarf_haschildren(&c) > 0) {
				int rc = sp_dwcu_walk(x, cu, &c, parent_node, depth + 1, deep);
				if (rc < 0)
					return rc;
			}
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

/* Reads a subprogram's inline tree on the first lookup that lands in it. */
static int sp_dwcu_expand(struct sp_dwarfidx *x, struct sp_dwcu *cu, int32_t id)
{
	x->n_pieces = 0;
	cu->nodes[id].expanded = true;
	Dwarf_Die die = cu->nodes[id].die;
	int rc = sp_dwcu_walk(x, cu, &die, id, 1, true);
	if (rc < 0 || !x->n_pieces)
		return rc;
	struct sp_rangemap *inner = calloc(1, sizeof(*inner));
	if (!inner)
		return -ENOMEM;
	rc = sp_rangemap_build(inner, x->pieces, x->n_pieces);
	if (rc) {
		free(inner);
		return rc;
	}
	cu->nodes[id].inner = inner;
	return 0;
}

/* The line table: ours, or libdw's for what ours declines. */
static int sp_dwcu_lines(struct sp_dwarfidx *x, struct sp_dwcu *cu)
{
	Dwarf_Attribute a;
	Dwarf_Word off;
	Dwarf_Die unit;
	uint8_t address_size = 0;
	if (!cu->split && dwarf_formudata(dwarf_attr(&cu->die, DW_AT_stmt_list, &a), &off) == 0 &&
	    dwarf_diecu(&cu->die, &unit, &address_size, NULL)) {
		int rc = sp_linetab_new(&x->linesrc, off, address_size, cu->comp_dir, &cu->lt);
		if (rc != -EINVAL)
			return rc;
	}
	/* a unit without a line table (hand-written assembly) still has names */
	if (dwarf_getsrclines(&cu->die, &cu->lines, &cu->n_lines) != 0) {
		cu->lines = NULL;
		cu->n_lines = 0;
	}
	size_t nfiles;
	if (dwarf_getsrcfiles(&cu->die, &cu->files, &nfiles) != 0)
		cu->files = NULL;
	return 0;
}

/* Indexes a unit on its first hit. A unit that fails stays without functions. */
static int sp_dwcu_index(struct sp_dwarfidx *x, struct sp_dwcu *cu)
{
	x->n_pieces = 0;
	cu->state = SP_DWCU_FAILED;
	switch (dwarf_srclang(&cu->die)) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_C99:
	case DW_LANG_C11:
	case 0x2c: /* DW_LANG_C17, newer than this dwarf.h */
		cu->c_only = true;
		break;
	default:
		break;
	}
	int rc = sp_dwcu_walk(x, cu, &cu->die, -1, 1, false);
	if (rc == 0)
		rc = sp_rangemap_build(&cu->segs, x->pieces, x->n_pieces);
	if (rc < 0)
		return rc;
	Dwarf_Attribute a;
	cu->comp_dir = dwarf_formstring(dwarf_attr(&cu->die, DW_AT_comp_dir, &a));
	if ((rc = sp_dwcu_lines(x, cu)) < 0)
		return rc;
	cu->state = SP_DWCU_READY;
	x->n_indexed++;
	return 0;
}

static int sp_dwarfidx_add_cu(struct sp_dwarfidx *x, Dwarf_Die *die, bool split, size_t *cap)
{
	if (sp_array_grow((void **)&x->cus, cap, x->n_cus + 1, sizeof(*x->cus)))
		return -ENOMEM;
	struct sp_dwcu *cu = &x->cus[x->n_cus];
	memset(cu, 0, sizeof(*cu));
	cu->die = *die;
	cu->split = split;
	size_t before = x->n_pieces;
	int n = sp_dwarfidx_add_ranges(x, die, (uint32_t)x->n_cus, 0);
	if (n < 0)
		return n;
	cu->has_ranges = x->n_pieces > before;
	x->n_cus++;
	return 0;
}

/*
 * Units whose DIE carries no address range (some producers) are found
 * through .debug_aranges, the table eu-addr2line relies on.
 */
static int sp_dwarfidx_add_aranges(struct sp_dwarfidx *x)
{
	Dwarf_Aranges *ar;
	size_t n;
	if (dwarf_getaranges(x->dw, &ar, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Arange *a = dwarf_onearange(ar, i);
		Dwarf_Addr addr;
		Dwarf_Word len;
		Dwarf_Off off;
		if (!a || dwarf_getarangeinfo(a, &addr, &len, &off) != 0 || !len)
			continue;
		/* units are in section order, so their DIE offsets are sorted */
		size_t lo = 0, hi = x->n_cus;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (dwarf_dieoffset(&x->cus[mid].die) < off)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == x->n_cus || dwarf_dieoffset(&x->cus[lo].die) != off ||
		    x->cus[lo].has_ranges)
			continue;
		if (sp_array_grow((void **)&x->pieces, &x->pieces_cap, x->n_pieces + 1,
				  sizeof(*x->pieces)))
			return -ENOMEM;
		x->pieces[x->n_pieces++] = (struct sp_range){addr, addr + len, (uint32_t)lo, 0};
	}
	return 0;
}

/*
 * The sections our line decoder reads. libdw has already inflated
 * compressed ones (SHF_COMPRESSED, .zdebug) in place in this Elf; inflate
 * any it has not.
 */
static void sp_dwarfidx_sections(struct sp_dwarfidx *x)
{
	Elf *elf = dwarf_getelf(x->dw);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		const uint8_t **p;
		size_t *len;
		bool gnu = !strncmp(name, ".zdebug", 7);
		const char *base = name + (gnu ? 7 : 6);
		if (strncmp(name, gnu ? ".zdebug" : ".debug", gnu ? 7 : 6))
			continue;
		if (!strcmp(base, "_line")) {
			p = &x->linesrc.line;
			len = &x->linesrc.line_len;
		} else if (!strcmp(base, "_line_str")) {
			p = &x->linesrc.line_str;
			len = &x->linesrc.line_str_len;
		} else if (!strcmp(base, "_str")) {
			p = &x->linesrc.str;
			len = &x->linesrc.str_len;
		} else {
			continue;
		}
		if (sh.sh_flags & SHF_COMPRESSED)
			elf_compress(scn, 0, 0);
		else if (gnu)
			elf_compress_gnu(scn, 0, 0);
		Elf_Data *d = elf_getdata(scn, NULL);
		if (d && d->d_buf) {
			*p = d->d_buf;
			*len = d->d_size;
		}
	}
}

struct sp_dwarfidx *sp_dwarfidx_new(Dwarf *dw, unsigned flags)
{
	struct sp_dwarfidx *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->dw = dw;
	x->flags = flags;
	sp_arena_init(&x->strings);

	sp_dwarfidx_sections(x);
	size_t cap = 0;
	bool missing = false;
	Dwarf_CU *unit = NULL;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie, subdie;
	while (dwarf_get_units(dw, unit, &unit, &version, &type, &cudie, &subdie) == 0) {
		Dwarf_Die *die = &cudie;
		/* split DWARF: the code DIEs live in the .dwo unit */
		if (type == DW_UT_skeleton && subdie.cu)
			die = &subdie;
		else if (type != DW_UT_compile)
			continue;
		if (sp_dwarfidx_add_cu(x, die, die == &subdie, &cap))
			goto fail;
		missing |= !x->cus[x->n_cus - 1].has_ranges;
	}
	if (missing && sp_dwarfidx_add_aranges(x))
		goto fail;
	if (sp_rangemap_build(&x->cu_map, x->pieces, x->n_pieces))
		goto fail;
	return x;
fail:
	sp_dwarfidx_free(x);
	return NULL;
}

void sp_dwarfidx_free(struct sp_dwarfidx *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n_cus; i++) {
		struct sp_dwcu *cu = &x->cus[i];
		for (size_t k = 0; k < cu->n_nodes; k++) {
			if (cu->nodes[k].inner) {
				sp_rangemap_release(cu->nodes[k].inner);
				free(cu->nodes[k].inner);
			}
		}
		free(cu->nodes);
		sp_rangemap_release(&cu->segs);
		sp_linetab_free(cu->lt);
	}
	free(x->cus);
	sp_rangemap_release(&x->cu_map);
	sp_addrmap_release(&x->paths);
	sp_addrmap_release(&x->names);
	sp_arena_release(&x->strings);
	free(x->out);
	free(x->pieces);
	free(x);
}

void sp_dwarfidx_stats(const struct sp_dwarfidx *x, size_t *units, size_t *indexed)
{
	*units = x ? x->n_cus : 0;
	*indexed = x ? x->n_indexed : 0;
}

/*
 * The file name to show for a name from the unit's file table: joined to
 * DW_AT_comp_dir when relative (as eu-addr2line prints it), or its basename.
 * Cached by libdw's pointer, which is stable for the life of the Dwarf.
 */
static const char *sp_dwarfidx_path(struct sp_dwarfidx *x, struct sp_dwcu *cu, const char *file)
{
	if (!file)
		return NULL;
	const char *shown = sp_addrmap_get(&x->paths, (uintptr_t)file);
	if (shown)
		return shown;
	if (x->flags & SP_SYM_BASENAMES) {
		const char *slash = strrchr(file, '/');
		shown = slash ? slash + 1 : file;
	} else if (file[0] != '/' && cu->comp_dir) {
		shown = sp_arena_printf(&x->strings, "%s/%s", cu->comp_dir, file);
	} else {
		shown = file;
	}
	/* on allocation failure the unjoined name is better than none */
	if (!shown)
		return file;
	sp_addrmap_put(&x->paths, (uintptr_t)file, (void *)shown);
	return shown;
}

static const char *sp_dwnode_name(struct sp_dwarfidx *x, struct sp_dwnode *node)
{
	if (node->name)
		return node->name;
	Dwarf_Attribute a;
	const char *raw =
	    dwarf_formstring(dwarf_attr_integrate(&node->die, DW_AT_MIPS_linkage_name, &a)
				 ?: dwarf_attr_integrate(&node->die, DW_AT_linkage_name, &a));
	if (!raw)
		raw = dwarf_diename(&node->die);
	node->name = raw ? raw : "??";
	if (!raw || (x->flags & SP_SYM_NO_DEMANGLE) || raw[0] != '_' || raw[1] != 'Z')
		return node->name;
	/* many inlined copies share one abstract origin: demangle each name once */
	const char *d = sp_addrmap_get(&x->names, (uintptr_t)raw);
	if (!d) {
		char *m = sp_demangle(raw);
		d = m ? sp_arena_strdup(&x->strings, m) : raw;
		free(m);
		if (!d)
			d = raw;
		sp_addrmap_put(&x->names, (uintptr_t)raw, (void *)d);
	}
	node->name = d;
	return d;
}

/* eu-addr2line's dwfl_module_getsrc: the last row at or below addr, unless it ends a sequence. */
static void sp_dwcu_line(struct sp_dwarfidx *x, struct sp_dwcu *cu, uint64_t addr,
			 struct sp_dwline *loc)
{
	*loc = (struct sp_dwline){0};
	if (cu->lt) {
		const char *file;
		if (sp_linetab_find(cu->lt, addr, &file, &loc->line, &loc->column))
			loc->file = sp_dwarfidx_path(x, cu, file);
		return;
	}
	if (!cu->n_lines)
		return;
	size_t l = 0, u = cu->n_lines - 1;
	Dwarf_Addr a;
	while (l < u) {
		size_t idx = u - (u - l) / 2;
		if (dwarf_lineaddr(dwarf_onesrcline(cu->lines, idx), &a) != 0 || addr < a)
			u = idx - 1;
		else
			l = idx;
	}
	Dwarf_Line *line = dwarf_onesrcline(cu->lines, l);
	bool end = false;
	if (!line || dwarf_lineaddr(line, &a) != 0 || a > addr ||
	    dwarf_lineendsequence(line, &end) != 0 || end)
		return;
	int lineno = 0, col = 0;
	dwarf_lineno(line, &lineno);
	dwarf_linecol(line, &col);
	loc->file = sp_dwarfidx_path(x, cu, dwarf_linesrc(line, NULL, NULL));
	loc->line = lineno > 0 ? (unsigned)lineno : 0;
	loc->column = col > 0 ? (unsigned)col : 0;
}

/* The call site of an inlined call: where its caller's frame is. */
static void sp_dwnode_call_site(struct sp_dwarfidx *x, struct sp_dwcu *cu, struct sp_dwnode *node,
				struct sp_dwframe *f)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	f->file = NULL;
	f->line = 0;
	f->column = 0;
	if (dwarf_formudata(dwarf_attr(&node->die, DW_AT_call_file, &a), &v) == 0) {
		if (cu->lt)
			f->file = sp_dwarfidx_path(x, cu, sp_linetab_file(cu->lt, v));
		else if (cu->files)
			f->file = sp_dwarfidx_path(x, cu, dwarf_filesrc(cu->files, v, NULL, NULL));
	}
	if (dwarf_formudata(dwarf_attr(&node->die, DW_AT_call_line, &a), &v) == 0)
		f->line = (unsigned)v;
	if (dwarf_formudata(dwarf_attr(&node->die, DW_AT_call_column, &a), &v) == 0)
		f->column = (unsigned)v;
}

int sp_dwarfidx_lookup(struct sp_dwarfidx *x, uint64_t addr, const struct sp_dwframe **frames,
		       struct sp_dwline *loc)
{
	*loc = (struct sp_dwline){0};
	*frames = NULL;
	const struct sp_range *r = sp_rangemap_find(&x->cu_map, addr);
	/*
	 * Padding between two units' ranges belongs to the unit before it, as
	 * libdwfl (and so eu-addr2line) decides: that unit's line sequence
	 * often runs over the padding. Past the last unit, nothing.
	 */
	if (!r) {
		r = sp_rangemap_floor(&x->cu_map, addr);
		if (!r || r == &x->cu_map.segs[x->cu_map.n - 1])
			return 0;
	}
	struct sp_dwcu *cu = &x->cus[r->id];
	if (cu->state == SP_DWCU_NEW) {
		int rc = sp_dwcu_index(x, cu);
		if (rc < 0)
			return rc;
	}
	if (cu->state != SP_DWCU_READY)
		return 0;
	sp_dwcu_line(x, cu, addr, loc);
	const struct sp_range *seg = sp_rangemap_find(&cu->segs, addr);
	if (!seg)
		return 0;

	int32_t id = (int32_t)seg->id;
	if (!cu->nodes[id].expanded) {
		int rc = sp_dwcu_expand(x, cu, id);
		if (rc < 0)
			return rc;
	}
	if (cu->nodes[id].inner) {
		const struct sp_range *in = sp_rangemap_find(cu->nodes[id].inner, addr);
		if (in)
			id = (int32_t)in->id;
	}
	if (sp_array_grow((void **)&x->out, &x->out_cap, 1, sizeof(*x->out)))
		return -ENOMEM;
	x->out[0] = (struct sp_dwframe){
	    .func = sp_dwnode_name(x, &cu->nodes[id]),
	    .file = loc->file,
	    .line = loc->line,
	    .column = loc->column,
	    .inlined = cu->nodes[id].inlined,
	};
	size_t n = 1;
	/* parents are indexed before their children, which also stops a
	 * corrupt parent link from looping */
	while (cu->nodes[id].inlined && cu->nodes[id].parent >= 0 && cu->nodes[id].parent < id) {
		int32_t up = cu->nodes[id].parent;
		if (sp_array_grow((void **)&x->out, &x->out_cap, n + 1, sizeof(*x->out)))
			return -ENOMEM;
		struct sp_dwframe *f = &x->out[n++];
		sp_dwnode_call_site(x, cu, &cu->nodes[id], f);
		f->func = sp_dwnode_name(x, &cu->nodes[up]);
		f->inlined = cu->nodes[up].inlined;
		id = up;
	}
	*frames = x->out;
	return (int)n;
}
