#include "format/manifest.h"

static bool sp_is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

int sp_manifest_encode(const char *path, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		char e[4];
		size_t k = 0;
		if (*p == '\\') {
			e[k++] = '\\';
			e[k++] = '\\';
		} else if (*p == '\n') {
			e[k++] = '\\';
			e[k++] = 'n';
		} else if (sp_is_control(*p)) {
			e[k++] = '\\';
			e[k++] = 'x';
			e[k++] = hex[*p >> 4];
			e[k++] = hex[*p & 15];
		} else {
			e[k++] = (char)*p;
		}
		if (n + k >= cap) {
			if (cap)
				out[0] = '\0';
			return -1;
		}
		for (size_t i = 0; i < k; i++)
			out[n++] = e[i];
	}
	if (n >= cap)
		return -1;
	out[n] = '\0';
	return (int)n;
}

static int sp_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void sp_manifest_decode(char *s)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		if (*r != '\\') {
			*w++ = *r;
			continue;
		}
		if (r[1] == '\\') {
			*w++ = '\\';
			r++;
		} else if (r[1] == 'n') {
			*w++ = '\n';
			r++;
		} else if (r[1] == 'x' && sp_hexval(r[2]) >= 0 && sp_hexval(r[3]) >= 0 &&
			   (sp_hexval(r[2]) | sp_hexval(r[3]))) {
			*w++ = (char)(sp_hexval(r[2]) * 16 + sp_hexval(r[3]));
			r += 3;
		} else {
			*w++ = '\\'; /* not ours: kept as it is */
		}
	}
	*w = '\0';
}

bool sp_has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (sp_is_control(*p))
			return true;
	return false;
}
