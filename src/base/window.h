/*
 * window.h - the serial window: where a reader of a replay keeps the live
 * blocks named by serial (the recorder's compact records number blocks in
 * the order they were allocated).  A ring of slots, the slot of serial S at
 * S & mask, holds the serials [base, base + mask + 1): a block is found
 * without hashing, and blocks freed in about the order they came (most of
 * them) stay within a few cache lines of each other.  Older serials are the
 * owner's to keep elsewhere (a hash table), and so is anything a slot
 * cannot hold.
 *
 * The owners differ only in what a slot holds (a value, a record index, a
 * block's figures) and where a block goes when it leaves the window: that
 * is their struct mt_window_kind, a static constant, and the functions
 * below are inlined into each owner with it, so that its callbacks are
 * direct calls.  What a slot holds is the owner's (kind->live tells a
 * block from none; a new slot, and one the window empties, is all zero),
 * and the owner keeps `used` as it fills and empties slots.
 */
#ifndef MEMTRACE_WINDOW_H
#define MEMTRACE_WINDOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A window's slots at first, and again after a serial far ahead. */
#define MT_WINDOW_FIRST_SLOTS 1024

struct mt_window {
	void *slots; /* NULL: none yet */
	uint64_t base;
	size_t mask, used; /* used: the slots that are not empty */
};

struct mt_window_kind {
	size_t size; /* of a slot */
	int (*live)(const void *slot);
	/* Keeps the block of a live SLOT of SERIAL elsewhere (it leaves the
	 * window, which then empties the slot). */
	void (*spill)(void *owner, uint64_t serial, const void *slot);
};

#define MT_WINDOW_INLINE __attribute__((always_inline)) static inline

MT_WINDOW_INLINE void *mt_window_slot(const struct mt_window *w, size_t size, uint64_t s)
{
	return (char *)w->slots + (size_t)(s & w->mask) * size;
}

/* Whether serial S is in the window's range (which is not: has a block). */
MT_WINDOW_INLINE int mt_window_covers(const struct mt_window *w, uint64_t s)
{
	return w->slots && s >= w->base && s - w->base <= w->mask;
}

/* The serial of slot I. */
MT_WINDOW_INLINE uint64_t mt_window_serial(const struct mt_window *w, size_t i)
{
	return w->base + (((uint64_t)i - w->base) & w->mask);
}

/* Starts W empty with SLOTS slots (a power of two), from serial BASE. */
MT_WINDOW_INLINE void mt_window_start(struct mt_window *w, const struct mt_window_kind *k,
				      size_t slots, uint64_t base)
{
	free(w->slots);
	w->slots = xcalloc(slots, k->size);
	w->mask = slots - 1;
	w->base = base;
	w->used = 0;
}

MT_WINDOW_INLINE void mt_window_free(struct mt_window *w)
{
	free(w->slots);
	*w = (struct mt_window){ 0 };
}

/* Moves the blocks of serials [base, UPTO) out (kind->spill) and starts
 * the window at UPTO. */
MT_WINDOW_INLINE void mt_window_spill(struct mt_window *w, const struct mt_window_kind *k,
				      void *owner, uint64_t upto)
{
	uint64_t end = upto - w->base > w->mask ? w->base + w->mask + 1 : upto;
	for (uint64_t s = w->base; s < end && w->used; s++) {
		void *slot = mt_window_slot(w, k->size, s);
		if (!k->live(slot))
			continue;
		k->spill(owner, s, slot);
		memset(slot, 0, k->size);
		w->used--;
	}
	w->base = upto;
}

/* Doubles the window in place: a block at slot I goes to I or I + N, and
 * the upper half is new, so no second copy of the window is ever needed
 * (realloc moves the pages of a big one without copying them): at 500,000
 * live blocks that copy was 12 MB at once, the peak of a report. */
MT_WINDOW_INLINE void mt_window_grow(struct mt_window *w, const struct mt_window_kind *k)
{
	size_t n = w->mask + 1;
	char *slots = w->slots = xrealloc(w->slots, n * 2 * k->size);
	memset(slots + n * k->size, 0, n * k->size);
	for (size_t i = 0; i < n; i++) {
		void *slot = slots + i * k->size;
		if (!k->live(slot))
			continue;
		uint64_t s = w->base + (((uint64_t)i - w->base) & (n - 1));
		size_t j = (size_t)(s & (n * 2 - 1));
		if (j != i) {
			memcpy(slots + j * k->size, slot, k->size);
			memset(slot, 0, k->size);
		}
	}
	w->mask = n * 2 - 1;
}

/* Live blocks among the oldest N serials of the window. */
MT_WINDOW_INLINE size_t mt_window_live_oldest(const struct mt_window *w,
					      const struct mt_window_kind *k, size_t n)
{
	size_t live = 0;
	for (uint64_t s = w->base; s < w->base + n; s++)
		live += k->live(mt_window_slot(w, k->size, s)) != 0;
	return live;
}

/* Makes the window reach serial S (>= base + its size).  Its oldest
 * thirty-second is spilled, unless more than half of that is still live
 * while more than a quarter of the whole is: then it doubles.  So a window
 * holds at least a quarter as many live blocks as its slots after it
 * grows, a program that frees its blocks in about the order it made them
 * (500,000 live: 512K slots) spills none, and a block that outlives it is
 * moved once.  A serial far ahead (only a crafted file skips serials)
 * empties it and starts it again, small. */
MT_WINDOW_INLINE void mt_window_make_room(struct mt_window *w, const struct mt_window_kind *k,
					  void *owner, uint64_t s)
{
	size_t n = w->mask + 1;
	if (s - w->base >= 2 * (uint64_t)n) {
		mt_window_spill(w, k, owner, w->base + n);
		if (n > MT_WINDOW_FIRST_SLOTS)
			mt_window_start(w, k, MT_WINDOW_FIRST_SLOTS, s);
		w->base = s;
		return;
	}
	while (s - w->base > w->mask) {
		n = w->mask + 1;
		if (w->used * 4 > n && mt_window_live_oldest(w, k, n / 32) * 2 > n / 32)
			mt_window_grow(w, k);
		else
			mt_window_spill(w, k, owner, w->base + n / 32);
	}
}

/* The slot of serial S (>= base) for a block to be put in, the window
 * made (MT_WINDOW_FIRST_SLOTS from S) or moved on to reach S as needed. */
MT_WINDOW_INLINE void *mt_window_reach(struct mt_window *w, const struct mt_window_kind *k,
				       void *owner, uint64_t s)
{
	if (s - w->base > w->mask)
		mt_window_make_room(w, k, owner, s);
	return mt_window_slot(w, k->size, s);
}

#endif
