/*
 * recording.h - reading a recording into per-process figures.
 *
 * Every front end (report, the summary of record, exports, the server) reads
 * recordings through here: it walks the chunks, decodes each process's
 * stream, merges stacks that are the same into one site, and feeds its
 * figures (figures.h).  Reading and decoding run on a second thread (chunks.h), a
 * batch ahead of the figures.  Memory stays bounded by live blocks and
 * sites; events are not kept.  A truncated file yields what it holds, with `truncated` set.
 *
 * A file is input from anyone: every table grows only with what the stream
 * holds (a process is its struct until its first event, about 0.6 KB for a
 * 25-byte chunk), streams and object paths are found by hash, and values no
 * writer produces (address 0, stack id 0, argv of empty strings) cost no
 * more than others.  A malformed record is an error that names the file,
 * the chunk's offset and the record's byte.
 */
#ifndef MEMTRACE_RECORDING_H
#define MEMTRACE_RECORDING_H

#include <stddef.h>
#include <stdint.h>

#include "format/codec.h"
#include "figures.h"
#include "leakkinds.h"

struct mt_module {
	char *path;
	uint64_t bias, start, end;
	uint8_t *build_id;
	size_t build_id_len;
	/* An object mapped where another had been (a dlopen after a dlclose):
	 * its addresses, and those of the frames recorded while it was there,
	 * are moved by SHIFT out of the process's address space, so that each
	 * frame is named from the object that was there when it was recorded
	 * (recording.c).  0 for the others. */
	uint64_t shift;
};

/* While an object moved by SHIFT is mapped at [START, END). */
struct mt_remap {
	uint64_t start, end, shift;
};

/* A sample of the process's memory as the kernel counts it (MT_EXT_RSS),
 * with the heap in use (live bytes) when it came in the stream. */
struct mt_rss_sample {
	uint64_t ts;
	struct mt_rss m;
	uint64_t heap;
};

/* A call that mapped or unmapped memory (MT_EXT_MMAP), with its site; and,
 * of kind MT_MAP_BLOCK_END (the reader's own), the end of a block's own
 * mapping (MT_MAP_BLOCK), at the block's free or realloc. */
#define MT_MAP_BLOCK_END MT_MAP_KIND_COUNT
struct mt_mapev {
	uint64_t ts;
	struct mt_mapcall m;
	uint32_t tid;
	uint32_t frames, nframes; /* its stack: p->map_frames[frames ..+nframes] */
	char *path;		  /* a file mapping's, or NULL */
};

struct mt_ptrmap;

struct mt_marker {
	uint64_t ts, value;
	char *text;
};

/* A call that tuned the allocator (MT_EXT_MALLOPT), with its stack. */
struct mt_tune_call {
	uint64_t ts;
	uint32_t tid;
	unsigned nframes;
	struct mt_mallopt m;
	uint64_t *frames; /* return addresses, leaf first */
};

struct mt_process {
	uint32_t stream;
	uint32_t pid, ppid;
	char *exe, *backend;
	char **argv;
	int argc;
	uint64_t unix_ns, start_ts, end_ts;
	int exited;	     /* an EXIT record was seen */
	int64_t exit_status; /* >= 0: exit code, < 0: -signal */
	int main_role;	     /* the recorded command, or what it became (EXT_MAIN) */
	/* its place among the recording's processes in start order, 1 first:
	 * the number reports give an image and --image takes (analyse/images.h) */
	uint32_t image;
	/* The image ended by an exec (an EXEC record not followed by one saying
	 * it failed): of EXEC_PATH, traced as another entry or not (WHY). */
	int exec_outcome; /* enum mt_exec + 1; 0: no exec */
	char *exec_path, *exec_why;
	uint64_t exec_ts;
	/* the child processes it started that were not traced (EXT_CHILD:
	 * record without --follow-forks) */
	uint64_t untraced_children;
	uint64_t lost[MT_LOST_KIND_COUNT];
	struct mt_leak_kinds kinds; /* what a leak scan at its end found */
	uint64_t events;
	uint64_t counted_bytes; /* its tables when the budget last looked */

