#include "sampler/capture/pylayout.h"

#include <errno.h>
#include <string.h>

/*
 * Every number below was read from the DWARF of pyenv's 3.10.13, 3.11.7,
 * 3.12.1 and 3.13.0 libpython3.X.so.1.0 with gdb (ptype/o and
 * &((T *)0)->field), and for 3.11 also from Debian's 3.11.2 through
 * python3.11-dbg, which agrees field for field.
 * tests/python/layout-check.sh repeats that comparison for every
 * interpreter on the machine.
 */
static const struct sp_pylayout sp_py310 = {
    .minor = 10,
    .kind = SP_PYFRAMES_310,
    .rt_size = 672,
    .rt_tss_key = 584, /* gilstate.autoTSSkey */
    .rt_interp_head = 32,
    .is_tstate_head = 8,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_frame = 24,
    .ts_thread_id = 176,
    .fr_code = 32,
    .fr_previous = 24,
    .fr_instr = 96,
    .fr_localsplus = 352,
    .co_firstlineno = 40,
    .co_filename = 104,
    .co_name = 112,
    .co_linetable = 120,
    .co_code = 48,
    .ob_type = 8,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 48,
    .str_compact_data = 72,
    .bytes_size = 16,
    .bytes_data = 32,
};

static const struct sp_pylayout sp_py311 = {
    .minor = 11,
    .kind = SP_PYFRAMES_311,
    .rt_size = 166688,
    .rt_tss_key = 592, /* gilstate.autoTSSkey */
    .rt_interp_head = 40,
    .is_tstate_head = 16,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_frame = 56,
    .ts_thread_id = 152,
    .ts_native_tid = 160,
    .ts_root_cframe = 336,
    .cf_current_frame = 8, /* after a uint8_t use_tracing */
    .cf_previous = 16,
    .fr_code = 32,
    .fr_previous = 48,
    .fr_instr = 56,
    .fr_owner = 69,
    .fr_is_entry = 68,
    .fr_localsplus = 72,
    .co_firstlineno = 72,
    .co_filename = 112,
    .co_name = 120,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_code_adaptive = 184,
    .co_nunits = 16,
    .co_firsttraceable = 168,
    .ob_type = 8,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 48,
    .str_compact_data = 72,
    .bytes_size = 16,
    .bytes_data = 32,
};

static const struct sp_pylayout sp_py312 = {
    .minor = 12,
    .kind = SP_PYFRAMES_312,
    .rt_size = 459944,
    .rt_tss_key = 1544, /* autoTSSkey, out of gilstate since 3.12 */
    .rt_interp_head = 40,
    .is_tstate_head = 72,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_frame = 56,
    .ts_thread_id = 136,
    .ts_native_tid = 144,
    .ts_root_cframe = 272,
    .cf_current_frame = 0,
    .cf_previous = 8,
    .fr_code = 0,
    .fr_previous = 8,
    .fr_instr = 56,
    .fr_owner = 70,
    .fr_localsplus = 72,
    .co_firstlineno = 68,
    .co_filename = 112,
    .co_name = 120,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_code_adaptive = 192,
    .co_nunits = 16,
    .co_firsttraceable = 176,
    .ob_type = 8,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 40, /* wstr is gone */
    .str_compact_data = 56,
    .bytes_size = 16,
    .bytes_data = 32,
};

static const struct sp_pylayout sp_py313 = {
    .minor = 13,
    .kind = SP_PYFRAMES_313,
    .rt_size = 283320,
    .rt_tss_key = 2160,
    .rt_interp_head = 632,
    .is_tstate_head = 7344,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_frame = 72,
    .ts_thread_id = 152,
    .ts_native_tid = 160,
    .fr_code = 0,
    .fr_previous = 8,
    .fr_instr = 56,
    .fr_owner = 70,
    .fr_localsplus = 72,
    .co_firstlineno = 68,
    .co_filename = 112,
    .co_name = 120,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_code_adaptive = 200,
    .co_nunits = 16,
    .co_firsttraceable = 184,
    .ob_type = 8,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 40,
    .str_compact_data = 56,
    .bytes_size = 16,
    .bytes_data = 32,
};

const struct sp_pylayout *sp_pylayout_builtin(unsigned minor)
{
	switch (minor) {
	case 10:
		return &sp_py310;
	case 11:
		return &sp_py311;
	case 12:
		return &sp_py312;
	case 13:
		return &sp_py313;
	default:
		return NULL;
	}
}

/*
 * 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), as byte
 * offsets of its uint64_t words from _PyRuntime. Each section starts with
 * the size of the struct it describes.
 */
