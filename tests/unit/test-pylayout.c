/*
 * test-pylayout.c - sampler/capture/pylayout.c without an interpreter: the tables'
 * own consistency, and sp_pylayout_from_debug_offsets() on a _Py_DebugOffsets
 * image built from the 3.13 table (3.13.0's values), then spoiled one word
 * at a time. tests/python/layout-check.sh compares the tables with gdb and
 * the parser with real interpreters; this covers the refusals.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tests/unit/check.h"
#include "sampler/capture/pylayout.h"

/* 3.13.0's _Py_DebugOffsets, 73 words, as pyenv's build fills them in */
static uint64_t image[73];

static void put(unsigned byte_off, uint64_t v)
{
	image[byte_off / 8] = v;
}

static void build_image(void)
{
	const struct sp_pylayout *l = sp_pylayout_builtin(13);
	memset(image, 0, sizeof image);
	memcpy(image, "xdebugpy", 8);
	put(8, 0x030d00f0);  /* 3.13.0 final */
	put(16, 0);	     /* not free-threaded */
	put(24, l->rt_size); /* runtime_state */
	put(40, l->rt_interp_head);
	put(48, 194968); /* interpreter_state.size */
	put(72, l->is_tstate_head);
	put(152, 304); /* thread_state.size */
	put(160, 0);   /* prev */
	put(168, l->ts_next);
	put(176, l->ts_interp);
	put(184, l->ts_frame);
	put(192, l->ts_thread_id);
	put(200, l->ts_native_tid);
	put(224, 80); /* interpreter_frame.size */
	put(232, l->fr_previous);
	put(240, l->fr_code);
	put(248, l->fr_instr);
	put(256, 72); /* localsplus */
	put(264, l->fr_owner);
	put(272, 208); /* code_object.size */
	put(280, l->co_filename);
	put(288, l->co_name);
	put(296, l->co_qualname);
	put(304, l->co_linetable);
	put(312, l->co_firstlineno);
	put(344, l->co_code_adaptive);
	put(352, 16); /* pyobject.size */
	put(360, l->ob_type);
	put(512, 40); /* bytes_object.size */
	put(520, l->bytes_size);
	put(528, l->bytes_data);
	put(536, 64); /* unicode_object.size: PyUnicodeObject */
	put(544, l->str_state);
	put(552, l->str_length);
	put(560, l->str_ascii_data);
}

static int parse(struct sp_pylayout *out)
{
	return sp_pylayout_from_debug_offsets(image, 13, out);
}

int main(void)
{
	/* the tables: every version 10-13, nothing else, minor and kind agree */
	for (unsigned m = 0; m < 40; m++) {
		const struct sp_pylayout *l = sp_pylayout_builtin(m);
		CHECK((l != NULL) == (m >= 10 && m <= 13));
		if (l)
			CHECK(l->minor == m && (unsigned)l->kind == m &&
			      l->rt_size > l->rt_tss_key);
	}

	struct sp_pylayout got, sentinel;
	build_image();
	CHECK(parse(&got) == 0);
	CHECK(memcmp(&got, sp_pylayout_builtin(13), sizeof got) == 0);

	/* refusals leave *out alone */
	memset(&sentinel, 0xa5, sizeof sentinel);
	struct {
		unsigned off;
		uint64_t value;
		int rc;
		const char *what;
	} spoil[] = {
	    {0, 0x7870677562656478ull, -ENOENT, "cookie \"xdebugpx\""},
	    {8, 0x030c01f0, -EPROTO, "version 3.12"},
	    {8, 0x020d00f0, -EPROTO, "major 2"},
	    {16, 1, -EOPNOTSUPP, "free-threaded"},
	    {24, 283320 + 8, -EPROTO, "another runtime size: the TSS key unvouched"},
	    {24, 100, -EPROTO, "runtime smaller than the offsets"},
	    {24, 1ull << 40, -EPROTO, "runtime size beyond reason"},
	    {40, 283320, -EPROTO, "interpreters.head at the runtime's end"},
	    {152, 0, -EPROTO, "thread state of size 0"},
	    {184, 300, -EPROTO, "current_frame crossing the thread state's end"},
	    {184, 1ull << 33, -EPROTO, "current_frame beyond 32 bits"},
	    {264, 80, -EPROTO, "owner at the frame's end"},
	    {272, 1ull << 20, -EPROTO, "code object size beyond reason"},
	    {344, 208, -EPROTO, "co_code_adaptive at the code object's end"},
	    {344, 192, -EPROTO, "co_code_adaptive moved: _co_firsttraceable unvouched"},
	    {536, 40, -EPROTO, "PyUnicodeObject no bigger than PyASCIIObject"},
	    {560, 65, -EPROTO, "ASCII header beyond the str"},
	};
	for (size_t i = 0; i < sizeof spoil / sizeof spoil[0]; i++) {
		build_image();
		put(spoil[i].off, spoil[i].value);
		got = sentinel;
		int rc = parse(&got);
		if (rc != spoil[i].rc)
			fprintf(stderr, "%s: rc %d, want %d\n", spoil[i].what, rc, spoil[i].rc);
		CHECK(rc == spoil[i].rc);
		CHECK(memcmp(&got, &sentinel, sizeof got) == 0);
	}
	/* only 3.13's layout of the struct is known */
	build_image();
	CHECK(sp_pylayout_from_debug_offsets(image, 12, &got) == -EPROTO);
	CHECK(sp_pylayout_from_debug_offsets(image, 14, &got) == -EPROTO);
	CHECK(sp_pylayout_from_debug_offsets(NULL, 13, &got) == -ENOENT);
	/* a build with bigger structs but the same runtime is still read */
	put(152, 400);
	put(184, 320);
	CHECK(parse(&got) == 0 && got.ts_frame == 320);
	return check_exit("test-pylayout");
}
