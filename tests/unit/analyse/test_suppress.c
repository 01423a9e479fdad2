/*
 * test_suppress.c - LeakSanitizer's pattern syntax as analyse/suppress.c
 * matches it: substring by default, '*' for any text, '^' and '$' anchors.
 */
#include "analyse/suppress.h"

#include <stdio.h>

static int failures;

static void expect(const char *pattern, const char *text, int want)
{
	int got = mt_supp_match(pattern, text);
	if (got != want) {
		printf("FAIL: '%s' against '%s': %d, expected %d\n", pattern,
		       text ? text : "(null)", got, want);
		failures++;
	}
}

int main(void)
{
	expect("leak_grows", "leak_grows", 1);
	expect("grow", "leak_grows", 1); /* a substring, as LSan */
	expect("^leak", "leak_grows", 1);
	expect("^grows", "leak_grows", 0);
	expect("grows$", "leak_grows", 1);
	expect("leak$", "leak_grows", 0);
	expect("^leak_grows$", "leak_grows", 1);
	expect("^leak_grow$", "leak_grows", 0);
	expect("l*s", "leak_grows", 1);
	expect("^l*k_g*s$", "leak_grows", 1);
	expect("^l*x*s$", "leak_grows", 0);
	expect("*", "", 1);
	expect("libfoo.so", "/usr/lib/libfoo.so.1", 1);
	expect("libfoo.so$", "/usr/lib/libfoo.so.1", 0);
	expect("std::vector<*>::push_back", "std::vector<int, std::allocator<int> >::push_back", 1);
	expect("x", NULL, 0); /* a frame with no name matches nothing */
	/* many stars on a long name: no blow-up (each star scans once) */
	expect("*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac",
	       0);
	printf("%d failures\n", failures);
	return failures != 0;
}
