/*
 * capture.h - the BPF capture layer: uprobes on the allocator entry
 * points (malloc, calloc, realloc, reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc, free) of traced processes,
 * delivered as a stream of events (recording) and/or as per-site totals kept
 * in the kernel (top, sweep, attach).  C++'s operator new (every variant) is
 * probed too, where it allocates through those (libstdc++, static programs):
 * its allocations are the malloc or aligned_alloc calls it makes, with the
 * stack of new's caller, frames[0] the return address into the code that
 * called new, whether or not libstdc++ has frame pointers.  operator delete
 * frees with free().  An allocator library's own new (jemalloc, tcmalloc,
 * mimalloc) allocates without calling its malloc: not seen.  The allocator
 * libraries' own APIs are probed too (extsyms.h: jemalloc's mallocx,
 * rallocx, xallocx, sdallocx, dallocx; tcmalloc's tc_*; mimalloc's mi_*),
 * reported as mallocx, rallocx, xallocx or the C function they stand for.
 *
 * Life cycle: mt_bpf_open (loads the programs), then any number of
 * mt_bpf_trace_pid / mt_bpf_trace_exec / mt_bpf_trace_all, mt_bpf_rescan
 * about once a second (objects mapped later, new processes, processes that
 * exited), mt_bpf_poll on a timer in events mode, mt_bpf_read_sites when a
 * snapshot is wanted, mt_bpf_close.  One thread uses an mt_bpf at a time.
 *
 * What a traced process costs: one uprobe trap per call of an allocator
 * function and one more at the return of those that allocate (free has none;
 * operator new has its entry's): about 2.8 us per malloc/free pair on the
 * project's VM (tests/unit/capture/bpf/bench_bpf.c; the traps about 1.8 us of it, the
 * programs 1.1 us), 4.4-5.3x native wall time for `record` of the sqlite3
 * workload, attaching and detaching included (medians of 5 interleaved runs,
 * load average 1 to 4), with frame-pointer stacks.  Unwinding stacks from
 * the unwind tables in the kernel adds about 60 ns a frame at each
 * allocation (1 us for sqlite3's 17 frames on average).  Stacks are those
 * of the shim: whole without frame pointers, cut at 127 frames (marked).
 * A process that is not traced pays nothing: probes
 * are attached for the traced process only, except in mt_bpf_trace_all.
 * Detaching waits for the kernel: each link's removal waits about 50-90 ms
 * here.  On Linux 6.6 and later an object's probes are one uprobe_multi link
 * per program (three or four, removed in parallel; when untracing a process
 * entries before returns): untracing a process or closing takes 0.05-0.1 s.  Before 6.6 (or with MEMTRACE_BPF_NO_MULTI=1) every probe is
 * a link of its own, and a process that uses glibc (17 probes) takes about
 * 1.5 s.  uprobe_multi links also need only CAP_BPF and CAP_PERFMON; the
 * perf-event ones need CAP_SYS_ADMIN.
 *
 * Figures follow the interface (man/memtrace-report.1): sizes are the requested sizes; realloc
 * is one allocation and one free; a failed realloc frees nothing;
 * realloc(p, 0) returning NULL is a free; realloc(NULL, n) is an
 * allocation; calls an allocator makes to its own entry points (glibc's
 * realloc(NULL, n) -> malloc) count once, as the outer call.  In glibc
 * aligned_alloc and memalign are one function at one address: both are
 * reported as aligned_alloc (the lower enum mt_fn), the probe cannot tell
 * which name the caller used.  A free() the allocator calls itself on a
 * block never seen allocated (glibc hands a dying thread's cache of free
 * chunks back this way) is its housekeeping, neither an event nor an
 * unmatched free.
 *
 * Every function that can fail returns 0 on success and -1 on failure with
 * ONE line saying why in ERR (no trailing newline, no "memtrace:" prefix).
 * libbpf's own messages are kept quiet unless MEMTRACE_BPF_DEBUG=1.
 */
#ifndef MEMTRACE_BPF_CAPTURE_H
#define MEMTRACE_BPF_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/codec.h"

struct mt_bpf;

