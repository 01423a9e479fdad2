/*
 * pprof.h - pprof's profile.proto, gzipped, for any list of processes:
 * `export -f pprof` writes a recording's, `top --pprof-every` one profile
 * per process and interval (Go's heap profile: the four sample types
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count and
 * inuse_space/bytes, period type space/bytes).
 */
#ifndef MEMTRACE_PPROF_H
#define MEMTRACE_PPROF_H

#include <stdint.h>
#include <stdio.h>

#include "analyse/recording.h"

/* What the profile says of itself. */
struct mt_pprof_head {
	uint64_t time_ns;     /* Unix time of its start */
	uint64_t duration_ns; /* what it covers */
	/* bytes per sample: 1 when every allocation is counted, as Go writes
	 * for an unsampled heap profile (MemProfileRate 1) */
	uint64_t period;
	const char *comment; /* NULL: none */
};

/* Writes the sites of PROCS[0..N) to OUT, one Sample per site with
 * allocations or live blocks, labelled with its pid and process name.
 * pprof names the profile after its first mapping: the main process
 * first.  Returns 0, or -1 with a one-line reason in ERR. */
int mt_pprof_write(FILE *out, struct mt_process *const *procs, size_t n,
		   const struct mt_pprof_head *h, char *err, size_t errlen);

#endif
