#include "sampler/capture/cfi.h"
#include "sampler/base/sigsafe.h"
#include "format/cfiread.h"

#include <dwarf.h>
#include <elf.h>
#include <string.h>

/* x86-64 DWARF register numbers */
#define SP_DW_RSP 7
#define SP_DW_RA  16

/* The callee-saved registers in SP_CFI_REGS order, then the return address. */
static const uint8_t sp_dw_regs[SP_CFI_REGS + 1] = {3, 6, 12, 13, 14, 15, SP_DW_RA};
#define SP_RA SP_CFI_REGS

/* CFA programs nest remember/restore_state a level or two deep */
#define SP_CFI_STATES 8

enum sp_how { SP_HOW_SAME, SP_HOW_UNDEF, SP_HOW_OFFSET, SP_HOW_OTHER };

struct sp_reg_rule {
	uint8_t how; /* enum sp_how */
	int64_t off;
};

struct sp_cfa_state {
	uint64_t cfa_reg;
	bool cfa_expr;
	int64_t cfa_off;
	struct sp_reg_rule reg[SP_CFI_REGS + 1]; /* sp_dw_regs order */
};

/* The index of DWARF register dw in sp_dw_regs, or -1 if it is not tracked. */
static int sp_reg_index(uint64_t dw)
{
	for (int i = 0; i <= SP_CFI_REGS; i++)
		if (sp_dw_regs[i] == dw)
			return i;
	return -1;
}

/* The PT_LOAD segment of info that holds [addr, addr + len), as [*lo, *hi). */
static bool sp_segment_of(const struct dl_phdr_info *info, uintptr_t addr, size_t len,
			  uintptr_t *lo, uintptr_t *hi)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		if (addr >= s && addr < e && len <= e - addr) {
			*lo = s;
			*hi = e;
			return true;
		}
	}
	return false;
}

void sp_cfi_table_init(const struct dl_phdr_info *info, struct sp_cfi_table *t)
{
	memset(t, 0, sizeof(*t));
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh || eh->p_memsz < 4)
		return;
	uintptr_t hdr = info->dlpi_addr + eh->p_vaddr;
	if (!sp_segment_of(info, hdr, eh->p_memsz, &t->hdr_lo, &t->hdr_hi))
		return;
	const uint8_t *p = (const uint8_t *)hdr;
	struct sp_cfiread c = sp_cfiread_at(p, (const uint8_t *)t->hdr_hi, hdr);
	c.datarel = hdr;
	uint8_t version = (uint8_t)sp_cfiread_fixed(&c, 1, false);
	uint8_t frame_enc = (uint8_t)sp_cfiread_fixed(&c, 1, false);
	uint8_t count_enc = (uint8_t)sp_cfiread_fixed(&c, 1, false);
	uint8_t table_enc = (uint8_t)sp_cfiread_fixed(&c, 1, false);
	uintptr_t frame = (uintptr_t)sp_cfiread_ptr(&c, frame_enc, true);
	uint64_t count = sp_cfiread_ptr(&c, count_enc, true);
	/* GNU ld and lld write 4-byte offsets from the header; the binary
	 * search below relies on that fixed entry size */
	if (c.bad || version != 1 || count_enc == DW_EH_PE_omit ||
	    table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || count == 0 || count > UINT32_MAX ||
	    count > (t->hdr_hi - (uintptr_t)c.p) / 8)
		return;
	if (!sp_segment_of(info, frame, 8, &t->lo, &t->hi))
		return;
	t->hdr = hdr;
	t->count = (uint32_t)count;
	t->table = (uintptr_t)c.p;
}

/* One CFA instruction stream, from p to end; stops once the location passes target. */
struct sp_cfa_prog {
	struct sp_cfiread c;
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
};

/* v times a factor, wrapping like the machine: junk CFI may overflow, and a
 * wrapped offset is then refused by the range checks of sp_reduce
 * like any other out-of-range one */
static int64_t sp_scaled(uint64_t v, int64_t factor)
{
	return (int64_t)(v * (uint64_t)factor);
}

static void sp_set_reg(struct sp_cfa_state *s, uint64_t reg, uint8_t how, int64_t off)
{
	/* the caller-saved registers are dead in every frame but the leaf */
	int i = sp_reg_index(reg);
	if (i >= 0)
		s->reg[i] = (struct sp_reg_rule){how, off};
}

static void sp_restore_reg(struct sp_cfa_state *s, const struct sp_cfa_state *init, uint64_t reg)
{
	int i = sp_reg_index(reg);
	if (i >= 0)
		s->reg[i] = init->reg[i];
}

