/*
 * codec.h - the record stream of a memtrace recording, encoder and decoder.
 *
 * Every backend (the LD_PRELOAD shim, the BPF loader) describes what a
 * process did as one stream of records; the recording file (format.h) stores
 * each process's stream in compressed chunks.  This header is the only place
 * that knows how a record is laid out, and it is header-only because the shim
 * encodes on the allocation hot path.
 *
 * A record is a tag byte (low 4 bits: the record type, high 4 bits: the
 * allocator function for ALLOC/REALLOC) followed by LEB128 varints.
 * Timestamps are deltas from the previous record's time, pointers are zigzag
 * deltas from the previous pointer, and the thread is set by a THREAD record
 * only when it changes, so a malloc/free pair of a single-threaded program
 * costs about 10 bytes before compression.  The decoder carries the same
 * state; a stream must be decoded from its start.  man/memtrace-format.5
 * documents every field.
 */
#ifndef MEMTRACE_CODEC_H
#define MEMTRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "allocfns.h"

enum mt_rec_type {
	MT_REC_EXT = 0,	    /* subtype, length, then that many bytes (enum mt_ext);
			     * readers skip subtypes they do not know */
	MT_REC_ALLOC = 1,   /* tsdelta, size, ptr (zz delta), stack */
	MT_REC_FREE = 2,    /* tsdelta, ptr (zz delta) */
	MT_REC_REALLOC = 3, /* tsdelta, size, old (zz delta), new (zz delta from old), stack */
	MT_REC_STACK = 4,   /* id, n, pc0, zz deltas... (return addresses, leaf first) */
	MT_REC_THREAD = 5,  /* tid: the thread of the records that follow */
	MT_REC_MODULE = 6,  /* bias, start, end, path, build-id */
	MT_REC_PROCESS = 7, /* pid, ppid, unix_ns, mono_ns, backend, exe, argv */
	MT_REC_MARKER = 8,  /* tsdelta, value, text */
	MT_REC_LOST = 9,    /* kind, count */
	MT_REC_CULLED = 10, /* stack, allocations, bytes, temporary */
	MT_REC_EXIT = 11,   /* ts (absolute), status (zz: exit code >= 0, -signal) */
	MT_REC_MODULES_RESET = 12, /* (nothing): module list re-sent after dlclose */
	/* The compact forms the recorder writes: blocks are named by the serial
	 * number of their allocation instead of their address, so a free is
	 * "the block allocated K allocations ago", which repeats and compresses
	 * far better than addresses do. */
	MT_REC_NALLOC = 13,   /* tsdelta, size, stack; takes the next serial */
	MT_REC_NFREE = 14,    /* tsdelta, back (serial distance) */
	MT_REC_NREALLOC = 15, /* tsdelta, size, back (old block), stack; takes the next serial */
};

/* Records behind MT_REC_EXT (the 4-bit tag space is full).  Each carries its
 * length, so that later versions can add kinds old readers step over. */
enum mt_ext {
	MT_EXT_ALLOCATOR = 2, /* stack, path: the allocator object the stack's
			       * allocations went to (BPF backend: libc,
			       * jemalloc, a static executable...) */
	MT_EXT_PEAK = 1,      /* ts (absolute), bytes, count: the true peak when culling
			  * hid some allocations from the stream */
	MT_EXT_HEAP = 5,      /* name (string), path: the allocator the whole process
			       * used (shim: the next malloc after it) */
	MT_EXT_PAD = 127,     /* nothing: room kept in a chunk rewritten in place
			       * (the recorder's count of what a full disk cost) */
	MT_EXT_MAIN = 3,      /* nothing: this process is the recorded command, or
			       * what it became (an exec, a wrapper's child); the
			       * last to start of these is the recording's main one */
	MT_EXT_EXEC = 4,      /* ts (absolute), outcome (enum mt_exec), path, why:
			       * the image is being replaced by PATH */
	MT_EXT_RSS = 7,	      /* ts (absolute), then bytes: vm_size, vm_data, rss,
			       * rss_anon, rss_file, rss_shmem, ram (the
			       * machine's): the process's memory as the kernel
			       * counts it, sampled by the recorder, less
			       * memtrace's own ring; then (optional, 0 when
			       * absent) ring: the ring's resident bytes taken
			       * out of rss and rss_shmem */
	MT_EXT_OBJECT = 6,    /* kind (enum mt_object_kind), size, offset,
			       * build-id, path, bytes: a piece of a binary the
			       * processes mapped (record --embed-binaries), in
			       * stream MT_STREAM_OBJECTS */
	MT_EXT_MMAP = 8,      /* ts (absolute), kind (enum mt_map_kind), by
			       * (enum mt_map_by), addr, len, old_addr, old_len,
			       * prot, flags, fd (zz), offset, error (errno, 0:
			       * it succeeded), n, n frames (as STACK's), then
			       * the file's path: a call that maps or unmaps
			       * memory (struct mt_mapcall) */
	MT_EXT_MALLOPT = 9,   /* ts (absolute), tid, call (enum mt_tune), param (zz),
			       * value (zz), result (zz), n, pc0, zz deltas...:
			       * a call that tunes the allocator (mallopt,
			       * malloc_trim) and its stack, held in the record
			       * (not a STACK record: no site of its own) */
	MT_EXT_CHILD = 10,    /* ts (absolute), pid (0: not known): the process
			       * started a child that is not traced (record
			       * without --follow-forks) */
	MT_EXT_SCAN = 11,     /* ts (absolute), complete (0: a read failed, no
			       * block is called lost), ns (the process held
			       * that long), scanned, roots (bytes), then why
			       * (text, when not complete): the leak scan of the
			       * process at its end (struct mt_scan_summary) */
	MT_EXT_LEAKS = 12,    /* kind (enum mt_leak_kind), n, key0, zz deltas...:
			       * blocks the scan found lost, named as ALLOC
			       * names them (an address, or a serial once
			       * compacted); the live blocks no LEAKS record
			       * names are reachable */
	MT_EXT_SAMPLED = 13,  /* mean (bytes): this process's allocations are
			       * sampled, one per MEAN bytes on average (a
			       * Poisson process along each thread's allocated
			       * bytes); its frees are those of the sampled
			       * blocks.  Before its first allocation. */
};

