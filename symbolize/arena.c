#include "symbolize/arena.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large enough that malloc overhead vanishes, small enough for tiny inputs. */
#define SP_ARENA_BLOCK (64u * 1024u)
#define SP_ARENA_ALIGN 16u

struct sp_arena_block {
	struct sp_arena_block *next;
	/* keeps the payload aligned to SP_ARENA_ALIGN */
	_Alignas(SP_ARENA_ALIGN) char data[];
};

void sp_arena_init(struct sp_arena *a)
{
	a->head = NULL;
	a->cur = NULL;
	a->end = NULL;
}

void sp_arena_release(struct sp_arena *a)
{
	struct sp_arena_block *b = a->head;
	while (b) {
		struct sp_arena_block *next = b->next;
		free(b);
		b = next;
	}
	sp_arena_init(a);
}

void *sp_arena_alloc(struct sp_arena *a, size_t size)
{
	size = (size + SP_ARENA_ALIGN - 1) & ~(size_t)(SP_ARENA_ALIGN - 1);
	if (size == 0)
		size = SP_ARENA_ALIGN;
	if (a->cur && (size_t)(a->end - a->cur) >= size) {
		void *p = a->cur;
		a->cur += size;
		return p;
	}
	if (size > SIZE_MAX / 2)
		return NULL;
	/* an oversized request gets a block of its own, so the current block's
	 * free space is not wasted */
	size_t cap = size > SP_ARENA_BLOCK / 4 ? size : SP_ARENA_BLOCK;
	struct sp_arena_block *b = malloc(sizeof(*b) + cap);
	if (!b)
		return NULL;
	if (cap == size && a->head) {
		b->next = a->head->next;
		a->head->next = b;
		return b->data;
	}
	b->next = a->head;
	a->head = b;
	a->cur = b->data + size;
	a->end = b->data + cap;
	return b->data;
}

char *sp_arena_strndup(struct sp_arena *a, const char *s, size_t n)
{
	char *p = sp_arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *sp_arena_strdup(struct sp_arena *a, const char *s)
{
	return sp_arena_strndup(a, s, strlen(s));
}

char *sp_arena_printf(struct sp_arena *a, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	if ((size_t)n < sizeof(small))
		return sp_arena_strndup(a, small, (size_t)n);
	char *p = sp_arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

int sp_array_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
	*arr = p;
	*cap = n;
	return 0;
}
