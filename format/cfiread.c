#include "format/cfiread.h"
#include "format/leb.h"

#include <dwarf.h>

uint64_t sp_cfiread_uleb(struct sp_cfiread *c)
{
	return sp_leb_u(&c->p, c->end, &c->bad);
}

int64_t sp_cfiread_sleb(struct sp_cfiread *c)
{
	return sp_leb_s(&c->p, c->end, &c->bad);
}

uint64_t sp_cfiread_fixed(struct sp_cfiread *c, unsigned n, bool is_signed)
{
	if (n > 8 || c->p > c->end || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	if (is_signed && n && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * n);
	return v;
}

uint64_t sp_cfiread_ptr(struct sp_cfiread *c, uint8_t enc, bool apply)
{
	if (enc == DW_EH_PE_omit)
		return 0;
	uint64_t field = c->base + (uint64_t)(c->p - c->buf);
	uint64_t v;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		v = sp_cfiread_fixed(c, c->ptr_size, false);
		break;
	case DW_EH_PE_uleb128:
		v = sp_cfiread_uleb(c);
		break;
	case DW_EH_PE_udata2:
		v = sp_cfiread_fixed(c, 2, false);
		break;
	case DW_EH_PE_udata4:
		v = sp_cfiread_fixed(c, 4, false);
		break;
	case DW_EH_PE_udata8:
		v = sp_cfiread_fixed(c, 8, false);
		break;
	case DW_EH_PE_sleb128:
		v = (uint64_t)sp_cfiread_sleb(c);
		break;
	case DW_EH_PE_sdata2:
		v = sp_cfiread_fixed(c, 2, true);
		break;
	case DW_EH_PE_sdata4:
		v = sp_cfiread_fixed(c, 4, true);
		break;
	case DW_EH_PE_sdata8:
		v = sp_cfiread_fixed(c, 8, true);
		break;
	default:
		c->bad = true;
		return 0;
	}
	if (!apply)
		return v;
	if (enc & DW_EH_PE_indirect) {
		c->bad = true;
		return 0;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		return v;
	case DW_EH_PE_pcrel:
		return v + field;
	case DW_EH_PE_datarel:
		if (c->datarel)
			return v + c->datarel;
		/* fall through */
	default:
		c->bad = true;
		return 0;
	}
}

int sp_cfiread_aug(const char *aug, const uint8_t *data, size_t len, unsigned ptr_size,
		   struct sp_cie_aug *out)
{
	out->fde_enc = DW_EH_PE_absptr;
	out->signal_frame = false;
	out->has_data = aug && aug[0] == 'z';
	if (!out->has_data)
		return aug && *aug ? -1 : 0;
	struct sp_cfiread c = sp_cfiread_at(data, data + len, 0);
	c.ptr_size = ptr_size;
	for (const char *a = aug + 1; *a; a++) {
		switch (*a) {
		case 'R':
			out->fde_enc = (uint8_t)sp_cfiread_fixed(&c, 1, false);
			break;
		case 'L':
			sp_cfiread_fixed(&c, 1, false);
			break;
		case 'P': {
			uint8_t penc = (uint8_t)sp_cfiread_fixed(&c, 1, false);
			sp_cfiread_ptr(&c, penc & 0x7f, false);
			break;
		}
		case 'S':
			out->signal_frame = true;
			break;
		case 'B':
			break;
		default:
			/* one we don't know: the rest of its data can't be parsed */
			return -1;
		}
		if (c.bad)
			return -1;
	}
	return 0;
}
