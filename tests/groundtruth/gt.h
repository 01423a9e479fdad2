/*
 * gt.h - what the ground-truth programs share.
 *
 * The programs must make no allocation the test does not know of, so they
 * never use stdio (printf allocates its buffer): they print with write(2)
 * from a stack buffer.  And the compiler must not elide a malloc/free pair or
 * turn a call into a tail jump: every block goes through gt_keep(), an
 * empty asm that makes the pointer escape.
 */
#ifndef GT_H
#define GT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* X, with the compiler unable to know its value (so that, e.g.,
 * realloc(NULL, n) is not folded into malloc(n)). */
#define GT_HIDE(x)                                     \
	({                                             \
		__typeof__(x) h_ = (x);                \
		__asm__ volatile("" : "+r"(h_));       \
		h_;                                    \
	})

/* A loop bound the compiler cannot see, so that it does not unroll the loop:
 * an unrolled loop has one call instruction per iteration, hence as many
 * distinct call stacks (sites) as iterations. */
#define GT_N(n) GT_HIDE((int)(n))

/* Makes P escape so that the compiler keeps its allocation and free. */
static inline void gt_keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* Overwrites the stack that calls before left below the caller's frame:
 * a pointer a returned function left there would otherwise keep its block
 * reachable to a leak scan (memcheck's and memtrace's alike). */
static __attribute__((noinline, unused)) void gt_wipe_stack(void)
{
	volatile char junk[16384];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = 0;
}

/* printf to stdout without stdio's heap buffer (vsnprintf on plain %d/%s/%lu
 * formats does not allocate). */
__attribute__((format(printf, 1, 2))) static inline void gt_say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 1)
		n = (int)sizeof buf - 1;
	for (int off = 0; n > 0 && off < n;) {
		ssize_t w = write(1, buf + off, (size_t)(n - off));
		if (w <= 0)
			break;
		off += (int)w;
	}
}

/* Exits with status 3 and a message when COND is false: the program checks
 * what it relies on (a realloc that must move, an alignment) itself. */
#define GT_REQUIRE(cond)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			static const char m_[] = "gt: requirement failed: " #cond "\n"; \
			if (write(2, m_, sizeof m_ - 1) < 0) {                    \
			}                                                         \
			_exit(3);                                                 \
		}                                                                 \
	} while (0)

static inline void gt_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

#endif
