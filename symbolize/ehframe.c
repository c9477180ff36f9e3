#include "symbolize/ehframe.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/rangemap.h"
#include "format/cfiread.h"

struct sp_ehframe {
	struct sp_rangemap map; /* address -> FDE index */
	struct sp_range *fdes;	/* by index: the FDE's own bounds */
	uint8_t *signal;	/* by index: 1 if the CIE says signal trampoline ('S') */
	size_t n;
};

struct sp_cie_enc {
	Dwarf_Off off;
	uint8_t enc; /* the FDE pointer encoding, from augmentation 'R' */
	bool signal; /* augmentation 'S': the FDEs cover a signal trampoline */
};

/* What a CIE's augmentation says: the FDE pointer encoding ('R') and 'S'. */
static struct sp_cie_enc sp_cie_read(Dwarf_Off off, const Dwarf_CIE *cie, unsigned ptr_size)
{
	struct sp_cie_enc ce = {off, DW_EH_PE_absptr, false};
	if (!cie->augmentation || !cie->augmentation_data)
		return ce;
	/* an unknown augmentation after 'R' still leaves 'R' read */
	struct sp_cie_aug a = {.fde_enc = DW_EH_PE_absptr};
	sp_cfiread_aug(cie->augmentation, cie->augmentation_data, cie->augmentation_data_size,
		       ptr_size, &a);
	ce.enc = a.fde_enc;
	ce.signal = a.signal_frame;
	return ce;
}

static int sp_cie_find(const struct sp_cie_enc *cies, size_t n, Dwarf_Off off)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && cies[lo].off == off ? (int)lo : -1;
}

int sp_ehframe_new(Elf *elf, struct sp_ehframe **out)
{
	int rc = -ENOENT;
	struct sp_cie_enc *cies = NULL;
	size_t n_cies = 0, cies_cap = 0;
	struct sp_range *fdes = NULL;
	uint8_t *sig = NULL;
	size_t n_fdes = 0, fdes_cap = 0;
	struct sp_ehframe *t = NULL;
	*out = NULL;

	size_t shstrndx;
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	if (!ident || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOENT;
	unsigned ptr_size = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(name, ".eh_frame"))
			break;
	}
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !data->d_buf || !data->d_size)
		return -ENOENT;

	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	while (dwarf_next_cfi(ident, data, true, off, &next, &e) == 0) {
		if (dwarf_cfi_cie_p(&e)) {
			if (n_cies == cies_cap) {
				size_t cap = cies_cap ? cies_cap * 2 : 16;
				void *p = realloc(cies, cap * sizeof(*cies));
				if (!p)
					goto nomem;
				cies = p;
				cies_cap = cap;
			}
			cies[n_cies++] = sp_cie_read(off, &e.cie, ptr_size);
		} else {
			int ci = sp_cie_find(cies, n_cies, e.fde.CIE_pointer);
			uint8_t enc = ci >= 0 ? cies[ci].enc : DW_EH_PE_absptr;
			bool signal = ci >= 0 && cies[ci].signal;
			/* pc-relative pointers count from the section's address */
			struct sp_cfiread c = sp_cfiread_at(
			    e.fde.start, e.fde.end,
			    sh.sh_addr + (uint64_t)(e.fde.start - (const uint8_t *)data->d_buf));
			c.ptr_size = ptr_size;
			uint64_t start = sp_cfiread_ptr(&c, enc, true);
			uint64_t len = sp_cfiread_ptr(&c, enc & 0x0f, false);
			/* an FDE at 0 is a discarded function's leftover (--gc-sections) */
			if (!c.bad && len && start) {
				if (n_fdes == fdes_cap) {
					size_t cap = fdes_cap ? fdes_cap * 2 : 256;
					void *p = realloc(fdes, cap * sizeof(*fdes));
					if (!p)
						goto nomem;
					fdes = p;
					p = realloc(sig, cap);
					if (!p)
						goto nomem;
					sig = p;
					fdes_cap = cap;
				}
				sig[n_fdes] = signal;
				fdes[n_fdes] =
				    (struct sp_range){start, start + len, (uint32_t)n_fdes, 0};
				n_fdes++;
			}
		}
		off = next;
	}
	if (!n_fdes)
		goto out;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	/* the map reorders what it is built from: build it from a copy and keep
	 * the FDEs in index order for their true bounds */
	t->fdes = fdes;
	t->signal = sig;
	sig = NULL;
	t->n = n_fdes;
	fdes = malloc(n_fdes * sizeof(*fdes));
	if (!fdes)
		goto nomem;
	memcpy(fdes, t->fdes, n_fdes * sizeof(*fdes));
	if (sp_rangemap_build(&t->map, fdes, n_fdes))
		goto nomem;
	*out = t;
	t = NULL;
	rc = 0;
	goto out;
nomem:
	rc = -ENOMEM;
out:
	sp_ehframe_free(t);
	free(cies);
	free(fdes);
	free(sig);
	return rc;
}

void sp_ehframe_free(struct sp_ehframe *t)
{
	if (!t)
		return;
	sp_rangemap_release(&t->map);
	free(t->fdes);
	free(t->signal);
	free(t);
}

bool sp_ehframe_find(const struct sp_ehframe *t, uint64_t vaddr, uint64_t *start, uint64_t *end,
		     bool *signal)
{
	if (!t)
		return false;
	const struct sp_range *r = sp_rangemap_find(&t->map, vaddr);
	if (!r)
		return false;
	/* overlapping FDEs split into segments: report the FDE's own bounds */
	*start = t->fdes[r->id].lo;
	if (end)
		*end = t->fdes[r->id].hi;
	if (signal)
		*signal = t->signal[r->id];
	return true;
}
