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
	struct mt_ptrmap lost; /* (loading) block key -> kind + 1 of the blocks found lost */
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

#endif
