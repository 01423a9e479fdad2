/*
 * page.h - report.html filled in: the one walk over the page template that
 * the html export (which pastes the assets and the data into the page) and
 * the server's GUI (which points the page at its /static/ files) share.
 * Each {{slot args}} of the template is handed to the caller, who writes
 * what stands in its place.
 */
#ifndef MEMTRACE_PAGE_H
#define MEMTRACE_PAGE_H

#include <stddef.h>
#include <stdio.h>

struct mt_page_slot {
	const char *name; /* "title", "style", "script", "policy", "data" */
	size_t name_len;
	const char *args; /* the rest: asset names separated by spaces */
	size_t args_len;
};

/* Writes what stands for SLOT to F: 0, or -1 with a reason in ERR. */
typedef int (*mt_page_fill)(void *ctx, FILE *f, const struct mt_page_slot *slot, char *err,
			    size_t errlen);

/* Writes report.html to F, each slot by FILL.  Returns 0, or -1 with a
 * reason in ERR (the template is not built in, or FILL failed). */
int mt_page_write(FILE *f, mt_page_fill fill, void *ctx, char *err, size_t errlen);

/* Is SLOT the one named NAME? */
int mt_page_slot_is(const struct mt_page_slot *slot, const char *name);

/* The asset names of SLOT one by one: start with *POS 0; returns 1 with
 * *NAME and *LEN set, 0 after the last. */
int mt_page_slot_arg(const struct mt_page_slot *slot, size_t *pos, const char **name, size_t *len);

#endif
