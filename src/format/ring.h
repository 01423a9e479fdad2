/*
 * ring.h - the buffer that the shim writes and `memtrace record` reads.
 *
 * A memfd holds a header page and a power-of-two data area.  Both sides map
 * the data area twice, back to back, so every record can be written and read
 * as one contiguous run however it straddles the end.  The producer (the
 * traced process, holding its channel lock) advances `head` after each whole
 * record; the consumer copies [tail, head) out and advances `tail`.  Because
 * the consumer holds its own mapping, whatever the traced process committed
 * survives its death, SIGKILL included.
 */
#ifndef MEMTRACE_RING_H
#define MEMTRACE_RING_H

#include <stdint.h>
#include <sys/mman.h>

#include "codec.h"

#define MT_RING_MAGIC 0x31474e4952544dull /* "MTRING1" */
#define MT_RING_HDR 4096ull
#define MT_RING_DEFAULT_SIZE (32ull << 20)

struct mt_ring_hdr {
	uint64_t magic;
	uint64_t size; /* of the data area, a power of two */
	uint32_t pid, ppid;
	_Alignas(64) volatile uint64_t head;
	_Alignas(64) volatile uint64_t tail;
	_Alignas(64) volatile uint64_t lost[MT_LOST_KIND_COUNT];
};

/* The hello message sent over the recorder's socket, with the memfd. */
struct mt_hello {
	uint64_t magic;
	uint32_t pid, ppid;
	uint64_t size;
};

/* Maps the ring in FD (header + SIZE data bytes) with the data area doubled.
 * Returns the header or NULL. */
static inline struct mt_ring_hdr *mt_ring_map(int fd, uint64_t size)
{
	uint8_t *base = mmap(NULL, MT_RING_HDR + 2 * size, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	if (mmap(base, MT_RING_HDR + size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
		    MAP_FAILED ||
	    mmap(base + MT_RING_HDR + size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, (off_t)MT_RING_HDR) == MAP_FAILED) {
		munmap(base, MT_RING_HDR + 2 * size);
		return NULL;
	}
	return (struct mt_ring_hdr *)base;
}

static inline void mt_ring_unmap(struct mt_ring_hdr *h, uint64_t size)
{
	munmap(h, MT_RING_HDR + 2 * size);
}

static inline uint8_t *mt_ring_data(struct mt_ring_hdr *h)
{
	return (uint8_t *)h + MT_RING_HDR;
}

#endif
