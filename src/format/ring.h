/*
 * ring.h - the buffer that the shim writes and `memtrace record` reads.
 *
 * A memfd holds a header page and a power-of-two data area.  Both sides map
 * the data area twice, back to back, so every record can be written and read
 * as one contiguous run however it straddles the end.  The producer (the
 * traced process, holding its channel lock) advances `head` after each whole
 * record; the consumer copies [tail, head) out and advances `tail`.  Because
 * the consumer holds its own mapping, whatever the traced process committed
 * survives its death, SIGKILL included.  To the recorder, the header and
 * everything in the data area are untrusted input (collect/rings.c).
 */
#ifndef MEMTRACE_RING_H
#define MEMTRACE_RING_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>

#include "codec.h"

#define MT_RING_MAGIC 0x31474e4952544dull /* "MTRING1" */
#define MT_RING_HDR 4096ull
#define MT_RING_DEFAULT_SIZE (32ull << 20)
/* The recorder maps no larger ring (a client could ask for any size). */
#define MT_RING_MAX_SIZE (1ull << 30)
/* The recorder maps only a memfd that can no longer change size: one that
 * shrank under its mapping would kill it with SIGBUS. */
#define MT_RING_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)
/* The secret `memtrace record` puts after '#' in MEMTRACE_CONNECT, in hex;
 * only processes that inherited it from the command know it. */
#define MT_TOKEN_LEN 16

struct mt_ring_hdr {
	uint64_t magic;
	uint64_t size; /* of the data area, a power of two */
	uint32_t pid, ppid;
	_Alignas(64) volatile uint64_t head;
	_Alignas(64) volatile uint64_t tail;
	_Alignas(64) volatile uint64_t lost[MT_LOST_KIND_COUNT];
};

/* The hello message sent over the recorder's socket, with the memfd.  The
 * recorder trusts none of it: the peer's pid and uid are the kernel's
 * (SO_PEERCRED), the size must match the sealed memfd's. */
struct mt_hello {
	uint64_t magic;
	uint32_t pid, ppid;
	uint64_t size;
	uint8_t token[MT_TOKEN_LEN];
};

/* The shim maps its ring with the system calls themselves (MT_RING_MMAP,
 * MT_RING_MUNMAP), not through its own hooks of mmap and munmap. */
#ifndef MT_RING_MMAP
#define MT_RING_MMAP mmap
#define MT_RING_MUNMAP munmap
#endif

/* Maps the ring in FD (header + SIZE data bytes) with the data area doubled.
 * Returns the header or NULL. */
static inline struct mt_ring_hdr *mt_ring_map(int fd, uint64_t size)
{
	uint8_t *base = MT_RING_MMAP(NULL, MT_RING_HDR + 2 * size, PROT_NONE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	if (MT_RING_MMAP(base, MT_RING_HDR + size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 fd, 0) == MAP_FAILED ||
	    MT_RING_MMAP(base + MT_RING_HDR + size, size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, (off_t)MT_RING_HDR) == MAP_FAILED) {
		MT_RING_MUNMAP(base, MT_RING_HDR + 2 * size);
		return NULL;
	}
	return (struct mt_ring_hdr *)base;
}

static inline void mt_ring_unmap(struct mt_ring_hdr *h, uint64_t size)
{
	MT_RING_MUNMAP(h, MT_RING_HDR + 2 * size);
}

static inline uint8_t *mt_ring_data(struct mt_ring_hdr *h)
{
	return (uint8_t *)h + MT_RING_HDR;
}

#endif
