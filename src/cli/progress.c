/*
 * progress.c - the command line's progress reporter (base/progress.h): a
 * line on standard error, when it is a terminal, redrawn in place and
 * taken away at the end, so that nothing of it stays in what was printed.
 *
 * A step with an end (a percentage) shows itself once its first second is
 * over, so that quick ones never flicker, then at every call; one without
 * (a gathering lasts as long as its recorder) at once, then every half
 * second.  A percentage keeps its width, so it overwrites itself; a size
 * does not ("1023 KiB", "1.0 MiB"), so the rest of its line is erased.
 */
#include "progress.h"
#include "base/util.h"
#include "base/clock.h"

#include <stdio.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull

static void start(struct mt_progress *p)
{
	p->on = isatty(2);
	p->start_ns = mt_now_ns();
}

static void at(struct mt_progress *p, uint64_t done, uint64_t total)
{
	if (!p->on)
		return;
	uint64_t now = mt_now_ns();
	if (total) {
		/* (the first second is over when the clock's second turns) */
		if (now / NS_PER_S - p->start_ns / NS_PER_S < 1)
			return;
		fprintf(stderr, "\rmemtrace: %s %s: %3d%%", p->verb, p->what,
			(int)(100 * done / total));
	} else {
		if (now - p->shown_ns < NS_PER_S / 2)
			return;
		char b[32];
		fprintf(stderr, "\rmemtrace: %s %s: %s\033[K", p->verb, p->what,
			mt_fmt_bytes(done, b));
	}
	p->shown = 1;
	p->shown_ns = now;
}

static void clear(struct mt_progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
}

const struct mt_progress_reporter cli_progress = { .start = start, .at = at, .clear = clear };