/* What the leak scan found a live block to be (memcheck's kinds). */
enum mt_leak_kind {
	MT_LEAK_DEFINITE = 0,  /* nothing points at it */
	MT_LEAK_INDIRECT = 1,  /* only lost blocks do */
	MT_LEAK_POSSIBLE = 2,  /* only pointers into its interior, or from possibly lost blocks */
	MT_LEAK_REACHABLE = 3, /* a pointer to its start from memory the program holds */
	MT_LEAK_KINDS
};

static const char *const mt_leak_kind_names[MT_LEAK_KINDS] = {
	"definite",
	"indirect",
	"possible",
	"reachable",
};

/* A leak scan's summary (MT_EXT_SCAN). */
struct mt_scan_summary {
	uint64_t ns, scanned, roots;
	uint32_t complete;
};

/* What an MMAP record is. */
enum mt_map_kind {
	MT_MAP_MMAP = 0,   /* ADDR: the mapping made (the result), LEN, PROT,
			    * FLAGS, FD, OFFSET as passed; OLD_ADDR: the hint */
	MT_MAP_MUNMAP = 1, /* ADDR, LEN as passed */
	MT_MAP_MREMAP = 2, /* OLD_ADDR, OLD_LEN -> ADDR (the result), LEN; FLAGS */
	MT_MAP_BRK = 3,	   /* the program break moved from OLD_ADDR (0: the
			    * reader's last one) to ADDR; LEN: what was asked
			    * (brk's address, or sbrk's increment as zz) */
	MT_MAP_BLOCK = 4,  /* the allocator gave the block ADDR (its key, as
			    * ALLOC's: an address, or a serial once compacted)
			    * a mapping of LEN bytes of its own, which ends
			    * with the block (shim: glibc's IS_MMAPPED chunks) */
	MT_MAP_KIND_COUNT
};

static const char *const mt_map_kind_names[MT_MAP_KIND_COUNT] = {
	"mmap", "munmap", "mremap", "brk", "block",
};

/* Who made a mapping call: the program (its own code or a library's), or
 * the allocator on its behalf (BPF: the stack's leaf lies in the
 * allocator's object; shim: a block glibc mapped, or a call the next
 * allocator made through the PLT while the shim was in it). */
enum mt_map_by {
	MT_MAP_BY_PROGRAM = 0,
	MT_MAP_BY_ALLOCATOR = 1,
};

struct mt_mapcall {
	uint32_t kind, by;
	int32_t prot, flags, fd, error;
	uint64_t addr, len, old_addr, old_len, offset;
};

/* What a MALLOPT record's call was.  mallopt(PARAM, VALUE) returns 1 on
 * success, 0 on error; malloc_trim(PAD) (PARAM 0, VALUE the pad) returns 1
 * if memory went back to the system. */
enum mt_tune {
	MT_TUNE_MALLOPT = 0,
	MT_TUNE_MALLOC_TRIM = 1,
};

/* The stream that holds embedded binaries rather than a process's records. */
#define MT_STREAM_OBJECTS 0xffffffffu

/* What an embedded object is. */
enum mt_object_kind {
	MT_OBJECT_ELF = 0,   /* the mapped file itself */
	MT_OBJECT_DEBUG = 1, /* its separate debug file (found by build-id) */
};

/* What an EXEC record says of the image that follows. */
enum mt_exec {
	MT_EXEC_TRACED,	  /* it will be traced: a process entry of its own follows */
	MT_EXEC_UNTRACED, /* it cannot be traced (WHY says why: a cleared
			   * environment, a static or set-user-ID program) */
	MT_EXEC_FAILED,	  /* the exec before this one returned: the image goes on */
};

/* The key a compact record's block has in place of an address. */
#define MT_SERIAL_KEY(n) ((n) | (1ull << 63))

/* The allocator entry points, in the order the report names them
 * (allocfns.h lists them): MT_FN_MALLOC, MT_FN_CALLOC... */
enum mt_fn {
#define MT_FN_ID(id, name, nargs, layout) MT_FN_##id,
	MT_ALLOC_FNS(MT_FN_ID) MT_FN_COUNT
};
#undef MT_FN_ID

static const char *const mt_fn_names[MT_FN_COUNT] = {
#define MT_FN_NAME(id, name, nargs, layout) name,
	MT_ALLOC_FNS(MT_FN_NAME)
#undef MT_FN_NAME
};

/* What a LOST record counts; every kind is shown in every report. */
enum mt_lost_kind {
	MT_LOST_BUFFER_FULL,   /* ring buffer had no room and the event was dropped */
	MT_LOST_MAP_FULL,      /* a BPF map or table was full */
	MT_LOST_MISSED_RETURN, /* an entry probe whose return was never seen */
	MT_LOST_STACK,	       /* a stack could not be captured */
	MT_LOST_CONSUMER_GONE, /* the recorder died; events after it were dropped */
	MT_LOST_WRITE_FAILED,  /* the file could not be written (disk full): the
				* events of the chunks that did not reach it */
	MT_LOST_SHIM_BUSY,     /* allocator calls the shim could not record: a
				* signal handler's, beyond the few a thread holds
				* back while it writes a record, or another
				* thread's while the shim was starting */
	/* Stacks the BPF backend's unwinder could not take whole (the event
	 * is kept, with the frames found): */
	MT_LOST_STACK_NO_TABLE,	 /* a frame in an object without unwind table */
	MT_LOST_STACK_FAULT,	 /* a stack word that could not be read */
	MT_LOST_STACK_TRUNCATED, /* deeper than the depth limit: marked truncated */
	MT_LOST_KIND_COUNT
};

static const char *const mt_lost_names[MT_LOST_KIND_COUNT] = {
	"buffer_full",	"map_full",  "missed_return",  "stack_error", "consumer_gone",
	"write_failed", "shim_busy", "stack_no_table", "stack_fault", "stack_truncated",
};

#define MT_MAX_FRAMES 128
/* A frame that is not an address: the last of a stack cut at the depth
 * limit (the BPF backend's unwinder), shown as "[truncated]". */