enum {
	SP_DO_COOKIE = 0,
	SP_DO_VERSION = 8,
	SP_DO_FREE_THREADED = 16,
	SP_DO_RT_SIZE = 24,
	SP_DO_RT_INTERP_HEAD = 40,
	SP_DO_IS_SIZE = 48,
	SP_DO_IS_THREADS_HEAD = 72,
	SP_DO_TS_SIZE = 152,
	SP_DO_TS_NEXT = 168,
	SP_DO_TS_INTERP = 176,
	SP_DO_TS_CURRENT_FRAME = 184,
	SP_DO_TS_THREAD_ID = 192,
	SP_DO_TS_NATIVE_TID = 200,
	SP_DO_FR_SIZE = 224,
	SP_DO_FR_PREVIOUS = 232,
	SP_DO_FR_EXECUTABLE = 240,
	SP_DO_FR_INSTR_PTR = 248,
	SP_DO_FR_LOCALSPLUS = 256,
	SP_DO_FR_OWNER = 264,
	SP_DO_CO_SIZE = 272,
	SP_DO_CO_FILENAME = 280,
	SP_DO_CO_NAME = 288,
	SP_DO_CO_QUALNAME = 296,
	SP_DO_CO_LINETABLE = 304,
	SP_DO_CO_FIRSTLINENO = 312,
	SP_DO_CO_CODE_ADAPTIVE = 344,
	SP_DO_OB_SIZE = 352,
	SP_DO_OB_TYPE = 360,
	SP_DO_BYTES_SIZE = 512,
	SP_DO_BYTES_OB_SIZE = 520,
	SP_DO_BYTES_OB_SVAL = 528,
	SP_DO_STR_SIZE = 536,
	SP_DO_STR_STATE = 544,
	SP_DO_STR_LENGTH = 552,
	SP_DO_STR_ASCII_SIZE = 560,
	SP_DO_END = 584, /* sizeof(_Py_DebugOffsets) in 3.13 */
};

/* PY_VERSION_HEX: 0xMMmmppRS (major, minor, micro, release level and serial) */
#define SP_PYVER_MAJOR(v) (((v) >> 24) & 0xff)
#define SP_PYVER_MINOR(v) (((v) >> 16) & 0xff)

static uint64_t sp_do_word(const unsigned char *rt, unsigned off)
{
	uint64_t v;
	memcpy(&v, rt + off, sizeof v);
	return v;
}

/*
 * The largest struct sizes believed: generous multiples of 3.13's own
 * (runtime 283320, interpreter 194968, thread state 304, frame 80, code
 * 208 bytes), so that a garbage word is refused while a build with extra
 * fields is still read.
 */
#define SP_DO_MAX_RT	 (1u << 24)
#define SP_DO_MAX_IS	 (1u << 24)
#define SP_DO_MAX_TS	 (1u << 16)
#define SP_DO_MAX_FR	 (1u << 12)
#define SP_DO_MAX_CO	 (1u << 12)
#define SP_DO_MAX_OBJECT (1u << 8)

/*
 * The offset at word off, accepted when a field of width bytes at that
 * offset lies inside a struct of the given size; *ok turns false otherwise.
 */
static uint32_t sp_do_field(const unsigned char *rt, unsigned off, uint64_t size, unsigned width,
			    bool *ok)
{
	uint64_t v = sp_do_word(rt, off);
	if (v > size || size - v < width) {
		*ok = false;
		return 0;
	}
	return (uint32_t)v;
}

/* The struct size at word off, accepted between min and max. */
static uint64_t sp_do_size(const unsigned char *rt, unsigned off, uint64_t min, uint64_t max,
			   bool *ok)
{
	uint64_t v = sp_do_word(rt, off);
	if (v < min || v > max) {
		*ok = false;
		return 0;
	}
	return v;
}

