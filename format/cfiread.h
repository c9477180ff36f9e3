/*
 * cfiread.h - bounded readers for DWARF call frame information as laid out
 * in .eh_frame and .eh_frame_hdr: fixed-size and LEB128 numbers,
 * DW_EH_PE_* encoded pointers, and CIE augmentations.
 *
 * Two users read the same bytes in different places: the symbolizer reads
 * .eh_frame from ELF files after the run, and the sampler reads it from the
 * target's memory inside its signal handler. So everything here is pure: it
 * allocates nothing, takes no lock, never reads outside [p, end), and is
 * async-signal-safe. A read that would pass end, or an encoding that is not
 * supported, sets bad and returns 0; callers check bad once at the end.
 * Byte order is the host's (little-endian: x86-64 and aarch64).
 */
#ifndef SP_FORMAT_CFIREAD_H
#define SP_FORMAT_CFIREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sampler marks what its signal handler may call (sampler/base/sigsafe.h):
 * everything here is. */
#ifndef SP_SIGSAFE
#define SP_SIGSAFE
#endif

struct sp_cfiread {
	const uint8_t *p;   /* next byte */
	const uint8_t *end; /* first byte that may not be read */
	const uint8_t *buf; /* a byte whose address is base ... */
	uint64_t base;	    /* ... for pc-relative pointers */
	uint64_t datarel;   /* what data-relative pointers count from (.eh_frame_hdr), 0: none */
	unsigned ptr_size;  /* 8, or 4 for 32-bit ELF */
	bool bad;
};

/* A reader over [p, end) of bytes that live at address base (in memory: base = p). */
static inline struct sp_cfiread sp_cfiread_at(const uint8_t *p, const uint8_t *end, uint64_t base)
{
	struct sp_cfiread c = {.p = p, .end = end, .buf = p, .base = base, .ptr_size = 8};
	return c;
}

SP_SIGSAFE uint64_t sp_cfiread_uleb(struct sp_cfiread *c);
SP_SIGSAFE int64_t sp_cfiread_sleb(struct sp_cfiread *c);

/* An n-byte number (n <= 8), sign-extended if is_signed. */
SP_SIGSAFE uint64_t sp_cfiread_fixed(struct sp_cfiread *c, unsigned n, bool is_signed);

/*
 * A pointer in encoding enc (DW_EH_PE_*). With apply, pc-relative and
 * data-relative values are turned into addresses; without it the raw value
 * is returned (FDE address ranges). Indirect, text- and function-relative
 * encodings are not supported (GCC and LLVM use none of them here) and set
 * bad; DW_EH_PE_omit reads nothing and returns 0.
 */
SP_SIGSAFE uint64_t sp_cfiread_ptr(struct sp_cfiread *c, uint8_t enc, bool apply);

/* What a CIE's augmentation says about the FDEs that use it. */
struct sp_cie_aug {
	uint8_t fde_enc;   /* encoding of the FDE's address range ('R'), absptr if absent */
	bool signal_frame; /* 'S': the frame is a signal trampoline's */
	bool has_data;	   /* 'z': FDEs carry an augmentation data length */
};

/*
 * Parses augmentation string aug and its data [data, data + len) (the bytes
 * after the 'z' length). Returns 0, or -1 for an augmentation whose data
 * length can't be known (then *out holds what was read before it).
 */
SP_SIGSAFE int sp_cfiread_aug(const char *aug, const uint8_t *data, size_t len, unsigned ptr_size,
			      struct sp_cie_aug *out);

#endif