#define MT_FRAME_TRUNCATED 0xfffffffffffff001ull
/* Upper bound of an encoded record other than STACK, MODULE, PROCESS, MARKER. */
#define MT_REC_MAX_SMALL 64
#define MT_REC_MAX_STACK (1 + 10 + 10 + 10 * MT_MAX_FRAMES)

/* ---- varints ---------------------------------------------------------- */

static inline uint8_t *mt_put_uv(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* V in exactly MT_UV_WIDE bytes (a varint padded with continuation bytes,
 * which every decoder reads as V): a record whose size must not change
 * when its figures do. */
#define MT_UV_WIDE 10
static inline uint8_t *mt_put_uv_wide(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < MT_UV_WIDE - 1; i++) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *mt_put_sv(uint8_t *p, int64_t v)
{
	return mt_put_uv(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static inline uint8_t *mt_put_bytes(uint8_t *p, const void *s, size_t n)
{
	p = mt_put_uv(p, n);
	if (n) /* (S may be NULL then) */
		memcpy(p, s, n);
	return p + n;
}

/* ---- encoder ---------------------------------------------------------- */

struct mt_enc {
	uint64_t ts;	 /* time of the previous record */
	uint64_t ptr;	 /* previous pointer */
	uint64_t serial; /* allocations in compact form so far */
	uint32_t tid;	 /* thread of the previous records (0: none yet) */
};

static inline uint8_t *mt_enc_thread(struct mt_enc *e, uint8_t *p, uint32_t tid)
{
	if (tid == e->tid)
		return p;
	e->tid = tid;
	*p++ = MT_REC_THREAD;
	return mt_put_uv(p, tid);
}

static inline uint8_t *mt_enc_ts(struct mt_enc *e, uint8_t *p, uint64_t ts)
{
	/* Timestamps are per process monotonic, but records of two threads can
	 * reach the encoder out of clock order by a few ns: clamp, never go back. */
	uint64_t d = ts > e->ts ? ts - e->ts : 0;
	if (ts > e->ts)
		e->ts = ts;
	return mt_put_uv(p, d);
}

static inline uint8_t *mt_enc_alloc(struct mt_enc *e, uint8_t *p, int fn, uint64_t ts, uint64_t ptr,
				    uint64_t size, uint64_t stack)
{
	*p++ = (uint8_t)(MT_REC_ALLOC | (fn << 4));
	p = mt_enc_ts(e, p, ts);
	p = mt_put_uv(p, size);
	p = mt_put_sv(p, (int64_t)(ptr - e->ptr));
	e->ptr = ptr;
	return mt_put_uv(p, stack);
}

static inline uint8_t *mt_enc_free(struct mt_enc *e, uint8_t *p, uint64_t ts, uint64_t ptr)
{
	*p++ = MT_REC_FREE;
	p = mt_enc_ts(e, p, ts);
	p = mt_put_sv(p, (int64_t)(ptr - e->ptr));
	e->ptr = ptr;
	return p;
}

static inline uint8_t *mt_enc_realloc(struct mt_enc *e, uint8_t *p, int fn, uint64_t ts,
				      uint64_t old, uint64_t ptr, uint64_t size, uint64_t stack)
{
	*p++ = (uint8_t)(MT_REC_REALLOC | (fn << 4));
	p = mt_enc_ts(e, p, ts);
	p = mt_put_uv(p, size);
	p = mt_put_sv(p, (int64_t)(old - e->ptr));
	p = mt_put_sv(p, (int64_t)(ptr - old));
	e->ptr = ptr;
	return mt_put_uv(p, stack);
}

/* Compact forms: SERIAL is the block's allocation serial (1-based). */
static inline uint8_t *mt_enc_nalloc(struct mt_enc *e, uint8_t *p, int fn, uint64_t ts,
				     uint64_t size, uint64_t stack)
{
	*p++ = (uint8_t)(MT_REC_NALLOC | (fn << 4));
	p = mt_enc_ts(e, p, ts);
	p = mt_put_uv(p, size);
	e->serial++;
	return mt_put_uv(p, stack);
}

static inline uint8_t *mt_enc_nfree(struct mt_enc *e, uint8_t *p, uint64_t ts, uint64_t serial)
{
	*p++ = MT_REC_NFREE;
	p = mt_enc_ts(e, p, ts);
	return mt_put_uv(p, e->serial - serial);
}

static inline uint8_t *mt_enc_nrealloc(struct mt_enc *e, uint8_t *p, int fn, uint64_t ts,
				       uint64_t old_serial, uint64_t size, uint64_t stack)
{
	*p++ = (uint8_t)(MT_REC_NREALLOC | (fn << 4));
	p = mt_enc_ts(e, p, ts);
	p = mt_put_uv(p, size);
	p = mt_put_uv(p, e->serial - old_serial);
	e->serial++;
	return mt_put_uv(p, stack);
}

/* The frames of a stack (STACK, and the records that hold a stack of their
 * own: MALLOPT, MMAP): N return addresses, the first and then zigzag
 * deltas; mt_frames_len is how many bytes mt_put_frames writes. */
static inline size_t mt_frames_len(const uint64_t *pcs, unsigned n)
{
	size_t len = 0;
	uint64_t prev = 0;
	for (unsigned i = 0; i < n; i++) {
		int64_t d = (int64_t)(pcs[i] - prev);
		for (uint64_t z = ((uint64_t)d << 1) ^ (uint64_t)(d >> 63); z >= 0x80; z >>= 7)
			len++;
		len++;
		prev = pcs[i];
	}
	return len;
}

static inline uint8_t *mt_put_frames(uint8_t *p, const uint64_t *pcs, unsigned n)
{
	uint64_t prev = 0;
	for (unsigned i = 0; i < n; i++) {
		p = mt_put_sv(p, (int64_t)(pcs[i] - prev));
		prev = pcs[i];
	}
	return p;
}

static inline uint8_t *mt_enc_stack(uint8_t *p, uint64_t id, const uint64_t *pcs, unsigned n)
{
	*p++ = MT_REC_STACK;
	p = mt_put_uv(p, id);
	p = mt_put_uv(p, n);
	return mt_put_frames(p, pcs, n);
}

static inline uint8_t *mt_enc_module(uint8_t *p, uint64_t bias, uint64_t start, uint64_t end,
				     const char *path, size_t pathlen, const uint8_t *build_id,
				     size_t idlen)
{
	*p++ = MT_REC_MODULE;
	p = mt_put_uv(p, bias);
	p = mt_put_uv(p, start);
	p = mt_put_uv(p, end);
	p = mt_put_bytes(p, path, pathlen);
	return mt_put_bytes(p, build_id, idlen);
}

/* argv is the NUL-separated blob of /proc/PID/cmdline. */
static inline uint8_t *mt_enc_process(struct mt_enc *e, uint8_t *p, uint32_t pid, uint32_t ppid,
				      uint64_t unix_ns, uint64_t mono_ns, const char *backend,
				      const char *exe, size_t exelen, const char *argv,
				      size_t argvlen)
{
	*p++ = MT_REC_PROCESS;
	p = mt_put_uv(p, pid);
	p = mt_put_uv(p, ppid);
	p = mt_put_uv(p, unix_ns);
	p = mt_put_uv(p, mono_ns);
	e->ts = mono_ns;
	p = mt_put_bytes(p, backend, strlen(backend));
	p = mt_put_bytes(p, exe, exelen);
	return mt_put_bytes(p, argv, argvlen);
}

static inline uint8_t *mt_enc_marker(struct mt_enc *e, uint8_t *p, uint64_t ts, uint64_t value,
				     const char *text, size_t len)
{
	*p++ = MT_REC_MARKER;
	p = mt_enc_ts(e, p, ts);
	p = mt_put_uv(p, value);
	return mt_put_bytes(p, text, len);
}

static inline uint8_t *mt_enc_lost(uint8_t *p, unsigned kind, uint64_t count)
{
	*p++ = MT_REC_LOST;
	p = mt_put_uv(p, kind);
	return mt_put_uv(p, count);
}

static inline uint8_t *mt_enc_culled(uint8_t *p, uint64_t stack, uint64_t allocs, uint64_t bytes,
				     uint64_t temporary)
{
	*p++ = MT_REC_CULLED;
	p = mt_put_uv(p, stack);
	p = mt_put_uv(p, allocs);
	p = mt_put_uv(p, bytes);
	return mt_put_uv(p, temporary);
}

/* The start of an EXT record of kind EXT: its tag and kind, the length of
 * its body (the HLEN bytes of HEAD, then the REST the caller writes after
 * them), and HEAD. */
static inline uint8_t *mt_put_ext(uint8_t *p, enum mt_ext ext, const uint8_t *head, size_t hlen,
				  size_t rest)
{
	*p++ = MT_REC_EXT;
	p = mt_put_uv(p, ext);
	p = mt_put_uv(p, hlen + rest);
	memcpy(p, head, hlen);
	return p + hlen;
}

static inline uint8_t *mt_enc_peak(uint8_t *p, uint64_t ts, uint64_t bytes, uint64_t count)
{
	uint8_t body[32], *b = body;
	b = mt_put_uv(b, ts);
	b = mt_put_uv(b, bytes);
	b = mt_put_uv(b, count);
	return mt_put_ext(p, MT_EXT_PEAK, body, (size_t)(b - body), 0);
}

static inline uint8_t *mt_enc_allocator(uint8_t *p, uint64_t stack, const char *path, size_t len)
{
	uint8_t head[16], *h = mt_put_uv(head, stack);
	p = mt_put_ext(p, MT_EXT_ALLOCATOR, head, (size_t)(h - head), len);
	memcpy(p, path, len);
	return p + len;
}

static inline uint8_t *mt_enc_main(uint8_t *p)
{
	*p++ = MT_REC_EXT;
	p = mt_put_uv(p, MT_EXT_MAIN);
	return mt_put_uv(p, 0);
}

/* At most MT_REC_MAX_SMALL bytes. */
static inline uint8_t *mt_enc_sampled(uint8_t *p, uint64_t mean)
{
	uint8_t body[16], *b = mt_put_uv(body, mean);
	return mt_put_ext(p, MT_EXT_SAMPLED, body, (size_t)(b - body), 0);
}

/* At most 64 + PATHLEN + WHYLEN bytes; absolute time. */
static inline uint8_t *mt_enc_exec(uint8_t *p, uint64_t ts, enum mt_exec outcome, const char *path,
				   size_t pathlen, const char *why, size_t whylen)
{
	uint8_t head[32], *h = mt_put_uv(head, ts);
	h = mt_put_uv(h, (uint64_t)outcome);
	h = mt_put_uv(h, pathlen);
	p = mt_put_ext(p, MT_EXT_EXEC, head, (size_t)(h - head), pathlen + whylen);
	memcpy(p, path, pathlen);
	p += pathlen;
	memcpy(p, why, whylen);
	return p + whylen;
}

/* At most MT_REC_MAX_SMALL bytes; absolute time. */
static inline uint8_t *mt_enc_child(uint8_t *p, uint64_t ts, uint64_t pid)
{
	uint8_t body[24], *b = mt_put_uv(body, ts);
	b = mt_put_uv(b, pid);
	return mt_put_ext(p, MT_EXT_CHILD, body, (size_t)(b - body), 0);
}

/* NAME: glibc, jemalloc, tcmalloc, mimalloc or unknown; PATH: its object. */
static inline uint8_t *mt_enc_heap(uint8_t *p, const char *name, size_t nlen, const char *path,
				   size_t plen)
{
	uint8_t head[16], *h = mt_put_uv(head, nlen);
	p = mt_put_ext(p, MT_EXT_HEAP, head, (size_t)(h - head), nlen + plen);
	memcpy(p, name, nlen);
	p += nlen;
	memcpy(p, path, plen);
	return p + plen;
}

/* The head of an OBJECT record whose DLEN bytes of data the caller copies
 * right after it: at most 48 + BLEN + PLEN bytes. */
static inline uint8_t *mt_enc_object_head(uint8_t *p, enum mt_object_kind kind, uint64_t size,
					  uint64_t offset, const uint8_t *build_id, size_t blen,
					  const char *path, size_t plen, size_t dlen)
{
	uint8_t head[48], *h = mt_put_uv(head, (uint64_t)kind);
	h = mt_put_uv(h, size);
	h = mt_put_uv(h, offset);
	h = mt_put_uv(h, blen);
	uint8_t plen_bytes[10];
	size_t plen_len = (size_t)(mt_put_uv(plen_bytes, plen) - plen_bytes);
	p = mt_put_ext(p, MT_EXT_OBJECT, head, (size_t)(h - head), blen + plen_len + plen + dlen);
	memcpy(p, build_id, blen);
	p += blen;
	return mt_put_bytes(p, path, plen);
}

/* A sample of a process's memory (MT_EXT_RSS), in bytes. */
struct mt_rss {
	uint64_t vm_size, vm_data, rss, anon, file, shmem, ram;
	uint64_t ring; /* memtrace's ring, resident in the process: not in rss, shmem */
};
#define MT_REC_MAX_RSS 112

/* At most MT_REC_MAX_RSS bytes; absolute time. */
static inline uint8_t *mt_enc_rss(uint8_t *p, uint64_t ts, const struct mt_rss *m)
{
	uint8_t body[100], *b = mt_put_uv(body, ts);
	b = mt_put_uv(b, m->vm_size);
	b = mt_put_uv(b, m->vm_data);
	b = mt_put_uv(b, m->rss);
	b = mt_put_uv(b, m->anon);
	b = mt_put_uv(b, m->file);
	b = mt_put_uv(b, m->shmem);
	b = mt_put_uv(b, m->ram);
	b = mt_put_uv(b, m->ring);
	return mt_put_ext(p, MT_EXT_RSS, body, (size_t)(b - body), 0);
}

/* A call that tunes the allocator (MT_EXT_MALLOPT); absolute time. */
struct mt_mallopt {
	uint32_t tid;  /* the thread that called (the record carries its own) */
	uint32_t call; /* enum mt_tune */
	int64_t param, value, result;
};
#define MT_REC_MAX_MALLOPT (MT_REC_MAX_STACK + 64)

/* At most MT_REC_MAX_MALLOPT bytes (N <= MT_MAX_FRAMES). */
static inline uint8_t *mt_enc_mallopt(uint8_t *p, uint64_t ts, const struct mt_mallopt *m,
				      const uint64_t *pcs, unsigned n)
{
	uint8_t head[64], *h = mt_put_uv(head, ts);
	h = mt_put_uv(h, m->tid);
	h = mt_put_uv(h, m->call);
	h = mt_put_sv(h, m->param);
	h = mt_put_sv(h, m->value);
	h = mt_put_sv(h, m->result);
	h = mt_put_uv(h, n);
	p = mt_put_ext(p, MT_EXT_MALLOPT, head, (size_t)(h - head), mt_frames_len(pcs, n));
	return mt_put_frames(p, pcs, n);
}

/* At most 64 + LEN bytes; absolute time. */
static inline uint8_t *mt_enc_scan(uint8_t *p, uint64_t ts, const struct mt_scan_summary *s,
				   const char *why, size_t len)
{
	uint8_t head[64], *h = mt_put_uv(head, ts);
	h = mt_put_uv(h, s->complete);
	h = mt_put_uv(h, s->ns);
	h = mt_put_uv(h, s->scanned);
	h = mt_put_uv(h, s->roots);
	p = mt_put_ext(p, MT_EXT_SCAN, head, (size_t)(h - head), len);
	memcpy(p, why, len);
	return p + len;
}

/* At most MT_REC_MAX_LEAKS bytes (N <= MT_MAX_FRAMES keys). */
#define MT_REC_MAX_LEAKS (MT_REC_MAX_STACK + 16)
static inline uint8_t *mt_enc_leaks(uint8_t *p, enum mt_leak_kind kind, const uint64_t *keys,
				    unsigned n)
{
	uint8_t head[16], *h = mt_put_uv(head, (uint64_t)kind);
	h = mt_put_uv(h, n);
	p = mt_put_ext(p, MT_EXT_LEAKS, head, (size_t)(h - head), mt_frames_len(keys, n));
	return mt_put_frames(p, keys, n);
}

/* At most 120 + MT_REC_MAX_STACK + PATHLEN bytes; absolute time.  The
 * stack goes in the record itself, not through a STACK record's id: the
 * calls are few, and their stacks are no allocation sites. */
static inline uint8_t *mt_enc_mmap(uint8_t *p, uint64_t ts, const struct mt_mapcall *m,
				   const uint64_t *pcs, unsigned n, const char *path,
				   size_t pathlen)
{
	if (n > MT_MAX_FRAMES)
		n = MT_MAX_FRAMES;
	uint8_t head[128], *b = mt_put_uv(head, ts);
	b = mt_put_uv(b, m->kind);
	b = mt_put_uv(b, m->by);
	b = mt_put_uv(b, m->addr);
	b = mt_put_uv(b, m->len);
	b = mt_put_uv(b, m->old_addr);
	b = mt_put_uv(b, m->old_len);
	b = mt_put_uv(b, (uint32_t)m->prot);
	b = mt_put_uv(b, (uint32_t)m->flags);
	b = mt_put_sv(b, m->fd);
	b = mt_put_uv(b, m->offset);
	b = mt_put_uv(b, (uint32_t)m->error);
	b = mt_put_uv(b, n);
	p = mt_put_ext(p, MT_EXT_MMAP, head, (size_t)(b - head), mt_frames_len(pcs, n) + pathlen);
	p = mt_put_frames(p, pcs, n);
	memcpy(p, path, pathlen);
	return p + pathlen;
}

/* Absolute time: the recorder appends it without knowing the stream's state. */
static inline uint8_t *mt_enc_exit(uint8_t *p, uint64_t ts, int64_t status)
{
	*p++ = MT_REC_EXIT;
	p = mt_put_uv(p, ts);
	return mt_put_sv(p, status);
}

/* ---- decoder ---------------------------------------------------------- */

struct mt_str {
	const char *s; /* not NUL-terminated */
	size_t len;
};

struct mt_event {
	int type, fn, ext;
	uint64_t ts; /* absolute monotonic ns */
	uint32_t tid;
	uint64_t ptr, old_ptr, size, stack;
	/* STACK */
	unsigned nframes;
	uint64_t frames[MT_MAX_FRAMES];
	/* MODULE */
	uint64_t bias, start, end;
	struct mt_str path, build_id;
	/* PROCESS */
	uint32_t pid, ppid;
	uint64_t unix_ns;
	struct mt_str backend, exe, argv;
	/* EXT_RSS */
	struct mt_rss rss;
	/* EXT_MALLOPT (and frames, nframes) */
	struct mt_mallopt tune;
	/* EXT_MMAP (and ts, stack, path) */
	struct mt_mapcall map;
	/* EXT_SCAN (and ts, text why); EXT_LEAKS: the kind in value, the
	 * blocks' keys in frames */
	struct mt_scan_summary scan;
	/* MARKER, LOST, CULLED, EXIT; EXT_EXEC: value the outcome, path, text why */
	uint64_t value, count, bytes, temporary;
	int64_t status;
	struct mt_str text;
};

struct mt_dec {
	const uint8_t *p, *end;
	struct mt_enc st;
};

static inline int mt_get_uv(struct mt_dec *d, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (d->p >= d->end)
			return -1;
		uint8_t b = *d->p++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

static inline int mt_get_sv(struct mt_dec *d, int64_t *v)
{
	uint64_t u;
	if (mt_get_uv(d, &u))
		return -1;
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

static inline int mt_get_str(struct mt_dec *d, struct mt_str *s)
{
	uint64_t n;
	if (mt_get_uv(d, &n) || n > (uint64_t)(d->end - d->p))
		return -1;
	s->s = (const char *)d->p;
	s->len = n;
	d->p += n;
	return 0;
}

static inline int mt_get_ts(struct mt_dec *d, struct mt_event *ev)
{
	uint64_t delta;
	if (mt_get_uv(d, &delta))
		return -1;
	d->st.ts += delta;
	ev->ts = d->st.ts;
	return 0;
}

/* N frames as mt_put_frames wrote them, into EV's (N <= MT_MAX_FRAMES). */
static inline int mt_get_frames(struct mt_dec *d, struct mt_event *ev, unsigned n)
{
	uint64_t prev = 0;
	for (unsigned i = 0; i < n; i++) {
		int64_t s;
		if (mt_get_sv(d, &s))
			return -1;
		prev += (uint64_t)s;
		ev->frames[i] = prev;
	}
	ev->nframes = n;
	return 0;
}

/* Decode one record.  Returns 1 with *ev filled, 0 at the end of the input,
 * -1 on a malformed record (d->p is left at its start). */
static inline int mt_dec_next(struct mt_dec *d, struct mt_event *ev)
{
	const uint8_t *start = d->p;
	uint64_t u, n;
	int64_t s, s2;

again:
	if (d->p >= d->end)
		return 0;
	start = d->p;
	uint8_t tag = *d->p++;
	ev->type = tag & 15;
	ev->fn = tag >> 4;
	ev->tid = d->st.tid;
	switch (ev->type) {
	case MT_REC_THREAD:
		if (mt_get_uv(d, &u) || u > UINT32_MAX)
			goto bad;
		d->st.tid = (uint32_t)u;
		goto again;
	case MT_REC_ALLOC:
		if (ev->fn >= MT_FN_COUNT || mt_get_ts(d, ev) || mt_get_uv(d, &ev->size) ||
		    mt_get_sv(d, &s) || mt_get_uv(d, &ev->stack))
			goto bad;
		d->st.ptr += (uint64_t)s;
		ev->ptr = d->st.ptr;
		return 1;
	case MT_REC_FREE:
		if (mt_get_ts(d, ev) || mt_get_sv(d, &s))
			goto bad;
		d->st.ptr += (uint64_t)s;
		ev->ptr = d->st.ptr;
		return 1;
	case MT_REC_REALLOC:
		if (ev->fn >= MT_FN_COUNT || mt_get_ts(d, ev) || mt_get_uv(d, &ev->size) ||
		    mt_get_sv(d, &s) || mt_get_sv(d, &s2) || mt_get_uv(d, &ev->stack))
			goto bad;
		ev->old_ptr = d->st.ptr + (uint64_t)s;
		ev->ptr = ev->old_ptr + (uint64_t)s2;
		d->st.ptr = ev->ptr;
		return 1;
	case MT_REC_STACK: {
		if (mt_get_uv(d, &ev->stack) || mt_get_uv(d, &n) || n > MT_MAX_FRAMES)
			goto bad;
		if (mt_get_frames(d, ev, (unsigned)n))
			goto bad;
		return 1;
	}
	case MT_REC_MODULE:
		if (mt_get_uv(d, &ev->bias) || mt_get_uv(d, &ev->start) || mt_get_uv(d, &ev->end) ||
		    mt_get_str(d, &ev->path) || mt_get_str(d, &ev->build_id))
			goto bad;
		return 1;
	case MT_REC_PROCESS:
		if (mt_get_uv(d, &u) || mt_get_uv(d, &n) || mt_get_uv(d, &ev->unix_ns) ||
		    mt_get_uv(d, &ev->ts) || mt_get_str(d, &ev->backend) ||
		    mt_get_str(d, &ev->exe) || mt_get_str(d, &ev->argv))
			goto bad;
		ev->pid = (uint32_t)u;
		ev->ppid = (uint32_t)n;
		d->st.ts = ev->ts;
		return 1;
	case MT_REC_MARKER:
		if (mt_get_ts(d, ev) || mt_get_uv(d, &ev->value) || mt_get_str(d, &ev->text))
			goto bad;
		return 1;
	case MT_REC_LOST:
		if (mt_get_uv(d, &ev->value) || mt_get_uv(d, &ev->count))
			goto bad;
		return 1;
	case MT_REC_CULLED:
		if (mt_get_uv(d, &ev->stack) || mt_get_uv(d, &ev->count) ||
		    mt_get_uv(d, &ev->bytes) || mt_get_uv(d, &ev->temporary))
			goto bad;
		return 1;
	case MT_REC_EXIT:
		if (mt_get_uv(d, &ev->ts) || mt_get_sv(d, &ev->status))
			goto bad;
		return 1;
	case MT_REC_MODULES_RESET:
		return 1;
	case MT_REC_EXT: {
		struct mt_str body;
		if (mt_get_uv(d, &u) || mt_get_str(d, &body))
			goto bad;
		ev->ext = (int)u;
		struct mt_dec b = { (const uint8_t *)body.s, (const uint8_t *)body.s + body.len };
		if (u == MT_EXT_PEAK) {
			if (mt_get_uv(&b, &ev->ts) || mt_get_uv(&b, &ev->bytes) ||
			    mt_get_uv(&b, &ev->count))
				goto bad;
			return 1;
		}
		if (u == MT_EXT_ALLOCATOR) {
			if (mt_get_uv(&b, &ev->stack))
				goto bad;
			ev->path.s = (const char *)b.p;
			ev->path.len = (size_t)(b.end - b.p);
			return 1;
		}
		if (u == MT_EXT_MAIN)
			return 1;
		if (u == MT_EXT_SAMPLED) {
			/* (at most 1 TB: a block's weight times its size
			 * stays below twice the size plus the mean) */
			if (mt_get_uv(&b, &ev->value) || !ev->value || ev->value > (1ull << 40))
				goto bad;
			return 1;
		}
		if (u == MT_EXT_CHILD) {
			if (mt_get_uv(&b, &ev->ts) || mt_get_uv(&b, &ev->value))
				goto bad;
			return 1;
		}
		if (u == MT_EXT_EXEC) {
			uint64_t plen;
			if (mt_get_uv(&b, &ev->ts) || mt_get_uv(&b, &ev->value) ||
			    mt_get_uv(&b, &plen) || plen > (uint64_t)(b.end - b.p))
				goto bad;
			ev->path.s = (const char *)b.p;
			ev->path.len = (size_t)plen;
			ev->text.s = (const char *)b.p + plen;
			ev->text.len = (size_t)(b.end - b.p) - (size_t)plen;
			return 1;
		}
		if (u == MT_EXT_HEAP) {
			if (mt_get_str(&b, &ev->text))
				goto bad;
			ev->path.s = (const char *)b.p;
			ev->path.len = (size_t)(b.end - b.p);
			return 1;
		}
		if (u == MT_EXT_RSS) {
			if (mt_get_uv(&b, &ev->ts) || mt_get_uv(&b, &ev->rss.vm_size) ||
			    mt_get_uv(&b, &ev->rss.vm_data) || mt_get_uv(&b, &ev->rss.rss) ||
			    mt_get_uv(&b, &ev->rss.anon) || mt_get_uv(&b, &ev->rss.file) ||
			    mt_get_uv(&b, &ev->rss.shmem) || mt_get_uv(&b, &ev->rss.ram))
				goto bad;
			/* recordings before the ring was taken out have no ring */
			ev->rss.ring = 0;
			if (b.p < b.end && mt_get_uv(&b, &ev->rss.ring))
				goto bad;
			return 1;
		}
		if (u == MT_EXT_MALLOPT) {
			uint64_t call, tid;
			if (mt_get_uv(&b, &ev->ts) || mt_get_uv(&b, &tid) || tid > UINT32_MAX ||
			    mt_get_uv(&b, &call) || call > UINT32_MAX ||
			    mt_get_sv(&b, &ev->tune.param) || mt_get_sv(&b, &ev->tune.value) ||
			    mt_get_sv(&b, &ev->tune.result) || mt_get_uv(&b, &n) ||
			    n > MT_MAX_FRAMES)
				goto bad;
			ev->tune.call = (uint32_t)call;
			ev->tune.tid = ev->tid = (uint32_t)tid;
			if (mt_get_frames(&b, ev, (unsigned)n))
				goto bad;
			return 1;
		}
		if (u == MT_EXT_MMAP) {
			uint64_t k, by, prot, flags, err;
			int64_t fd;
			if (mt_get_uv(&b, &ev->ts) || mt_get_uv(&b, &k) || mt_get_uv(&b, &by) ||
			    mt_get_uv(&b, &ev->map.addr) || mt_get_uv(&b, &ev->map.len) ||
			    mt_get_uv(&b, &ev->map.old_addr) || mt_get_uv(&b, &ev->map.old_len) ||
			    mt_get_uv(&b, &prot) || mt_get_uv(&b, &flags) || mt_get_sv(&b, &fd) ||
			    mt_get_uv(&b, &ev->map.offset) || mt_get_uv(&b, &err) ||
			    mt_get_uv(&b, &n) || k >= MT_MAP_KIND_COUNT ||
			    by > MT_MAP_BY_ALLOCATOR || n > MT_MAX_FRAMES)
				goto bad;
			if (mt_get_frames(&b, ev, (unsigned)n))
				goto bad;
			ev->map.kind = (uint32_t)k;
			ev->map.by = (uint32_t)by;
			ev->map.prot = (int32_t)(uint32_t)prot;
			ev->map.flags = (int32_t)(uint32_t)flags;
			ev->map.fd = (int32_t)fd;
			ev->map.error = (int32_t)(uint32_t)err;
			ev->path.s = (const char *)b.p;
			ev->path.len = (size_t)(b.end - b.p);
			return 1;
		}
		if (u == MT_EXT_OBJECT) {
			/* value: kind, size: the whole object's, ptr: this
			 * piece's offset in it, text: the piece */
			if (mt_get_uv(&b, &ev->value) || mt_get_uv(&b, &ev->size) ||
			    mt_get_uv(&b, &ev->ptr) || mt_get_str(&b, &ev->build_id) ||
			    mt_get_str(&b, &ev->path) || ev->ptr > ev->size ||
			    (uint64_t)(b.end - b.p) > ev->size - ev->ptr)
				goto bad;
			ev->text.s = (const char *)b.p;
			ev->text.len = (size_t)(b.end - b.p);
			return 1;
		}
		if (u == MT_EXT_SCAN) {
			uint64_t complete;
			if (mt_get_uv(&b, &ev->ts) || mt_get_uv(&b, &complete) || complete > 1 ||
			    mt_get_uv(&b, &ev->scan.ns) || mt_get_uv(&b, &ev->scan.scanned) ||
			    mt_get_uv(&b, &ev->scan.roots))
				goto bad;
			ev->scan.complete = (uint32_t)complete;
			ev->text.s = (const char *)b.p;
			ev->text.len = (size_t)(b.end - b.p);
			return 1;
		}
		if (u == MT_EXT_LEAKS) {
			if (mt_get_uv(&b, &ev->value) || ev->value >= MT_LEAK_KINDS ||
			    mt_get_uv(&b, &n) || n > MT_MAX_FRAMES ||
			    mt_get_frames(&b, ev, (unsigned)n))
				goto bad;
			return 1;
		}
		goto again; /* a kind from a later version: step over it */
	}
	case MT_REC_NALLOC:
		if (ev->fn >= MT_FN_COUNT || mt_get_ts(d, ev) || mt_get_uv(d, &ev->size) ||
		    mt_get_uv(d, &ev->stack))
			goto bad;
		ev->type = MT_REC_ALLOC;
		ev->ptr = MT_SERIAL_KEY(++d->st.serial);
		return 1;
	case MT_REC_NFREE:
		if (mt_get_ts(d, ev) || mt_get_uv(d, &u) || u > d->st.serial)
			goto bad;
		ev->type = MT_REC_FREE;
		ev->ptr = MT_SERIAL_KEY(d->st.serial - u);
		return 1;
	case MT_REC_NREALLOC:
		if (ev->fn >= MT_FN_COUNT || mt_get_ts(d, ev) || mt_get_uv(d, &ev->size) ||
		    mt_get_uv(d, &u) || u > d->st.serial || mt_get_uv(d, &ev->stack))
			goto bad;
		ev->type = MT_REC_REALLOC;
		ev->old_ptr = MT_SERIAL_KEY(d->st.serial - u);
		ev->ptr = MT_SERIAL_KEY(++d->st.serial);
		return 1;
	default:
		goto bad;
	}
bad:
	d->p = start;
	return -1;
}

/* ---- re-encoding ------------------------------------------------------ */

/* Room a decoded record other than ALLOC/FREE/REALLOC needs when re-encoded. */
static inline size_t mt_event_size(const struct mt_event *ev)
{
	return MT_REC_MAX_STACK + 64 + ev->path.len + ev->build_id.len + ev->exe.len +
	       ev->argv.len + ev->backend.len + ev->text.len;
}

/* Re-encodes a decoded record that is not an allocation event into the
 * stream state E (filters such as culling pass these through unchanged). */
static inline uint8_t *mt_enc_passthrough(struct mt_enc *e, uint8_t *w, const struct mt_event *ev)
{
	switch (ev->type) {
	case MT_REC_PROCESS: {
		char backend[64];
		size_t n = ev->backend.len < 63 ? ev->backend.len : 63;
		memcpy(backend, ev->backend.s, n);
		backend[n] = 0;
		return mt_enc_process(e, w, ev->pid, ev->ppid, ev->unix_ns, ev->ts, backend,
				      ev->exe.s, ev->exe.len, ev->argv.s, ev->argv.len);
	}
	case MT_REC_MARKER:
		return mt_enc_marker(e, w, ev->ts, ev->value, ev->text.s, ev->text.len);
	case MT_REC_STACK:
		return mt_enc_stack(w, ev->stack, ev->frames, ev->nframes);
	case MT_REC_MODULE:
		return mt_enc_module(w, ev->bias, ev->start, ev->end, ev->path.s, ev->path.len,
				     (const uint8_t *)ev->build_id.s, ev->build_id.len);
	case MT_REC_LOST:
		return mt_enc_lost(w, (unsigned)ev->value, ev->count);
	case MT_REC_CULLED:
		return mt_enc_culled(w, ev->stack, ev->count, ev->bytes, ev->temporary);
	case MT_REC_EXIT:
		return mt_enc_exit(w, ev->ts, ev->status);
	case MT_REC_MODULES_RESET:
		*w++ = MT_REC_MODULES_RESET;
		return w;
	case MT_REC_EXT:
		if (ev->ext == MT_EXT_ALLOCATOR)
			return mt_enc_allocator(w, ev->stack, ev->path.s, ev->path.len);
		if (ev->ext == MT_EXT_MAIN)
			return mt_enc_main(w);
		if (ev->ext == MT_EXT_SAMPLED)
			return mt_enc_sampled(w, ev->value);
		if (ev->ext == MT_EXT_CHILD)
			return mt_enc_child(w, ev->ts, ev->value);
		if (ev->ext == MT_EXT_EXEC)
			return mt_enc_exec(w, ev->ts, (enum mt_exec)ev->value, ev->path.s,
					   ev->path.len, ev->text.s, ev->text.len);
		if (ev->ext == MT_EXT_HEAP)
			return mt_enc_heap(w, ev->text.s, ev->text.len, ev->path.s, ev->path.len);
		if (ev->ext == MT_EXT_MALLOPT)
			return mt_enc_mallopt(w, ev->ts, &ev->tune, ev->frames, ev->nframes);
		if (ev->ext == MT_EXT_RSS)
			return mt_enc_rss(w, ev->ts, &ev->rss);
		if (ev->ext == MT_EXT_MMAP)
			return mt_enc_mmap(w, ev->ts, &ev->map, ev->frames, ev->nframes, ev->path.s,
					   ev->path.len);
		if (ev->ext == MT_EXT_SCAN)
			return mt_enc_scan(w, ev->ts, &ev->scan, ev->text.s, ev->text.len);
		if (ev->ext == MT_EXT_LEAKS)
			return mt_enc_leaks(w, (enum mt_leak_kind)ev->value, ev->frames,
					    ev->nframes);
		return mt_enc_peak(w, ev->ts, ev->bytes, ev->count);
	default:
		return w;
	}
}

#endif