/*
 * Runs the instructions of g on *s while the location (starting at *loc)
 * is <= target. init is the state after the CIE's initial instructions
 * (for DW_CFA_restore), NULL while running those. False on anything this
 * reader does not take.
 */
SP_SIGSAFE static bool sp_cfa_run(struct sp_cfa_prog *g, struct sp_cfa_state *s,
				  const struct sp_cfa_state *init, uint64_t *loc, uint64_t target)
{
	struct sp_cfa_state stack[SP_CFI_STATES];
	unsigned depth = 0;
	struct sp_cfiread *c = &g->c;
	while (c->p < c->end && !c->bad) {
		uint8_t op = (uint8_t)sp_cfiread_fixed(c, 1, false);
		uint64_t reg, delta = 0;
		bool advance = false;
		if ((op & 0xc0) == DW_CFA_advance_loc) {
			delta = (op & 0x3f) * g->code_align;
			advance = true;
		} else if ((op & 0xc0) == DW_CFA_offset) {
			sp_set_reg(s, op & 0x3f, SP_HOW_OFFSET,
				   sp_scaled(sp_cfiread_uleb(c), g->data_align));
		} else if ((op & 0xc0) == DW_CFA_restore) {
			if (!init)
				return false;
			sp_restore_reg(s, init, op & 0x3f);
		} else
			switch (op) {
			case DW_CFA_nop:
				break;
			case DW_CFA_set_loc: {
				uint64_t to = sp_cfiread_ptr(c, g->fde_enc, true);
				if (to < *loc)
					return false;
				delta = to - *loc;
				advance = true;
				break;
			}
			case DW_CFA_advance_loc1:
				delta = sp_cfiread_fixed(c, 1, false) * g->code_align;
				advance = true;
				break;
			case DW_CFA_advance_loc2:
				delta = sp_cfiread_fixed(c, 2, false) * g->code_align;
				advance = true;
				break;
			case DW_CFA_advance_loc4:
				delta = sp_cfiread_fixed(c, 4, false) * g->code_align;
				advance = true;
				break;
			case DW_CFA_offset_extended:
				reg = sp_cfiread_uleb(c);
				sp_set_reg(s, reg, SP_HOW_OFFSET,
					   sp_scaled(sp_cfiread_uleb(c), g->data_align));
				break;
			case DW_CFA_offset_extended_sf:
				reg = sp_cfiread_uleb(c);
				sp_set_reg(s, reg, SP_HOW_OFFSET,
					   sp_scaled((uint64_t)sp_cfiread_sleb(c), g->data_align));
				break;
			case DW_CFA_GNU_negative_offset_extended:
				reg = sp_cfiread_uleb(c);
				sp_set_reg(s, reg, SP_HOW_OFFSET,
					   sp_scaled(-sp_cfiread_uleb(c), g->data_align));
				break;
			case DW_CFA_restore_extended:
				if (!init)
					return false;
				sp_restore_reg(s, init, sp_cfiread_uleb(c));
				break;
			case DW_CFA_undefined:
				sp_set_reg(s, sp_cfiread_uleb(c), SP_HOW_UNDEF, 0);
				break;
			case DW_CFA_same_value:
				sp_set_reg(s, sp_cfiread_uleb(c), SP_HOW_SAME, 0);
				break;
			case DW_CFA_register:
				reg = sp_cfiread_uleb(c);
				sp_cfiread_uleb(c);
				sp_set_reg(s, reg, SP_HOW_OTHER, 0);
				break;
			case DW_CFA_remember_state:
				if (depth == SP_CFI_STATES)
					return false;
				stack[depth++] = *s;
				break;
			case DW_CFA_restore_state:
				/* the whole row, CFA included, as libgcc and libunwind keep it */
				if (depth == 0)
					return false;
				*s = stack[--depth];
				break;
			case DW_CFA_def_cfa:
				s->cfa_reg = sp_cfiread_uleb(c);
				s->cfa_off = (int64_t)sp_cfiread_uleb(c);
				s->cfa_expr = false;
				break;
			case DW_CFA_def_cfa_sf:
				s->cfa_reg = sp_cfiread_uleb(c);
				s->cfa_off = sp_scaled((uint64_t)sp_cfiread_sleb(c), g->data_align);
				s->cfa_expr = false;
				break;
			case DW_CFA_def_cfa_register:
				s->cfa_reg = sp_cfiread_uleb(c);
				s->cfa_expr = false;
				break;
			case DW_CFA_def_cfa_offset:
				s->cfa_off = (int64_t)sp_cfiread_uleb(c);
				break;
			case DW_CFA_def_cfa_offset_sf:
				s->cfa_off = sp_scaled((uint64_t)sp_cfiread_sleb(c), g->data_align);
				break;
			case DW_CFA_def_cfa_expression: {
				uint64_t len = sp_cfiread_uleb(c);
				if (len > (uint64_t)(c->end - c->p))
					return false;
				c->p += len;
				s->cfa_expr = true;
				break;
			}
			case DW_CFA_expression:
			case DW_CFA_val_expression: {
				reg = sp_cfiread_uleb(c);
				uint64_t len = sp_cfiread_uleb(c);
				if (len > (uint64_t)(c->end - c->p))
					return false;
				c->p += len;
				sp_set_reg(s, reg, SP_HOW_OTHER, 0);
				break;
			}
			case DW_CFA_val_offset:
				reg = sp_cfiread_uleb(c);
				sp_cfiread_uleb(c);
				sp_set_reg(s, reg, SP_HOW_OTHER, 0);
				break;
			case DW_CFA_val_offset_sf:
				reg = sp_cfiread_uleb(c);
				sp_cfiread_sleb(c);
				sp_set_reg(s, reg, SP_HOW_OTHER, 0);
				break;
			case DW_CFA_GNU_args_size:
				sp_cfiread_uleb(c);
				break;
			default:
				return false;
			}
		if (advance) {
			if (!init)
				return false; /* a CIE's initial instructions don't advance */
			*loc += delta;
			if (*loc > target)
				return !c->bad;
		}
	}
	return !c->bad;
}

