#include "export/textfmt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *sp_fmt_us(char *out, size_t len, double us, const char *sign)
{
	if (us >= 1e6)
		snprintf(out, len, "%s%.3fs", sign, us / 1e6);
	else if (us >= 1e3)
		snprintf(out, len, "%s%.3fms", sign, us / 1e3);
	else
		snprintf(out, len, "%s%.3fus", sign, us);
	return out;
}

char *sp_textfmt_time(char *out, size_t len, uint64_t ns)
{
	return sp_fmt_us(out, len, (double)ns / 1e3, "");
}

char *sp_textfmt_weight(char *out, size_t len, uint64_t v, const char *unit)
{
	if (!unit || !strcmp(unit, "ns"))
		return sp_textfmt_time(out, len, v);
	snprintf(out, len, "%llu %s", (unsigned long long)v, unit);
	return out;
}

char *sp_textfmt_delta(char *out, size_t len, int64_t ns)
{
	if (ns == 0)
		return sp_fmt_us(out, len, 0, "");
	double us = fabs((double)ns) / 1e3;
	return sp_fmt_us(out, len, us, ns < 0 ? "-" : "+");
}

char *sp_textfmt_share(char *out, size_t len, double part, double total)
{
	if (total == 0)
		snprintf(out, len, "NaN");
	else
		snprintf(out, len, "%.2f%%", part * 100.0 / total);
	return out;
}

int sp_textfmt_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || isinf(v))
		return -EINVAL;
	double scale;
	if (!*end || !strcmp(end, "s"))
		scale = 1e9;
	else if (!strcmp(end, "ms"))
		scale = 1e6;
	else if (!strcmp(end, "us"))
		scale = 1e3;
	else if (!strcmp(end, "ns"))
		scale = 1;
	else
		return -EINVAL;
	if (v * scale > 1.8e19)
		return -EINVAL;
	*ns = (uint64_t)llround(v * scale);
	return 0;
}

int sp_textfmt_out_error(FILE *f)
{
	if (!ferror(f))
		return 0;
	return errno ? -errno : -EIO;
}
