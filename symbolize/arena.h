/*
 * arena.h - a bump allocator for the symbolizer's results.
 *
 * Frames and strings handed out by the symbolizer must stay valid until the
 * symbolizer is freed, and there are many small ones; an arena gives them
 * stable addresses, costs one pointer bump each and frees them all at once.
 * Nothing is freed individually. Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_ARENA_H
#define SP_SYMBOLIZE_ARENA_H

#include <stddef.h>

struct sp_arena_block;

/* Embedded in its owner; zero-filled is a valid empty arena. */
struct sp_arena {
	struct sp_arena_block *head;
	char *cur; /* free space in head: [cur, end) */
	char *end;
};

void sp_arena_init(struct sp_arena *a);

/* Frees every allocation made from a. */
void sp_arena_release(struct sp_arena *a);

/* Returns size bytes aligned for any scalar, or NULL on allocation failure. */
void *sp_arena_alloc(struct sp_arena *a, size_t size);

/*
 * The other allocation pattern here and in export/: a malloc'd array *arr
 * of *cap elements of elem bytes, grown (doubling) to hold at least need.
 * New slots start zeroed. 0 or -ENOMEM (then *arr and *cap are unchanged).
 */
int sp_array_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* Returns a copy of the first n bytes of s, NUL-terminated, or NULL. */
char *sp_arena_strndup(struct sp_arena *a, const char *s, size_t n);

/* Returns a copy of s, or NULL. */
char *sp_arena_strdup(struct sp_arena *a, const char *s);

/* Returns a formatted string, or NULL. */
char *sp_arena_printf(struct sp_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
