/*
 * progress.h - a long step saying how far it is: a recording read
 * (analyse/), its sites symbolized (server/), one gathered over the network
 * (stream/).
 *
 * The stages say what they do and how far they are; whether that is shown,
 * when and how is the reporter's, which the command line installs (it owns
 * the terminal: cli/progress.c).  With none installed (the unit tests, any
 * other program on these libraries) the calls do nothing.  A step lives on
 * its caller's stack, so steps in several threads at once (the server's
 * loader and its requests) keep apart.
 */
#ifndef MEMTRACE_PROGRESS_H
#define MEMTRACE_PROGRESS_H

#include <stdint.h>

struct mt_progress {
	const char *verb; /* "reading" */
	const char *what; /* the file, or what is gathered: the caller's */
	/* the reporter's */
	int on, shown;
	uint64_t start_ns, shown_ns;
};

struct mt_progress_reporter {
	void (*start)(struct mt_progress *p);
	/* P has done DONE of TOTAL; a TOTAL of 0: no end known, DONE bytes. */
	void (*at)(struct mt_progress *p, uint64_t done, uint64_t total);
	/* Whatever P showed goes away (its caller is about to say something,
	 * or P is over). */
	void (*clear)(struct mt_progress *p);
};

/* R for every step from now on (installed once, before any thread). */
void mt_progress_install(const struct mt_progress_reporter *r);

/* P begins: VERB WHAT ("reading", a path), both kept by pointer. */
void mt_progress_start(struct mt_progress *p, const char *verb, const char *what);
void mt_progress_at(struct mt_progress *p, uint64_t done, uint64_t total);
void mt_progress_clear(struct mt_progress *p);

#endif
