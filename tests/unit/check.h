/*
 * check.h - the unit tests' one assertion: CHECK(cond) reports the file,
 * line and condition and counts a failure; the test goes on, and
 * check_exit() ends main with the count.
 */
#ifndef SP_TESTS_CHECK_H
#define SP_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* main's return value: 0 if every check passed; says so either way. */
static inline int check_exit(const char *test)
{
	if (failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", test, failures);
		return 1;
	}
	printf("%s: all checks passed\n", test);
	return 0;
}

#endif
