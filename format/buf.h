/*
 * buf.h - growable byte buffer with LEB128 encoders, and a bounded decoder.
 *
 * The encoder side grows with realloc; the decoder never reads past its end
 * and reports every overrun, so a corrupt record can't crash the reader.
 * Not async-signal-safe.
 */
#ifndef SP_FORMAT_BUF_H
#define SP_FORMAT_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool oom; /* an append failed; the contents are incomplete */
};

void sp_buf_init(struct sp_buf *b);
void sp_buf_release(struct sp_buf *b);
void sp_buf_reset(struct sp_buf *b);
void sp_buf_put_bytes(struct sp_buf *b, const void *p, size_t n);
void sp_buf_put_u8(struct sp_buf *b, uint8_t v);
void sp_buf_put_uleb(struct sp_buf *b, uint64_t v);
void sp_buf_put_sleb(struct sp_buf *b, int64_t v);
/* Length-prefixed; NULL is written as the empty string. */
void sp_buf_put_str(struct sp_buf *b, const char *s);
void sp_buf_put_blob(struct sp_buf *b, const void *p, size_t n);

struct sp_cursor {
	const uint8_t *p;
	const uint8_t *end;
	bool bad; /* a read ran past the end or met an overlong number */
};

void sp_cursor_init(struct sp_cursor *c, const void *p, size_t n);
uint8_t sp_cursor_u8(struct sp_cursor *c);
uint64_t sp_cursor_uleb(struct sp_cursor *c);
int64_t sp_cursor_sleb(struct sp_cursor *c);
/* Returns a malloc'd NUL-terminated copy, or NULL (and c->bad) on error. */
char *sp_cursor_str(struct sp_cursor *c);
/* Points *out into the cursor's memory; returns the length. */
size_t sp_cursor_blob(struct sp_cursor *c, const uint8_t **out);

#endif
