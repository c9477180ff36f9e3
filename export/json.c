#include "export/json.h"

#include <string.h>

size_t sp_json_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void sp_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	putc('"', f);
	while (*p) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc(c, f);
			p++;
		} else if (c < 0x20) {
			static const char *const named[] = {['\b'] = "\\b",
							    ['\f'] = "\\f",
							    ['\n'] = "\\n",
							    ['\r'] = "\\r",
							    ['\t'] = "\\t"};
			if (c < sizeof(named) / sizeof(named[0]) && named[c])
				fputs(named[c], f);
			else
				fprintf(f, "\\u%04x", c);
			p++;
		} else {
			size_t n = sp_json_utf8_len(p);
			if (n) {
				fwrite(p, 1, n, f);
				p += n;
			} else {
				fputs("\\ufffd", f);
				p++;
			}
		}
	}
	putc('"', f);
}

void sp_json_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}
