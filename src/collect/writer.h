/*
 * writer.h - writing record streams into a recording file.
 *
 * A writer owns the output file; each traced process gets a stream.  What
 * a backend captures (the shim's ring, the BPF loader's events) is fed in as
 * whole records of codec.h; the stream optionally culls short-lived
 * allocations (cull.h), rewrites blocks by serial (compact.h) and cuts the
 * result into compressed chunks, written at least every 250 ms so that a
 * crash loses less than a second.
 */
#ifndef MEMTRACE_WRITER_H
#define MEMTRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "format/codec.h"
#include "scan/procscan.h"

struct mt_writer;
struct mt_stream;

/* Creates PATH (0600), a name the user gave (mt_file_create).  CULL_NS > 0
 * culls allocations freed younger than that.  Returns NULL with a one-line
 * reason in ERR and errno set. */
struct mt_writer *mt_writer_open(const char *path, uint64_t cull_ns, char *err, size_t errlen);
/* The same for a name memtrace made up (mt_file_create_new): if anything
 * exists at PATH, NULL with errno EEXIST. */
struct mt_writer *mt_writer_open_new(const char *path, uint64_t cull_ns, char *err, size_t errlen);
/* Closes the file; returns -1 if any write failed (already reported).
 * With mt_writer_embed, the binaries are appended first (through the same
 * descriptor: the output's name is never opened again). */
int mt_writer_close(struct mt_writer *r);
/* --embed-binaries: the files every stream's MODULE records name are opened
 * through the watched process's mapping as the records go by (embed.h),
 * and appended to the recording when it closes, if it is a regular file
 * that was written whole.  QUIET: say only what was refused. */
void mt_writer_embed(struct mt_writer *r, int quiet);
const char *mt_writer_path(const struct mt_writer *r);

/* Samples the memory of every watched process every NS (default 10 ms;
 * 0: never), into its stream (MT_EXT_RSS). */
void mt_writer_rss_interval(struct mt_writer *r, uint64_t ns);

/* Streams made from now on keep their live blocks' sizes, so that the
 * leak scan of their process can run (mt_stream_leak_scan); QUIET: what
 * it finds is not said on stderr; SAMPLED: the blocks recorded are a
 * sample, and the heap outside them is scanned as roots (an unsampled
 * block may hold the only pointer to a sampled one). */
void mt_writer_leak_scans(struct mt_writer *r, int quiet, int sampled);
/* Whether S's process is to be scanned at its end (and *QUIET). */
int mt_stream_scans(const struct mt_stream *s, int *quiet);

struct mt_stream *mt_stream_new(struct mt_writer *r);
/* The stream is process PID's: its memory is sampled as time passes
 * (mt_stream_tick, which the recorder's loops call every few ms). */
void mt_stream_watch(struct mt_stream *s, uint32_t pid);
/* RING (LEN bytes, page-aligned) maps the ring the process writes its
 * events to, shared with it: its resident pages are taken out of the
 * process's samples (mt_rss_exclude).  The mapping must outlive the
 * stream's sampling (until mt_stream_end). */
void mt_stream_exclude(struct mt_stream *s, const void *ring, size_t len);
/* Feeds whole records; FINAL flushes everything pending.  Returns -1 if a
 * record was malformed: what came before it is kept, the rest is not, and
 * the stream should end (its decoder state is no longer the sender's). */
int mt_stream_feed(struct mt_stream *s, const uint8_t *records, size_t len, int final);
/* Time passes: writes a chunk if the last one is old enough. */
void mt_stream_tick(struct mt_stream *s);
/* The process is at its exit, its memory still there (a ptrace exit
 * stop): one last sample, whatever the interval, so that what the report
 * calls resident at the end is the process's at its end. */
void mt_stream_last_sample(struct mt_stream *s);
/* The leak scan of the stream's process, which ST holds still at its end
 * (everything it sent is in the stream by then): its live blocks scanned,
 * then a SCAN record and LEAKS records for those found lost.  RES says
 * what it found.  Returns 0, or -1 when it could not run (RES->why). */
int mt_stream_leak_scan(struct mt_stream *s, const struct mt_stopped *st,
			struct mt_scan_result *res);
/* Ends the stream: LOST counters and, with HAVE_EXIT, the exit status
 * (>= 0 exit code, < 0 -signal) are appended, then everything is written. */
void mt_stream_end(struct mt_stream *s, const uint64_t lost[MT_LOST_KIND_COUNT], int have_exit,
		   int64_t exit_status);

#endif