	struct mt_module *modules;
	size_t nmodules, modules_cap;
	struct mt_remap *remaps; /* in force now (loading) */
	size_t nremaps, remaps_cap;
	uint64_t remap_next; /* where the next moved object goes */
	struct mt_marker *markers;
	size_t nmarkers, markers_cap;
	struct mt_tune_call *tunes; /* mallopt, malloc_trim: in stream order */
	size_t ntunes, tunes_cap;
	struct mt_rss_sample *rss; /* in stream order (time order) */
	size_t nrss, rss_cap;
	size_t rss_placed;     /* samples whose heap is known (loading) */
	struct mt_mapev *maps; /* in stream order */
	size_t nmaps, maps_cap;
	uint64_t *map_frames; /* their stacks (no sites: they allocate nothing) */
	size_t nmap_frames, map_frames_cap;
	struct mt_ptrmap *block_maps; /* blocks with a mapping of their own:
				       * key -> its BLOCK's index in maps */

	/* Sites: distinct stacks; frames of site i are frames[site_off[i] ..+site_len[i]] */
	uint64_t *frames;
	size_t nframes, frames_cap;
	uint32_t *site_off, *site_len;
	const char **site_object; /* allocator object of each site, or NULL */
	/* The allocator the process used: glibc, jemalloc, tcmalloc, mimalloc
	 * or unknown, and its object; NULL when the recording does not say (the
	 * shim says it; for the BPF backend it is the object of the sites with
	 * the most allocations). */
	char *heap, *heap_object;
	struct mt_objects *embedded; /* binaries in the recording (the recording's) */
	char **objects;		     /* the distinct object paths (owned) */
	size_t nobjects, objects_cap;
	uint32_t *objects_index; /* hash of objects: index + 1 */
	size_t objects_mask;
	size_t site_cap;
	struct mt_figures figures;

	/* stack id in the stream -> site (hash), stack content -> site (hash) */
	struct {
		uint64_t id;
		uint32_t site;
	} * ids;
	size_t ids_mask, ids_used;
	/* the same for the small ids writers give (1, 2, 3...): site + 1 at
	 * [id], 0 = none; at most twice as long as the ids defined, plus 64K */
	uint32_t *id_dense;
	size_t id_dense_len, ids_defined;
	uint32_t id0_site;    /* site + 1 of stack id 0 (0: none yet) */
	uint64_t salt;	      /* of these hashes and the content one (mt_hash_salt) */
	uint32_t *by_content; /* site + 1, 0 = empty */
	size_t content_mask;
};

/* How a load feeds an allocation event to the figures (see mt_load_hook). */
enum mt_gate { MT_GATE_PASS, MT_GATE_SKIP, MT_GATE_FREE_ONLY, MT_GATE_ALLOC_ONLY };

/* Lets a reader see every allocation event of a load, in stream order, and
 * decide which the figures take: the filters of report and export load a
 * recording whose figures count only the allocations they match.  EVENT is
 * called for MT_REC_ALLOC, MT_REC_FREE and MT_REC_REALLOC with SITE the
 * allocation's site (UINT32_MAX for a free); FREE_ONLY and ALLOC_ONLY take
 * one half of a realloc.  CULLED says whether culled aggregates count (NULL:
 * they do). */
struct mt_load_hook {
	enum mt_gate (*event)(void *ctx, struct mt_process *p, const struct mt_event *ev,
			      uint32_t site);
	int (*culled)(void *ctx, struct mt_process *p);
	void *ctx;
	/* 0, or the file offset to read to (another load's read_to): a file
	 * that grows is read as far as that load read it */
	uint64_t upto;
};

struct mt_recording {
	const char *path;
	/* in the order the processes started (then by stream) */
	struct mt_process **procs;
	size_t nprocs, procs_cap;
	uint32_t *streams; /* stream number -> index in procs + 1 (hash) */
	size_t streams_mask;
	uint64_t salt; /* of that hash */
	uint64_t file_size;
	int truncated;
	char why[200];
	uint64_t read_to; /* the file offset the load stopped at */
	const struct mt_load_hook *hook;
	struct mt_objects *embedded; /* binaries in the recording, or NULL */
};

/* Loads PATH.  Returns 0, or -1 with a one-line reason in ERR (cannot open,
 * empty, foreign, unsupported version, no readable data at all). */
int mt_recording_load(struct mt_recording *rec, const char *path, char *err, size_t errlen);
void mt_recording_free(struct mt_recording *rec);
/* After a load, for a reader that wants its figures and sites alone
 * (report): frees what only the events needed (the live blocks, the
 * tables that find stacks and sites) and gives the freed memory back to
 * the system.  After it, mt_figures_is_live sees no block and
 * mt_process_site must not be called. */
