/*
 * leb.h - bounded LEB128 decoding for the DWARF readers (.eh_frame, line
 * tables). Reads from *p up to end, advances *p, and sets *bad when the
 * number runs past end; bits beyond 64 are dropped, as libdw does.
 * Not to be confused with format/buf.h, whose signed numbers are zigzag.
 */
#ifndef SP_FORMAT_LEB_H
#define SP_FORMAT_LEB_H

#include <stdbool.h>
#include <stdint.h>

static inline uint64_t sp_leb_u(const uint8_t **p, const uint8_t *end, bool *bad)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	*bad = true;
	return 0;
}

static inline int64_t sp_leb_s(const uint8_t **p, const uint8_t *end, bool *bad)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			/* sign-extend in unsigned arithmetic: no signed shift */
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	*bad = true;
	return 0;
}

#endif