static enum sp_cfi_kind sp_reduce(const struct sp_cfa_state *s, struct sp_cfi_rule *out)
{
	int base = s->cfa_reg == SP_DW_RSP ? -1 : sp_reg_index(s->cfa_reg);
	if (s->cfa_expr || (s->cfa_reg != SP_DW_RSP && (base < 0 || base == SP_RA)) ||
	    s->cfa_off < SP_CFI_CFA_MIN || s->cfa_off > SP_CFI_CFA_MAX)
		return SP_CFI_SLOW;
	out->cfa_reg = (uint8_t)(base + 1);
	out->cfa_off = (int32_t)s->cfa_off;
	if (s->reg[SP_RA].how == SP_HOW_UNDEF)
		return out->kind = SP_CFI_END;
	/* the call pushed it right under the CFA; anything else is hand-written */
	if (s->reg[SP_RA].how != SP_HOW_OFFSET || s->reg[SP_RA].off != -8)
		return SP_CFI_SLOW;
	for (int i = 0; i < SP_CFI_REGS; i++) {
		const struct sp_reg_rule *r = &s->reg[i];
		if (r->how == SP_HOW_SAME)
			continue;
		/* in range before negating: junk CFI can say INT64_MIN */
		if (r->how != SP_HOW_OFFSET || r->off >= 0 || r->off < -8 * SP_CFI_SAVE_MAX ||
		    -r->off % 8)
			return SP_CFI_SLOW;
		out->saved[i] = (uint8_t)(-r->off / 8);
	}
	return out->kind = SP_CFI_STEP;
}

/* Word i of the search table. Linkers align it, but nothing says they must:
 * read it as bytes (one mov on x86-64). */
static intptr_t sp_table_word(const struct sp_cfi_table *t, uint64_t i)
{
	int32_t v;
	memcpy(&v, (const void *)(t->table + 4 * i), sizeof(v));
	return v;
}

