/*
 * fuzz-cfi.c - libFuzzer target for the sampler's unwind-rule reader
 * (sampler/capture/cfi.c), the code that reads a loaded module's .eh_frame_hdr and
 * .eh_frame inside the signal handler of a program we did not write.
 *
 * The input is the image of one read-only segment: 2 bytes (little-endian)
 * giving where .eh_frame_hdr starts in it, then the segment's bytes. The
 * harness copies the bytes into a buffer of exactly their size, describes
 * it as a module with one PT_LOAD and one PT_GNU_EH_FRAME (dl_phdr_info, as
 * dl_iterate_phdr gives it), and asks sp_cfi_table_init for the table and
 * sp_cfi_find for rules at addresses near each function start the table
 * names, and at addresses taken from the input. ASan fails any read outside
 * the buffer: cfi.h promises every read stays inside the segment.
 *
 * Seeds are real .eh_frame_hdr + .eh_frame pairs (gen-cfi-seeds.sh): the
 * offsets in them are relative to the header and to each FDE, so the copy
 * reads as it did in the module.
 */
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/capture/cfi.h"

static void check_rule(const struct sp_cfi_rule *r, enum sp_cfi_kind kind)
{
	/* a reader that returns must return something its caller can use */
	if (kind != r->kind || (kind != SP_CFI_STEP && kind != SP_CFI_END && kind != SP_CFI_SLOW))
		abort();
	if (kind == SP_CFI_STEP) {
		if (r->cfa_reg > SP_CFI_REGS || r->cfa_off < SP_CFI_CFA_MIN ||
		    r->cfa_off > SP_CFI_CFA_MAX)
			abort();
		for (int i = 0; i < SP_CFI_REGS; i++)
			if (r->saved[i] > SP_CFI_SAVE_MAX)
				abort();
		/* and what the rule cache stores must come back unchanged */
		struct sp_cfi_rule u;
		sp_cfi_unpack(sp_cfi_pack(r), &u);
		if (u.kind != r->kind || u.cfa_reg != r->cfa_reg || u.cfa_off != r->cfa_off ||
		    memcmp(u.saved, r->saved, sizeof(u.saved)))
			abort();
	}
}

static void lookup(const struct sp_cfi_table *t, uintptr_t addr)
{
	struct sp_cfi_rule r;
	enum sp_cfi_kind kind = sp_cfi_find(t, addr, &r);
	check_rule(&r, kind);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 + 8)
		return 0;
	size_t hdr_off = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2;
	size -= 2;
	if (hdr_off >= size)
		hdr_off %= size;
	uint8_t *seg = malloc(size);
	if (!seg)
		return 0;
	memcpy(seg, data, size);

	ElfW(Phdr) ph[2];
	memset(ph, 0, sizeof(ph));
	ph[0].p_type = PT_LOAD;
	ph[0].p_flags = PF_R;
	ph[0].p_vaddr = (uintptr_t)seg;
	ph[0].p_filesz = ph[0].p_memsz = size;
	ph[1].p_type = PT_GNU_EH_FRAME;
	ph[1].p_flags = PF_R;
	ph[1].p_vaddr = (uintptr_t)seg + hdr_off;
	ph[1].p_filesz = ph[1].p_memsz = size - hdr_off;
	struct dl_phdr_info info = {
	    .dlpi_addr = 0,
	    .dlpi_name = "fuzz",
	    .dlpi_phdr = ph,
	    .dlpi_phnum = 2,
	};
	struct sp_cfi_table t;
	sp_cfi_table_init(&info, &t);
	if (t.table) {
		/* near the first and last functions the table names, and some
		 * between: their starts, inside them, and just before */
		static const intptr_t delta[] = {0, 1, 4, 17, 64, -1};
		uint32_t picks = t.count < 24 ? t.count : 24;
		for (uint32_t k = 0; k < picks; k++) {
			uint32_t i = picks == t.count
					 ? k
					 : (uint32_t)((uint64_t)k * (t.count - 1) / (picks - 1));
			int32_t loc;
			memcpy(&loc, (const void *)(t.table + 8 * (uintptr_t)i), sizeof(loc));
			for (size_t d = 0; d < sizeof(delta) / sizeof(delta[0]); d++)
				lookup(&t, t.hdr + (uintptr_t)(intptr_t)loc + (uintptr_t)delta[d]);
		}
		/* and addresses the input picks, relative to the header */
		for (size_t i = 0; i + 4 <= size && i < 64; i += 4) {
			int32_t rel;
			memcpy(&rel, data + size - 4 - i, sizeof(rel));
			lookup(&t, t.hdr + (uintptr_t)(intptr_t)rel);
		}
	}
	free(seg);
	return 0;
}
