#include "format/buf.h"

#include <stdlib.h>
#include <string.h>

void sp_buf_init(struct sp_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void sp_buf_release(struct sp_buf *b)
{
	free(b->data);
	sp_buf_init(b);
}

void sp_buf_reset(struct sp_buf *b)
{
	b->len = 0;
	b->oom = false;
}

static bool sp_buf_reserve(struct sp_buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *d = realloc(b->data, cap);
	if (!d) {
		b->oom = true;
		return false;
	}
	b->data = d;
	b->cap = cap;
	return true;
}

void sp_buf_put_bytes(struct sp_buf *b, const void *p, size_t n)
{
	if (!n || !sp_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void sp_buf_put_u8(struct sp_buf *b, uint8_t v)
{
	sp_buf_put_bytes(b, &v, 1);
}

void sp_buf_put_uleb(struct sp_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		if (v)
			byte |= 0x80;
		tmp[n++] = byte;
	} while (v);
	sp_buf_put_bytes(b, tmp, n);
}

void sp_buf_put_sleb(struct sp_buf *b, int64_t v)
{
	/* zigzag keeps small negative numbers short */
	sp_buf_put_uleb(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void sp_buf_put_blob(struct sp_buf *b, const void *p, size_t n)
{
	sp_buf_put_uleb(b, n);
	sp_buf_put_bytes(b, p, n);
}

void sp_buf_put_str(struct sp_buf *b, const char *s)
{
	sp_buf_put_blob(b, s, s ? strlen(s) : 0);
}

void sp_cursor_init(struct sp_cursor *c, const void *p, size_t n)
{
	c->p = p;
	c->end = c->p + n;
	c->bad = false;
}

uint8_t sp_cursor_u8(struct sp_cursor *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

uint64_t sp_cursor_uleb(struct sp_cursor *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (c->p >= c->end)
			break;
		uint8_t byte = *c->p++;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

int64_t sp_cursor_sleb(struct sp_cursor *c)
{
	uint64_t u = sp_cursor_uleb(c);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

size_t sp_cursor_blob(struct sp_cursor *c, const uint8_t **out)
{
	uint64_t n = sp_cursor_uleb(c);
	if (c->bad || n > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		*out = NULL;
		return 0;
	}
	*out = c->p;
	c->p += n;
	return (size_t)n;
}

char *sp_cursor_str(struct sp_cursor *c)
{
	const uint8_t *p;
	size_t n = sp_cursor_blob(c, &p);
	if (c->bad)
		return NULL;
	char *s = malloc(n + 1);
	if (!s) {
		c->bad = true;
		return NULL;
	}
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}