struct mt_bpf_opts {
	int events;		/* 1: stream every event through the ring buffer
				 * (recording); 0: aggregate in maps only.  The maps
				 * are kept in both modes. */
	uint32_t max_live;	/* live-allocation map entries (default 1<<20) */
	uint32_t max_stacks;	/* stack map entries (default 1<<16; 1 KB each,
				 * preallocated by the kernel) */
	uint32_t max_pending;	/* in-flight calls: entry->return pairing (default 1<<16) */
	uint64_t min_age_ns;	/* a block freed younger than this is counted as
				 * culled in its site (default 0: none) */
	uint32_t ringbuf_bytes; /* events mode (default 64 MB; rounded up to a power of 2) */
	int mmaps;		/* events mode: the mapping calls too (mmap, munmap,
				 * mremap, brk: MT_REC_EXT events) */
	int lean;		/* events mode: the events alone, no live and sites
				 * maps (a recording, which reads nothing else):
				 * mt_bpf_read_sites, the live and unmatched counts
				 * then say nothing */
	uint64_t sample_mean;	/* sampled recording: one allocation per this many
				 * bytes on average (0: every one); the sites'
				 * figures are then estimates (mt_bpf_read_sites
				 * weighs them), the events say it (MT_EXT_SAMPLED) */
};

/* The function of a FREE event made by free() (enum mt_fn has none). */
#define MT_BPF_FN_FREE MT_FN_COUNT

/* The sampled mean it was opened with (mt_bpf_opts), 0: every call. */
uint64_t mt_bpf_sample_mean(const struct mt_bpf *b);

/* Loads the programs and creates the maps.  Fails with one line: not root
 * (or without CAP_BPF and CAP_PERFMON), no kernel BTF, no uprobe support,
 * kernel too old, or the verifier's complaint. */
/* Whether this process has the privileges BPF needs (root, or CAP_BPF and
 * CAP_PERFMON); the kernel may still lack what it needs (mt_bpf_open). */
int mt_bpf_privileged(void);

/* Whether the BPF backend can run here: built in, privileges, and a kernel
 * with what it needs (BTF, uprobes, a working bpf() system call), checked,
 * not assumed from the architecture.  WHY gets one line either way: what
 * is missing, or what was found. */
int mt_bpf_available(char *why, size_t whylen);

int mt_bpf_open(struct mt_bpf **out, const struct mt_bpf_opts *o, char *err, size_t errlen);

/* Traces the running process PID: every ELF object it maps that defines
 * malloc (libc wherever it is, containers included, a static executable
 * with symbols, jemalloc/tcmalloc/mimalloc) gets probes, once per object
 * (device and inode) and process.  Fails if there is no such process, if it
 * maps no allocator object, or without permission. */
int mt_bpf_trace_pid(struct mt_bpf *b, pid_t pid, char *err, size_t errlen);

/* For record: PID is a child that has not yet exec'd EXE_PATH.  Attaches to
 * the allocator objects the program will map: the executable itself if it
 * defines malloc (static), and the libraries that define malloc among those
 * LD_PRELOAD (ours: the child inherits it), /etc/ld.so.preload and its
 * DT_NEEDED entries resolve to (libc.so.6, an allocator linked in).  Objects
 * it maps later (dlopen) are picked up by mt_bpf_rescan. */
int mt_bpf_trace_exec(struct mt_bpf *b, pid_t pid, const char *exe_path, char *err, size_t errlen);

/* Every process, current and future, except memtrace itself and processes
 * passed to mt_bpf_untrace_pid: probes every allocator object mapped
 * anywhere now, without a pid filter; mt_bpf_rescan adds objects mapped
 * later. */
int mt_bpf_trace_all(struct mt_bpf *b, char *err, size_t errlen);

/* Re-reads the maps of traced processes (all processes with trace_all) and
 * probes allocator objects not seen before; detaches from traced processes
 * that exited (their figures stay readable until mt_bpf_untrace_pid; with
 * trace_all they are dropped); counts the in-flight calls of threads that
 * died as missed returns.  A few ms for a few hundred processes: meant to be
 * called every second.  Returns the number of objects newly probed, or -1. */
int mt_bpf_rescan(struct mt_bpf *b);

