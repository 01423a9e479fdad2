/*
 * test_useful.c - unit tests of the most useful frame of a stack
 * (analyse/functions.c, mt_useful_frame), which the call-site tables name a
 * site by: past the C library and operator new; past a library's own
 * allocator (an unsymbolized helper under a function named as one, and the
 * functions so named above it, as sqlite3's stacks are); but a program's
 * function that calls malloc itself names its site.
 */
#include "analyse/functions.h"
#include "../check.h"

#include <stdio.h>

#define FR(fn, mod) { .function = (fn), .module = (mod) }

int main(void)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6", *sq = "/usr/lib/libsqlite3.so.0",
		   *prog = "/usr/bin/prog";
	/* strdup in libc, under the program's dupper */
	struct mt_frame a[] = { FR("__strdup", libc), FR("dupper", prog), FR("main", prog) };
	CHECK(mt_useful_frame(a, 3) == 1);
	/* sqlite3: malloc <- [unsymbolized] <- sqlite3Malloc <- sqlite3DbMallocZero <- caller */
	struct mt_frame b[] = { FR(NULL, sq), FR("sqlite3Malloc", sq), FR("sqlite3DbMallocZero", sq),
				FR(NULL, sq), FR("sqlite3_step", sq), FR("main", prog) };
	CHECK(mt_useful_frame(b, 6) == 3);
	/* the wrapper's caller in another module */
	struct mt_frame c[] = { FR(NULL, sq), FR("sqlite3Malloc", sq), FR("main", prog) };
	CHECK(mt_useful_frame(c, 3) == 2);
	/* a program's function calling malloc itself: its own frame */
	struct mt_frame d[] = { FR("do_malloc", prog), FR("main", prog) };
	CHECK(mt_useful_frame(d, 2) == 0);
	struct mt_frame e[] = { FR("alloc_t0", prog), FR("worker", prog), FR("start_thread", libc) };
	CHECK(mt_useful_frame(e, 3) == 0);
	/* a wrapper three frames up is not the allocator's: the first frame stays */
	struct mt_frame f[] = { FR("a", prog), FR("b", prog), FR("c", prog), FR("xmalloc", prog), FR("main", prog) };
	CHECK(mt_useful_frame(f, 5) == 0);
	/* nothing above the wrapper: the first frame outside the runtime */
	struct mt_frame g[] = { FR(NULL, sq), FR("sqlite3Malloc", sq) };
	CHECK(mt_useful_frame(g, 2) == 0);
	/* every frame the runtime's */
	struct mt_frame h[] = { FR("malloc", libc), FR("_IO_file_doallocate", libc) };
	CHECK(mt_useful_frame(h, 2) == 0);
	if (failures) {
		fprintf(stderr, "useful: %d checks failed\n", failures);
		return 1;
	}
	printf("useful: all checks passed\n");
	return 0;
}
