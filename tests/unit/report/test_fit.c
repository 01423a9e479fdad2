/*
 * test_fit.c - unit tests of report/fit.h: C++ names folded as heaptrack
 * prints them (the operators spelled with brackets and lambdas kept, a name
 * whose brackets do not balance left whole), and the stream that wraps long
 * lines without losing a byte of them.
 */
#include "report/fit.h"
#include "../check.h"

#include <stdlib.h>
#include <string.h>

static int folds_to(const char *name, const char *want)
{
	char buf[512];
	const char *got = mt_fold_name(name, buf, sizeof buf);
	if (got && !strcmp(got, want))
		return 1;
	fprintf(stderr, "fold of %s: %s, expected %s\n", name, got ? got : "(null)", want);
	return 0;
}

static void test_fold(void)
{
	CHECK(folds_to("std::map<std::__cxx11::basic_string<char, std::char_traits<char>, "
		       "std::allocator<char> >, int, std::less<std::__cxx11::basic_string<char> "
		       "> >::operator[](std::__cxx11::basic_string<char>&&)",
		       "std::map<>::operator[](std::__cxx11::basic_string<>&&)"));
	CHECK(folds_to("main", "main"));
	CHECK(folds_to("std::less<>::operator()", "std::less<>::operator()"));
	/* operators with brackets in their names are names */
	CHECK(folds_to("bool gt::operator< <gt::Box<int> >(gt::Box<int> const&, gt::Box<int> "
		       "const&)",
		       "bool gt::operator< <>(gt::Box<> const&, gt::Box<> const&)"));
	CHECK(folds_to("std::basic_ostream<char>& std::operator<< <std::char_traits<char> "
		       ">(std::basic_ostream<char>&, char const*)",
		       "std::basic_ostream<>& std::operator<< <>(std::basic_ostream<>&, char const*)"));
	CHECK(folds_to("auto gt::V<int>::operator<=>(gt::V<int> const&) const",
		       "auto gt::V<>::operator<=>(gt::V<> const&) const"));
	CHECK(folds_to("gt::P<int>::operator->()", "gt::P<>::operator->()"));
	CHECK(folds_to("gt::P<int>::operator>>=(int)", "gt::P<>::operator>>=(int)"));
	CHECK(folds_to("gt::P<int>::operator>(int)", "gt::P<>::operator>(int)"));
	/* an operator as a template argument, a comparison in parentheses */
	CHECK(folds_to("gt::sort<&gt::operator<, 3>(int)", "gt::sort<>(int)"));
	CHECK(folds_to("gt::N<(1>2)>::f()", "gt::N<>::f()"));
	/* lambdas and a trailing return type */
	CHECK(folds_to("gt::each<std::vector<int> >(std::vector<int>&)::{lambda(int)#1}::operator()"
		       "(int) const",
		       "gt::each<>(std::vector<>&)::{lambda(int)#1}::operator()(int) const"));
	CHECK(folds_to("auto f() -> std::vector<int>", "auto f() -> std::vector<>"));
	CHECK(folds_to("noperator<int>::x", "noperator<>::x"));
	/* not a demangler's: left whole */
	CHECK(folds_to("a<b<c", "a<b<c"));
	CHECK(folds_to("x>y", "x>y"));
	char small[8];
	CHECK(!strcmp(mt_fold_name("std::vector<int>::push_back", small, sizeof small),
		      "std::vector<int>::push_back"));
}

/* TEXT written through a stream of WIDTH: what comes out. */
static char *fitted(const char *text, int width)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	FILE *f = mt_fit_open(out, width);
	fputs(text, f);
	CHECK(mt_fit_close(f, out) == 0);
	fclose(out);
	return buf;
}

static void test_wrap(void)
{
	char *s = fitted("short line\n", 20);
	CHECK(!strcmp(s, "short line\n"));
	free(s);
	s = fitted("  | -> 12.00% (1 KB, 2x): averyveryverylongname [file.c:12]\n", 30);
	CHECK(!strcmp(s, "  | -> 12.00% (1 KB, 2x):\n"
			 "  |     averyveryverylongname\n"
			 "  |     [file.c:12]\n"));
	free(s);
	/* no space: broken where the width ends */
	s = fitted("  abcdefghijklmnopqrstuvwxyz0123456789\n", 20);
	CHECK(!strcmp(s, "  abcdefghijklmnopqr\n      stuvwxyz012345\n      6789\n"));
	free(s);
	/* code points, not bytes: "é" is one column */
	s = fitted("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 x\n", 20);
	CHECK(!strcmp(s, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 x\n"));
	free(s);
	/* no limit: the same stream */
	FILE *out = stdout;
	CHECK(mt_fit_open(out, 0) == out);
	/* a last line without its '\n' is written at the close */
	s = fitted("abc", 20);
	CHECK(!strcmp(s, "abc\n"));
	free(s);
}

int main(void)
{
	test_fold();
	test_wrap();
	if (failures) {
		fprintf(stderr, "fit: %d checks failed\n", failures);
		return 1;
	}
	printf("fit: all checks passed\n");
	return 0;
}