/* What mt_bpf_rescan does for the traced processes (not every process of
 * trace_all) that mapped a file executable since the last call, seen in
 * the mapping calls mt_bpf_poll read: the tables of a library dlopen'd
 * mid-second are read at once, not up to a second later, so fewer stacks
 * through it are cut (a short program's: all of them).  Meant to be called
 * after every mt_bpf_poll.  Returns the number of unwind tables made. */
int mt_bpf_rescan_new_code(struct mt_bpf *b);
/* Whether mt_bpf_rescan_new_code has anything to read. */
int mt_bpf_new_code_pending(struct mt_bpf *b);

/* ---- events mode ---- */

/* An event's type besides the records': a call that tuned the allocator
 * (mallopt, malloc_trim): TUNE says which, its arguments and its result, as
 * the MALLOPT record holds them. */
#define MT_BPF_EV_MALLOPT 16
/* ... and a child process a traced one started (CHILD its pid), which is
 * not traced. */
#define MT_BPF_EV_CHILD 17

/* The ring buffer's record (bpf/memtrace.h, struct mtb_rec) as the
 * loader delivers it: the same fields, filled once (on_record, memtrace.c),
 * with the stack key resolved into the stack's id and frames and the record
 * types and function ids unchanged (they are codec.h's).  bpf_stream.c
 * encodes each into the codec's records without reshaping it. */

struct mt_bpf_event {
	int type; /* MT_REC_ALLOC, MT_REC_FREE, MT_REC_REALLOC, MT_BPF_EV_MALLOPT,
		   * MT_BPF_EV_CHILD;
		   * MT_REC_EXT: a mapping call (MAP; its stack as an allocation's);
		   * MT_REC_EXIT: process PID exited (STATUS; every mode) */
	struct mt_mapcall map;
	int fn; /* enum mt_fn, or MT_BPF_FN_FREE (MALLOPT: see TUNE) */
	uint32_t pid, tid;
	uint64_t ts;		/* CLOCK_MONOTONIC ns */
	uint64_t ptr;		/* the new block (ALLOC, REALLOC), the freed one (FREE) */
	uint64_t old_ptr;	/* REALLOC: the block it replaced */
	uint64_t size;		/* requested size (ALLOC, REALLOC) */
	uint64_t stack_id;	/* stable id of the stack in this mt_bpf (0 = none: FREE) */
	unsigned nframes;	/* return addresses, leaf first; frames[0] is the */
	const uint64_t *frames; /* return address of the allocator call itself */
	uint32_t object;	/* allocator object: mt_bpf_object_path */
	int64_t status;		/* MT_REC_EXIT: exit code >= 0, or -signal (signum.h) */
	uint32_t child;		/* MT_BPF_EV_CHILD: the child's pid */
	struct mt_mallopt tune; /* MT_BPF_EV_MALLOPT (its stack as an allocation's) */
};
typedef void (*mt_bpf_event_fn)(void *ctx, const struct mt_bpf_event *ev);

/* Delivers the events waiting in the ring buffer, in ring order.  Events are
 * submitted without waking anybody (a wake-up per event costs more than the
 * rest of the probe): when nothing is waiting this sleeps TIMEOUT_MS (0: not
 * at all; a signal cuts it short) and drains again.  Returns the number of
 * events delivered, or -1 (errno set).  FRAMES stay valid until
 * mt_bpf_close.  In aggregation mode the only events are the traced
 * processes' exits (MT_REC_EXIT), so that one loop serves both modes.
 * Records the loader must act on at once (an exit, a file mapped
 * executable) end the sleep. */
int mt_bpf_poll(struct mt_bpf *b, int timeout_ms, mt_bpf_event_fn fn, void *ctx);
/* A file descriptor whose readability ends mt_bpf_poll's sleep at once
 * (-1: none): a recorder that must answer its traced child's stops wakes
 * on them (a signalfd of SIGCHLD) rather than after the whole timeout. */
void mt_bpf_set_wake_fd(struct mt_bpf *b, int fd);

/* Whether traced process PID was seen to exit (an MT_REC_EXIT event read
 * by mt_bpf_poll, any mode): 1 with *STATUS, its exit code >= 0 or
 * -signal (in the recordings' numbering, format/signum.h), and *TS (may be
 * NULL) when (CLOCK_MONOTONIC ns), else 0.  A process traced anew under
 * the same pid forgets it. */