/* The FDE whose initial location is the last one <= addr, from the sorted table. */
static uintptr_t sp_fde_lookup(const struct sp_cfi_table *t, uintptr_t addr)
{
	uint32_t lo = 0, hi = t->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->hdr + sp_table_word(t, 2 * (uint64_t)mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? t->hdr + sp_table_word(t, 2 * (uint64_t)(lo - 1) + 1) : 0;
}

/* An entry's length field: [*body, *end) is what follows it. */
SP_SIGSAFE static bool sp_entry(const struct sp_cfi_table *t, uintptr_t at, const uint8_t **body,
				const uint8_t **end)
{
	if (at < t->lo || at >= t->hi)
		return false;
	struct sp_cfiread c = sp_cfiread_at((const uint8_t *)at, (const uint8_t *)t->hi, at);
	uint64_t len = sp_cfiread_fixed(&c, 4, false);
	/* 0: the terminator; 0xffffffff: the 64-bit format, whose ids are
	 * 8 bytes wide (no x86-64 toolchain writes it into .eh_frame) */
	if (c.bad || len < 4 || len == 0xffffffffu || len > (uint64_t)(c.end - c.p))
		return false;
	*body = c.p;
	*end = c.p + len;
	return true;
}

enum sp_cfi_kind sp_cfi_find(const struct sp_cfi_table *t, uintptr_t addr, struct sp_cfi_rule *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = SP_CFI_SLOW;
	if (!t->table)
		return SP_CFI_SLOW;
	uintptr_t fde = sp_fde_lookup(t, addr);
	const uint8_t *fb, *fe, *cb, *ce;
	if (!fde || !sp_entry(t, fde, &fb, &fe))
		return SP_CFI_SLOW;
	/* the FDE's CIE pointer counts back from its own position */
	struct sp_cfiread f = sp_cfiread_at(fb, fe, (uintptr_t)fb);
	uint64_t back = sp_cfiread_fixed(&f, 4, false);
	if (f.bad || back == 0 || back > (uintptr_t)fb - t->lo ||
	    !sp_entry(t, (uintptr_t)fb - back, &cb, &ce))
		return SP_CFI_SLOW;

	struct sp_cfiread c = sp_cfiread_at(cb, ce, (uintptr_t)cb);
	uint64_t id = sp_cfiread_fixed(&c, 4, false);
	uint8_t version = (uint8_t)sp_cfiread_fixed(&c, 1, false);
	const char *aug = (const char *)c.p;
	const uint8_t *nul = c.bad ? NULL : memchr(c.p, 0, (size_t)(c.end - c.p));
	if (id != 0 || (version != 1 && version != 3 && version != 4) || !nul)
		return SP_CFI_SLOW;
	c.p = nul + 1;
	if (version == 4 && (sp_cfiread_fixed(&c, 1, false) != 8 || sp_cfiread_fixed(&c, 1, false)))
		return SP_CFI_SLOW;
	struct sp_cfa_prog g = {.code_align = sp_cfiread_uleb(&c),
				.data_align = sp_cfiread_sleb(&c)};
	uint64_t ra = version == 1 ? sp_cfiread_fixed(&c, 1, false) : sp_cfiread_uleb(&c);
	struct sp_cie_aug a;
	if (aug[0] == 'z') {
		uint64_t len = sp_cfiread_uleb(&c);
		if (c.bad || len > (uint64_t)(c.end - c.p) ||
		    sp_cfiread_aug(aug, c.p, (size_t)len, 8, &a) < 0)
			return SP_CFI_SLOW;
		c.p += len;
	} else if (aug[0]) {
		return SP_CFI_SLOW;
	} else {
		sp_cfiread_aug(aug, NULL, 0, 8, &a);
	}
	/* signal trampolines restore every register from the frame: libunwind's job */
	out->signal = a.signal_frame;
	if (c.bad || ra != SP_DW_RA || a.signal_frame)
		return SP_CFI_SLOW;
	g.fde_enc = a.fde_enc;

	uint64_t begin = sp_cfiread_ptr(&f, a.fde_enc, true);
	uint64_t range = sp_cfiread_ptr(&f, a.fde_enc & 0x0f, false);
	if (a.has_data) {
		uint64_t len = sp_cfiread_uleb(&f);
		if (len > (uint64_t)(f.end - f.p))
			return SP_CFI_SLOW;
		f.p += len;
	}
	if (f.bad || addr < begin || addr - begin >= range)
		return SP_CFI_SLOW;

	/* every register starts unchanged ("same value"): GCC's convention for
	 * the callee-saved ones, and a return address no CIE defines is SLOW */
	struct sp_cfa_state s = {.cfa_reg = ~0ull};
	uint64_t loc = begin;
	g.c = c;
	if (!sp_cfa_run(&g, &s, NULL, &loc, addr))
		return SP_CFI_SLOW;
	struct sp_cfa_state init = s;
	g.c = f;
	if (!sp_cfa_run(&g, &s, &init, &loc, addr))
		return SP_CFI_SLOW;
	return sp_reduce(&s, out);
}

/*
 * Packing, from bit 0: kind 2, signal 1, cfa_reg 3, six saved-register
 * slots of 6 bits, then the CFA offset in the 22 bits left (signed).
 */
uint64_t sp_cfi_pack(const struct sp_cfi_rule *r)
{
	uint64_t v =
	    (uint64_t)(r->kind & 3) | (uint64_t)r->signal << 2 | (uint64_t)(r->cfa_reg & 7) << 3;
	for (int i = 0; i < SP_CFI_REGS; i++)
		v |= (uint64_t)(r->saved[i] & 63) << (6 + 6 * i);
	return v | (uint64_t)(uint32_t)r->cfa_off << 42;
}

void sp_cfi_unpack(uint64_t v, struct sp_cfi_rule *r)
{
	r->kind = v & 3;
	r->signal = (v >> 2) & 1;
	r->cfa_reg = (v >> 3) & 7;
	for (int i = 0; i < SP_CFI_REGS; i++)
		r->saved[i] = (v >> (6 + 6 * i)) & 63;
	r->cfa_off = (int32_t)((int64_t)v >> 42);
}
