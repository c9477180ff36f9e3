/*
 * cfi.h - x86-64 unwind rules read from a loaded module's .eh_frame, in the
 * signal handler.
 *
 * libunwind 1.6.2 re-parses the CIE and FDE of every frame on every sample
 * (its caches take a mutex or live in dynamic TLS, see unwind.h), and that
 * was most of the handler's time. Almost every frame of compiled code needs
 * only three facts to step: where the CFA is (rsp or rbp plus an offset),
 * where the return address is (CFA - 8), and where the caller's rbp is
 * (unchanged, or saved at CFA + n). This module finds the FDE for a PC
 * through .eh_frame_hdr's binary search table, runs its CFA program up to
 * the PC, and reduces the result to those facts: a struct sp_cfi_rule that
 * packs into 64 bits for the rule cache (rulecache.h). Anything else (CFA
 * expressions as in PLT stubs or stack-realigning functions, signal
 * trampolines, rbp kept in another register) is SP_CFI_SLOW, and that frame
 * is left to libunwind.
 *
 * Every read stays inside the PT_LOAD segment that holds .eh_frame or
 * .eh_frame_hdr, bounds fixed when the module snapshot was built; a module
 * cannot be unmapped while a handler uses it (modules.h). Everything here but
 * sp_cfi_table_init() is async-signal-safe.
 */
#ifndef SP_SAMPLER_CFI_H
#define SP_SAMPLER_CFI_H

#include "sampler/base/sigsafe.h"
#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* A module's .eh_frame_hdr search table, checked once (sp_cfi_table_init). */
struct sp_cfi_table {
	uintptr_t hdr;		  /* .eh_frame_hdr: data-relative pointers count from here */
	uintptr_t table;	  /* its (initial location, FDE) pairs, sorted; 0: unusable */
	uint32_t count;		  /* pairs */
	uintptr_t lo, hi;	  /* the PT_LOAD segment the FDEs and CIEs must lie in */
	uintptr_t hdr_lo, hdr_hi; /* the one the table lies in */
};

enum sp_cfi_kind {
	SP_CFI_NONE = 0, /* no rule (an empty rule-cache slot) */
	SP_CFI_STEP = 1, /* step with the rule */
	SP_CFI_END = 2,	 /* the return address is undefined: the thread's outermost frame */
	SP_CFI_SLOW = 3, /* the FDE says more than a rule can hold: ask libunwind */
};

/* The callee-saved registers a rule tracks: rbx, rbp, r12, r13, r14, r15. */
#define SP_CFI_REGS 6
/* A saved register lies at most this many words under the CFA. */
#define SP_CFI_SAVE_MAX 63
/* The CFA offsets a rule holds (22 bits, signed). */
#define SP_CFI_CFA_MIN (-(1 << 21))
#define SP_CFI_CFA_MAX ((1 << 21) - 1)

struct sp_cfi_rule {
	uint8_t kind;	 /* enum sp_cfi_kind */
	bool signal;	 /* SP_CFI_SLOW for a signal trampoline: its caller's ip is exact */
	uint8_t cfa_reg; /* CFA = rsp + cfa_off if 0, else tracked register cfa_reg - 1 + cfa_off */
	int32_t cfa_off;
	/* the caller's value of tracked register i is at CFA - 8 * saved[i],
	 * or unchanged if saved[i] is 0; the return address is at CFA - 8 */
	uint8_t saved[SP_CFI_REGS];
};

/*
 * Reads the PT_GNU_EH_FRAME header of a loaded module (its dl_phdr_info) and
 * fills *t; t->table stays 0 when the module has none or uses a table
 * encoding this reader does not take (then all its frames are SP_CFI_SLOW).
 * Reads the module's memory: call in normal context, not in the handler.
 */
void sp_cfi_table_init(const struct dl_phdr_info *info, struct sp_cfi_table *t);

/*
 * The rule for code address addr (the interrupted PC itself, or a return
 * address minus one) in the module of table t. Always fills *out and
 * returns out->kind: SP_CFI_SLOW when no FDE covers addr or the FDE can't be
 * reduced to a rule. Signal-safe.
 */
SP_SIGSAFE enum sp_cfi_kind sp_cfi_find(const struct sp_cfi_table *t, uintptr_t addr,
					struct sp_cfi_rule *out);

/* A rule in 64 bits and back (never 0: kind is in the low bits). Signal-safe. */
SP_SIGSAFE uint64_t sp_cfi_pack(const struct sp_cfi_rule *r);
SP_SIGSAFE void sp_cfi_unpack(uint64_t v, struct sp_cfi_rule *r);

#endif