int mt_bpf_exit_status(struct mt_bpf *b, uint32_t pid, int64_t *status, uint64_t *ts);

/* Path of an allocator object (as the process that mapped it names it). */
const char *mt_bpf_object_path(struct mt_bpf *b, uint32_t object);

/* Frames of a stack id given in an event or a site. */
int mt_bpf_stack(struct mt_bpf *b, uint64_t stack_id, const uint64_t **frames, unsigned *nframes);

/* ---- aggregation (both modes) ---- */

struct mt_bpf_site {
	uint32_t pid;
	uint64_t stack_id;
	unsigned nframes;
	const uint64_t *frames;
	uint64_t outstanding_bytes; /* allocated while traced, not freed */
	uint64_t outstanding_allocations;
	uint64_t allocations; /* while traced */
	uint64_t allocated_bytes;
	uint64_t culled;    /* freed younger than opts.min_age_ns */
	uint64_t oldest_ts; /* oldest outstanding block (CLOCK_MONOTONIC
					   * ns); 0 unless min_age_ns was given */
	uint32_t object;    /* allocator object of the site's last call
					   * (UINT32_MAX: unknown) */
	int fn;		    /* enum mt_fn of the site's last call (a
					   * site is one call site: one function; C++'s
					   * new is the malloc or aligned_alloc it
					   * calls); -1: unknown (a site seen only in
					   * the live map) */
};

/* Calls FN once per (process, stack).  MIN_AGE_NS 0: outstanding figures
 * from the kernel's counters (cheap).  Otherwise only blocks older than
 * MIN_AGE_NS count as outstanding, and oldest_ts is filled: this reads the
 * whole live map (about 0.3 s per million blocks here).  In events mode a block
 * that found the live map full is in the stream but not outstanding here
 * (see mt_bpf_lost).  Returns the number of sites, or -1. */
int mt_bpf_read_sites(struct mt_bpf *b, uint64_t min_age_ns,
		      void (*fn)(void *ctx, const struct mt_bpf_site *s), void *ctx);

/* A block allocated while traced and not freed, from the kernel's live map. */
struct mt_bpf_block {
	uint64_t ptr, size;
	uint64_t stack_id; /* as mt_bpf_site's: mt_bpf_stack's key */
	uint64_t ts;	   /* CLOCK_MONOTONIC ns of its allocation */
	uint64_t weight;   /* the allocations it stands for, in 16.16: 1 << 16,
			    * or sampling, its estimate (mt_bpf_site's counts
			    * are sums of these) */
};

/* Calls FN for every live block of PID (for the leak scan of a process
 * attached to, held still meanwhile).  Returns how many, or -1. */
int mt_bpf_read_live(struct mt_bpf *b, uint32_t pid,
		     void (*fn)(void *ctx, const struct mt_bpf_block *blk), void *ctx);

/* Losses counted in the kernel for PID (0: all processes), by kind:
 * BUFFER_FULL ring buffer reservations that failed (events mode);
 * MAP_FULL calls not paired (pending map full), sites not kept, and, in
 * aggregation mode, blocks not tracked (live map full); MISSED_RETURN calls
 * whose return never came (and calls ignored as nested in one);
 * STACK  stacks not captured (the caller alone was kept; code without frame
 * pointers gives the caller alone without that being a loss). */
void mt_bpf_lost(struct mt_bpf *b, uint32_t pid_or_0, uint64_t lost[MT_LOST_KIND_COUNT]);

/* Blocks freed (by free or realloc) that were not allocated while traced. */
uint64_t mt_bpf_unmatched_frees(struct mt_bpf *b, uint32_t pid_or_0);

/* Blocks that found the live map full (kept in the stream in events mode). */
uint64_t mt_bpf_untracked(struct mt_bpf *b, uint32_t pid_or_0);

/* Stops tracing PID: detaches its probes (with trace_all: excludes it) and
 * drops its figures. */
void mt_bpf_untrace_pid(struct mt_bpf *b, pid_t pid);

/* Bytes of the unwind tables loaded into the kernel (the DWARF unwinder's
 * rows, every object so far). */
uint64_t mt_bpf_unwind_table_bytes(struct mt_bpf *b);

/* Detaches everything; traced processes run on exactly as before. */
void mt_bpf_close(struct mt_bpf *b);

#endif
