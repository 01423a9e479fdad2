/*
 * otlp.h - a process's sites as an OpenTelemetry ExportProfilesService-
 * Request (opentelemetry-proto's profiles/v1development, the body of OTLP/
 * HTTP's POST /v1development/profiles): what `top --push-format otlp`
 * sends.  The format is still in development upstream; this follows its
 * field numbers as of November 2026.
 */
#ifndef MEMTRACE_OTLP_H
#define MEMTRACE_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "pprof.h"

/* The figures of P (as mt_pprof_write's: Go's four heap sample types, one
 * Profile each, sharing one dictionary), H's time, duration and period,
 * SERVICE as the resource's service.name (NULL: the process's name).
 * Returns the encoded message (malloc'd) and its length in *LEN. */
uint8_t *mt_otlp_profiles(struct mt_process *p, const struct mt_pprof_head *h, const char *service,
			  size_t *len);

#endif
