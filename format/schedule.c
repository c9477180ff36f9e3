#include "format/schedule.h"

#include <errno.h>

int sp_schedule_parse(const char *s, struct sp_schedule *out)
{
	uint64_t v[4] = {0, 0, 0, 0};
	int n = 0;
	const char *p = s;
	for (;;) {
		if (n == 4 || *p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			v[n] = v[n] * 10 + (uint64_t)(*p - '0');
			if (v[n] > SP_SCHEDULE_MAX)
				return -EINVAL;
		}
		n++;
		if (!*p)
			break;
		if (*p++ != ',')
			return -EINVAL;
	}
	if (n < 3 || v[2] == 0)
		return -EINVAL;
	out->set = true;
	out->wait = (uint32_t)v[0];
	out->warmup = (uint32_t)v[1];
	out->active = (uint32_t)v[2];
	out->repeat = (uint32_t)v[3];
	return 0;
}
