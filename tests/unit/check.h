/*
 * check.h - the checks of the unit tests: each failed check is printed with
 * its file and line and counted in `failures`, and the test goes on, so that
 * one run shows everything that is wrong; main returns 1 when any failed.
 */
#ifndef MEMTRACE_TEST_CHECK_H
#define MEMTRACE_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                  \
		}                                                                    \
	} while (0)

/* Two integers, both printed when they differ. */
#define CHECK_EQ(a, b)                                                                       \
	do {                                                                                 \
		unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
		if (a_ != b_) {                                                              \
			fprintf(stderr, "%s:%d: %s == %llu, expected %llu\n", __FILE__, __LINE__, #a, a_, b_); \
			failures++;                                                          \
		}                                                                            \
	} while (0)

#endif
