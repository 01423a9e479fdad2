/*
 * leakkinds.h - what a leak scan found the leaked blocks of a process to
 * be (definitely, indirectly or possibly lost, or still reachable), per
 * site and for the whole process, from the recording's SCAN and LEAKS
 * records (format/codec.h).  "Leaked" keeps its meaning (not freed by the
 * end); these say which of those blocks anything still points at.
 */
#ifndef MEMTRACE_LEAKKINDS_H
#define MEMTRACE_LEAKKINDS_H

#include "format/codec.h"
#include "base/ptrmap.h"

struct mt_kind_figures {
	uint64_t count[MT_LEAK_KINDS], bytes[MT_LEAK_KINDS];
};

struct mt_leak_kinds {
	int ran; /* a SCAN record was read */
	struct mt_scan_summary scan;
	char *why;	       /* when the scan was not complete */
	struct mt_ptrmap lost; /* block key -> kind + 1 of the blocks found lost */
	struct mt_kind_figures total;
	struct mt_kind_figures *sites; /* by site index, once finished (NULL: no scan) */
	size_t nsites;
};

struct mt_process;
struct mt_event;

/* A SCAN or LEAKS record of the process.  A SCAN starts the scan over: the
 * blocks named lost are those of the LEAKS records after the last SCAN. */
void mt_leak_kinds_event(struct mt_leak_kinds *k, const struct mt_event *ev);

/* After the figures are finished and the runtime's blocks set apart: each
 * leaked block's kind, summed per site.  Nothing when no scan ran. */
void mt_leak_kinds_finish(struct mt_process *p);

void mt_leak_kinds_free(struct mt_leak_kinds *k);

/* The kind of P's block named KEY (as its ALLOC record names it), live at
 * the end: -1 when no scan ran. */
int mt_leak_kind_of(const struct mt_process *p, uint64_t key);

/* A set of kinds: bit 1 << kind for each.  "Lost" is LeakSanitizer's and
 * record --fail-on-leak's: definitely and indirectly lost. */
#define MT_LEAK_MASK(k) (1u << (k))
#define MT_LEAK_LOST (MT_LEAK_MASK(MT_LEAK_DEFINITE) | MT_LEAK_MASK(MT_LEAK_INDIRECT))
#define MT_LEAK_ALL ((1u << MT_LEAK_KINDS) - 1)

/* Reads a comma-separated list of kinds ("definite", "indirect",
 * "possible", "reachable", "lost" for the first two, "all") into *MASK:
 * 0, or -1 naming the word at fault in ERR. */
int mt_leak_kinds_parse(const char *s, unsigned *mask, char *err, size_t len);
/* "definite, indirect" for MASK, in BUF. */
const char *mt_leak_kinds_text(unsigned mask, char *buf, size_t len);

/* K's figures of the kinds in MASK summed: blocks (*COUNT) and bytes. */
void mt_kind_sum(const struct mt_kind_figures *k, unsigned mask, uint64_t *count, uint64_t *bytes);

/* Makes P's leaked figures (per site and in total) count the leaked
 * blocks of the kinds in MASK alone, as a filter makes every figure count
 * the allocations it keeps.  Nothing when no scan ran: returns 0 then, 1
 * when it selected. */
int mt_leak_kinds_select(struct mt_process *p, unsigned mask);

#endif
