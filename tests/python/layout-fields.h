/*
 * layout-fields.h - every field of struct sp_pylayout by name, and one
 * text form of a table ("3.13 ts_frame 72" lines), shared by layout-dump
 * (the compiled tables) and layout-probe (what a running interpreter's
 * _Py_DebugOffsets gives), so that layout-check.sh can compare them with
 * gdb's answers and with each other line by line.
 */
#ifndef SP_TESTS_LAYOUT_FIELDS_H
#define SP_TESTS_LAYOUT_FIELDS_H

#include <stddef.h>
#include <stdio.h>

#include "sampler/capture/pylayout.h"

#define SP_LAYOUT_FIELDS(X)                                                                        \
	X(rt_size)                                                                                 \
	X(rt_tss_key)                                                                              \
	X(rt_interp_head)                                                                          \
	X(is_tstate_head)                                                                          \
	X(ts_next)                                                                                 \
	X(ts_interp)                                                                               \
	X(ts_frame)                                                                                \
	X(ts_thread_id)                                                                            \
	X(ts_native_tid)                                                                           \
	X(ts_root_cframe)                                                                          \
	X(cf_current_frame)                                                                        \
	X(cf_previous)                                                                             \
	X(fr_code)                                                                                 \
	X(fr_previous)                                                                             \
	X(fr_instr)                                                                                \
	X(fr_owner)                                                                                \
	X(fr_is_entry)                                                                             \
	X(fr_localsplus)                                                                           \
	X(co_firstlineno)                                                                          \
	X(co_filename)                                                                             \
	X(co_name)                                                                                 \
	X(co_qualname)                                                                             \
	X(co_linetable)                                                                            \
	X(co_code)                                                                                 \
	X(co_code_adaptive)                                                                        \
	X(co_nunits)                                                                               \
	X(co_firsttraceable)                                                                       \
	X(ob_type)                                                                                 \
	X(str_length)                                                                              \
	X(str_state)                                                                               \
	X(str_ascii_data)                                                                          \
	X(str_compact_data)                                                                        \
	X(bytes_size)                                                                              \
	X(bytes_data)

/* Writes l as text into buf (NUL-terminated); the length it needed. */
static inline size_t sp_layout_format(const struct sp_pylayout *l, char *buf, size_t len)
{
	size_t n = 0;
#define SP_LAYOUT_ONE(f)                                                                           \
	n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "3.%u %s %u\n",    \
			      l->minor, #f, (unsigned)l->f);
	n += (size_t)snprintf(buf, len, "3.%u kind %u\n", l->minor, (unsigned)l->kind);
	SP_LAYOUT_FIELDS(SP_LAYOUT_ONE)
#undef SP_LAYOUT_ONE
	return n;
}

#endif