int sp_pylayout_from_debug_offsets(const void *rt_, unsigned minor, struct sp_pylayout *out)
{
	const unsigned char *rt = rt_;
	const struct sp_pylayout *base = sp_pylayout_builtin(minor);

	if (!rt || memcmp(rt + SP_DO_COOKIE, "xdebugpy", 8) != 0)
		return -ENOENT;
	uint64_t version = sp_do_word(rt, SP_DO_VERSION);
	if (minor != 13 || !base || SP_PYVER_MAJOR(version) != 3 ||
	    SP_PYVER_MINOR(version) != minor)
		return -EPROTO;
	if (sp_do_word(rt, SP_DO_FREE_THREADED) != 0)
		return -EOPNOTSUPP;

	bool ok = true;
	const unsigned ptr = sizeof(void *);
	/* the runtime holds the offsets themselves, so it is at least that big */
	uint64_t rt_size = sp_do_size(rt, SP_DO_RT_SIZE, SP_DO_END, SP_DO_MAX_RT, &ok);
	uint64_t is_size = sp_do_size(rt, SP_DO_IS_SIZE, ptr, SP_DO_MAX_IS, &ok);
	uint64_t ts_size = sp_do_size(rt, SP_DO_TS_SIZE, ptr, SP_DO_MAX_TS, &ok);
	uint64_t fr_size = sp_do_size(rt, SP_DO_FR_SIZE, ptr, SP_DO_MAX_FR, &ok);
	uint64_t co_size = sp_do_size(rt, SP_DO_CO_SIZE, ptr, SP_DO_MAX_CO, &ok);
	uint64_t ob_size = sp_do_size(rt, SP_DO_OB_SIZE, ptr, SP_DO_MAX_OBJECT, &ok);
	uint64_t by_size = sp_do_size(rt, SP_DO_BYTES_SIZE, ptr, SP_DO_MAX_OBJECT, &ok);
	uint64_t str_size = sp_do_size(rt, SP_DO_STR_SIZE, ptr, SP_DO_MAX_OBJECT, &ok);
	if (!ok)
		return -EPROTO;

	struct sp_pylayout l = *base;
	l.rt_interp_head = sp_do_field(rt, SP_DO_RT_INTERP_HEAD, rt_size, ptr, &ok);
	l.is_tstate_head = sp_do_field(rt, SP_DO_IS_THREADS_HEAD, is_size, ptr, &ok);
	l.ts_next = sp_do_field(rt, SP_DO_TS_NEXT, ts_size, ptr, &ok);
	l.ts_interp = sp_do_field(rt, SP_DO_TS_INTERP, ts_size, ptr, &ok);
	l.ts_frame = sp_do_field(rt, SP_DO_TS_CURRENT_FRAME, ts_size, ptr, &ok);
	l.ts_thread_id = sp_do_field(rt, SP_DO_TS_THREAD_ID, ts_size, sizeof(unsigned long), &ok);
	l.ts_native_tid = sp_do_field(rt, SP_DO_TS_NATIVE_TID, ts_size, sizeof(unsigned long), &ok);
	l.fr_code = sp_do_field(rt, SP_DO_FR_EXECUTABLE, fr_size, ptr, &ok);
	l.fr_previous = sp_do_field(rt, SP_DO_FR_PREVIOUS, fr_size, ptr, &ok);
	l.fr_instr = sp_do_field(rt, SP_DO_FR_INSTR_PTR, fr_size, ptr, &ok);
	l.fr_owner = sp_do_field(rt, SP_DO_FR_OWNER, fr_size, 1, &ok);
	/* a flexible array too: the struct's size counts one slot of it */
	l.fr_localsplus = sp_do_field(rt, SP_DO_FR_LOCALSPLUS, fr_size, ptr, &ok);
	l.co_firstlineno = sp_do_field(rt, SP_DO_CO_FIRSTLINENO, co_size, sizeof(int), &ok);
	l.co_filename = sp_do_field(rt, SP_DO_CO_FILENAME, co_size, ptr, &ok);
	l.co_name = sp_do_field(rt, SP_DO_CO_NAME, co_size, ptr, &ok);
	l.co_qualname = sp_do_field(rt, SP_DO_CO_QUALNAME, co_size, ptr, &ok);
	l.co_linetable = sp_do_field(rt, SP_DO_CO_LINETABLE, co_size, ptr, &ok);
	/* co_code_adaptive is a flexible array: the struct's size counts one unit of it */
	l.co_code_adaptive = sp_do_field(rt, SP_DO_CO_CODE_ADAPTIVE, co_size, 2, &ok);
	l.ob_type = sp_do_field(rt, SP_DO_OB_TYPE, ob_size, ptr, &ok);
	l.bytes_size = sp_do_field(rt, SP_DO_BYTES_OB_SIZE, by_size, sizeof(long), &ok);
	l.bytes_data = sp_do_field(rt, SP_DO_BYTES_OB_SVAL, by_size, 1, &ok);
	/* a code object is a PyVarObject, sized in code units like bytes in bytes */
	l.co_nunits = l.bytes_size;
	l.str_state = sp_do_field(rt, SP_DO_STR_STATE, str_size, 4, &ok);
	l.str_length = sp_do_field(rt, SP_DO_STR_LENGTH, str_size, sizeof(long), &ok);
	l.str_ascii_data = sp_do_field(rt, SP_DO_STR_ASCII_SIZE, str_size, 0, &ok);
	/* PyUnicodeObject is the compact header plus one data pointer */
	l.str_compact_data = (uint32_t)(str_size - ptr);
	if (!ok || l.str_compact_data <= l.str_ascii_data)
		return -EPROTO;

	/* what the offsets do not carry: believed only where they vouch for it */
	if (rt_size != base->rt_size || l.co_code_adaptive != base->co_code_adaptive)
		return -EPROTO;

	*out = l;
	return 0;
}
