/*
 * leakscan.h - which of a process's live blocks anything still points at:
 * a conservative mark over the words of its memory, with valgrind's
 * memcheck rules, so that on the same program the kinds are memcheck's.
 *
 * The caller gives the live blocks (sorted by address, not overlapping),
 * feeds the roots (the process's writable memory outside the blocks, its
 * threads' stacks and registers) as words, and reads a block's contents
 * through a callback when the mark reaches it.  No copy of the heap is
 * held: one byte of state per block, an index of where blocks start, a
 * mark stack and a read buffer.
 *
 *   reachable: a root, or a reachable block, holds a pointer to its start;
 *   possible:  only pointers into its interior reach it (or only from
 *              possibly lost blocks);
 *   indirect:  nothing reaches it but lost blocks;
 *   definite:  nothing points at it at all (or only blocks it reaches).
 *
 * memcheck's heuristics (--leak-check-heuristics) are not applied: an
 * interior pointer makes a block possibly lost, as memcheck says with
 * --leak-check-heuristics=none.
 */
#ifndef MEMTRACE_LEAKSCAN_H
#define MEMTRACE_LEAKSCAN_H

#include "base/ptrmap.h"
#include "format/codec.h" /* enum mt_leak_kind */

#include <stddef.h>
#include <stdint.h>

struct mt_scan_block {
	uint64_t addr, size;
};

/* One piece of the process's memory to read. */
struct mt_scan_piece {
	uint64_t addr, len;
};

/* Reads the N pieces of the process, one after the other, into BUF.
 * Returns 0, or -1 when they could not all be read.  Many blocks are read
 * in one call: a system call a block would cost more than the scan. */
typedef int (*mt_scan_read_fn)(void *ctx, const struct mt_scan_piece *p, size_t n, void *buf);

struct mt_scan_region {
	uint64_t region; /* address >> 30 */
	uint64_t *table; /* per granule: first | count << 32, 0: none; NULL: in the hash */
};

struct mt_leakscan {
	const struct mt_scan_block *blocks;
	size_t n;
	uint8_t *kind; /* per block: enum mt_leak_kind (DEFINITE: not reached yet) */
	uint32_t *stack;
	size_t top, cap;
	uint64_t lo, hi; /* the blocks' span: most words are rejected by it */
	/* The finding of a word's block in one or two probes: for each 4 KB
	 * granule where blocks start, the first of them and how many (first |
	 * count << 32); and the blocks larger than a granule, in order.  The
	 * granules are found through the 1 GB regions that hold blocks: a
	 * region where many start has a table of its own (one load, no
	 * hashing), the others share a hash map; a word in no region is no
	 * block's, at once (unless a block spans too many regions to list:
	 * wide). */
	struct mt_scan_region *regions;
	size_t nregions;
	int wide;
	struct mt_ptrmap granules;
	uint32_t *large;
	size_t nlarge;
	mt_scan_read_fn read;
	void *ctx;
	uintptr_t *buf;		     /* blocks' contents, a batch at a time */
	struct mt_scan_piece *batch; /* what buf holds */
	uint32_t *batch_idx;	     /* of which blocks */
	uint64_t scanned;	     /* bytes of memory scanned, roots and blocks */
	int incomplete;		     /* a block could not be read */
	int failed;		     /* out of memory: every block counts as reachable */
	/* Set while the caller passes roots in which only a pointer to a
	 * block's start counts: the allocator's own data, whose pointer to
	 * the top of the heap lands inside the last block when that block
	 * uses its chunk's last word (glibc's main_arena.top), where memcheck,
	 * which replaces the allocator, sees no such pointer. */
	int starts_only;
};

/* BLOCKS must be sorted by address and stay valid until mt_leakscan_free.
 * Returns 0, or -1 when out of memory or BLOCKS are not sorted. */
int mt_leakscan_init(struct mt_leakscan *s, const struct mt_scan_block *blocks, size_t n,
		     mt_scan_read_fn read, void *ctx);

/* Root memory: LEN bytes at WORDS, as the process holds them (the aligned
 * words are read; a trailing part shorter than a word is not).  Registers
 * are roots too: pass the register set as words. */
void mt_leakscan_roots(struct mt_leakscan *s, const void *words, size_t len);

/* Ends the scan after the last roots: follows what the roots reached, then
 * sorts the rest into definitely and indirectly lost.  When a block could
 * not be read (incomplete) or memory ran out, every block is reachable: a
 * scan never calls a block lost that it could not prove lost. */
void mt_leakscan_finish(struct mt_leakscan *s);

void mt_leakscan_free(struct mt_leakscan *s);

/* The index of the block that holds ADDR ([addr, addr + size), or the
 * address itself for a block of size 0), or -1. */
ptrdiff_t mt_leakscan_find(const struct mt_leakscan *s, uint64_t addr);

#endif