void mt_recording_shed(struct mt_recording *rec);
/* The same, with every allocation event shown to HOOK first. */
int mt_recording_load_hooked(struct mt_recording *rec, const char *path,
			     const struct mt_load_hook *hook, char *err, size_t errlen);

/* What the loads of one thread may spend: the server's request threads
 * set one, so that a request whose client left, whose time ran out, or whose
 * tables grow past its share of memory stops reading at the next chunk
 * instead of computing an answer nobody will read.  It belongs to the thread
 * rather than to each call because every view and export loads through
 * here, and none of them has a reason to know about budgets. */
struct mt_budget {
	const volatile int *cancel, *cancel2; /* set: stop (either may be NULL) */
	uint64_t deadline_ns;		      /* CLOCK_MONOTONIC; 0: none */
	uint64_t max_bytes;		      /* the tables of the loads; 0: no cap */
	uint64_t spent;			      /* the tables of the loads done so far, counted whole
			 * even when freed since: a bound, not a measure */
	/* where the load under way is: the bytes of its file read so far,
	 * stored for another thread to show (NULL: not told) */
	uint64_t *progress;
	/* set by the load that stopped: */
	enum { MT_BUDGET_OK, MT_BUDGET_CANCELLED, MT_BUDGET_TIME, MT_BUDGET_MEMORY } exceeded;
};
/* B for this thread's loads from now on (NULL: none). */
void mt_budget_set(struct mt_budget *b);
struct mt_budget *mt_budget_get(void);
/* Whether this thread's budget says to stop (cancelled or out of time):
 * for loops that do not load, between their steps. */
int mt_budget_stopped(void);
/* What the tables of REC take now, about (the arrays and hashes that grow
 * with the input; not the strings). */
uint64_t mt_recording_bytes(const struct mt_recording *rec);

/* Building a recording in memory, for figures that were not read from a file
 * (the BPF maps of `memtrace sweep` and `top`), so that they are reported by
 * the same code.  Site figures go straight into p->figures.sites[site] and the
 * totals into p->figures.t. */
struct mt_process *mt_process_add(struct mt_recording *rec, uint32_t pid, uint32_t ppid,
				  const char *exe, const char *argv, size_t argv_len,
				  const char *backend);
void mt_process_add_module(struct mt_process *p, const char *path, uint64_t bias, uint64_t start,
			   uint64_t end, const uint8_t *build_id, size_t build_id_len);
/* Says that SITE's allocations went to the allocator object PATH. */
void mt_process_site_object(struct mt_process *p, uint32_t site, const char *path, size_t len);
/* The site of the stack FRAMES[0..N) (return addresses, leaf first). */
uint32_t mt_process_site(struct mt_process *p, const uint64_t *frames, unsigned n);

/* The recording's main process: the last to start of those that were the
 * command (through its execs, or a wrapper's child); in a recording without
 * that mark, the first whose parent is not in it.  NULL when empty. */
struct mt_process *mt_recording_main(const struct mt_recording *rec);
/* A process whose recording does not name its allocator (BPF backend, a
 * snapshot of the kernel's maps): the object most allocations went to
 * ("executable" when that is the program itself, as in a static one). */
void mt_process_guess_heap(struct mt_process *p);
/* What a process is called: the last part of its argv[0] (a program run
 * through a link, such as Debian's redis-server, goes by the link's name),
 * else of its executable; "?" when neither is known. */
const char *mt_process_name(const struct mt_process *p);
/* "SIGSEGV" for 11, or NULL for a number that is no signal's. */
const char *mt_signal_name(int sig);
/* The signal that killed P (its negative exit status, negated), or 0 if it
 * exited or its end is unknown.  The status is whatever 64-bit value the
 * recording holds: INT64_MIN has no negation in int64_t, so it is negated
 * as unsigned.  mt_process_signal_name: its name, or NULL. */
uint64_t mt_process_signal(const struct mt_process *p);
const char *mt_process_signal_name(const struct mt_process *p);
/* The allocator that the object at PATH is, by its file name (glibc,
 * jemalloc, tcmalloc, mimalloc; "unknown" for anything else). */
const char *mt_heap_name_of(const char *path);

/* Total of every kind of loss of a process. */
uint64_t mt_process_lost(const struct mt_process *p);
double mt_process_duration(const struct mt_process *p);

#endif
