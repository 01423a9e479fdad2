/*
 * leakscan.c - see leakscan.h.
 *
 * Two passes, as memcheck's leak check makes them.  From the roots: a
 * pointer to a block's start from a root or a reachable block makes it
 * reachable; any other pointer into it (an interior pointer, or one from a
 * possibly lost block) makes an unreached block possibly lost.  A block
 * whose state changes is pushed and scanned (again): at most twice, once
 * possible and once reachable.  Then the blocks nothing reached, in address
 * order, each as the leader of a clique: every unreached block it reaches,
 * by any pointer, is indirectly lost (a former leader too); the leaders left
 * are definitely lost.
 */
#include "leakscan.h"

#include <stdlib.h>
#include <string.h>

/* How much of a block is read at a time. */
#define SCAN_PIECE (256u * 1024u)

/* The clique pass's "no clique": the roots' pass. */
#define NO_CLIQUE SIZE_MAX

const char *mt_leak_kind_name(enum mt_leak_kind k)
{
	static const char *const names[MT_LEAK_KINDS] = { "definite", "indirect", "possible",
							  "reachable" };
	return (unsigned)k < MT_LEAK_KINDS ? names[k] : "?";
}

int mt_leakscan_init(struct mt_leakscan *s, const struct mt_scan_block *blocks, size_t n,
		     mt_scan_read_fn read, void *ctx)
{
	memset(s, 0, sizeof *s);
	s->blocks = blocks;
	s->n = n;
	s->read = read;
	s->ctx = ctx;
	if (n >= UINT32_MAX)
		return -1;
	for (size_t i = 1; i < n; i++)
		if (blocks[i].addr < blocks[i - 1].addr)
			return -1;
	s->kind = calloc(n ? n : 1, 1);
	s->buf = malloc(SCAN_PIECE);
	if (!s->kind || !s->buf) {
		mt_leakscan_free(s);
		return -1;
	}
	if (n) {
		s->lo = blocks[0].addr;
		for (size_t i = 0; i < n; i++) {
			/* a block's end, saturated: a hostile size cannot wrap */
			uint64_t end = blocks[i].addr + blocks[i].size;
			end = end < blocks[i].addr ? UINT64_MAX : end;
			s->hi = end > s->hi ? end : s->hi;
		}
		if (s->hi == s->lo)
			s->hi = s->lo + 1; /* one block of size 0 */
	}
	return 0;
}

void mt_leakscan_free(struct mt_leakscan *s)
{
	free(s->kind);
	free(s->stack);
	free(s->buf);
	s->kind = NULL;
	s->stack = NULL;
	s->buf = NULL;
}

ptrdiff_t mt_leakscan_find(const struct mt_leakscan *s, uint64_t addr)
{
	if (addr - s->lo >= s->hi - s->lo)
		return -1;
	/* the last block starting at or below ADDR */
	size_t lo = 0, hi = s->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->blocks[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	const struct mt_scan_block *b = &s->blocks[lo];
	if (addr == b->addr || addr - b->addr < b->size)
		return (ptrdiff_t)lo;
	return -1;
}

static void push(struct mt_leakscan *s, size_t i)
{
	if (s->top == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint32_t *st = realloc(s->stack, cap * sizeof *st);
		if (!st) {
			s->failed = 1;
			return;
		}
		s->stack = st;
		s->cap = cap;
	}
	s->stack[s->top++] = (uint32_t)i;
}

/* A pointer WORD found in memory: DEFINITE_FROM when that memory is a root
 * or a reachable block; CLIQUE the leader in the clique pass. */
static void reach(struct mt_leakscan *s, uint64_t word, int definite_from, size_t clique)
{
	ptrdiff_t j = mt_leakscan_find(s, word);
	if (j < 0)
		return;
	uint8_t *k = &s->kind[j];
	if (clique != NO_CLIQUE) {
		if (*k == MT_LEAK_DEFINITE && (size_t)j != clique) {
			*k = MT_LEAK_INDIRECT;
			push(s, (size_t)j);
		}
		return;
	}
	if (word == s->blocks[j].addr && definite_from) {
		if (*k != MT_LEAK_REACHABLE) {
			*k = MT_LEAK_REACHABLE;
			push(s, (size_t)j);
		}
	} else if (*k == MT_LEAK_DEFINITE) {
		*k = MT_LEAK_POSSIBLE;
		push(s, (size_t)j);
	}
}

static void scan_words(struct mt_leakscan *s, const uintptr_t *w, size_t nw, int definite_from,
		       size_t clique)
{
	uint64_t lo = s->lo, span = s->hi - s->lo;
	for (size_t i = 0; i < nw; i++)
		if ((uint64_t)w[i] - lo < span)
			reach(s, w[i], definite_from, clique);
	s->scanned += nw * sizeof *w;
}

void mt_leakscan_roots(struct mt_leakscan *s, const void *words, size_t len)
{
	const unsigned char *p = words;
	/* the process's words are aligned in its memory: so is the buffer */
	size_t skip = (size_t)(-(uintptr_t)p & (sizeof(uintptr_t) - 1));
	if (skip >= len || !s->n)
		return;
	scan_words(s, (const uintptr_t *)(const void *)(p + skip), (len - skip) / sizeof(uintptr_t), 1,
		   NO_CLIQUE);
}

/* The aligned words of block I, read a piece at a time. */
static void scan_block(struct mt_leakscan *s, size_t i, size_t clique)
{
	const struct mt_scan_block *b = &s->blocks[i];
	const uint64_t wsz = sizeof(uintptr_t);
	uint64_t a = (b->addr + wsz - 1) & ~(wsz - 1);
	uint64_t end = b->addr + b->size < b->addr ? UINT64_MAX : b->addr + b->size;
	int definite_from = s->kind[i] != MT_LEAK_POSSIBLE;
	while (a + wsz <= end && !s->incomplete) {
		uint64_t len = (end - a) & ~(wsz - 1);
		len = len > SCAN_PIECE ? SCAN_PIECE : len;
		if (s->read(s->ctx, a, s->buf, (size_t)len) < 0) {
			s->incomplete = 1;
			return;
		}
		scan_words(s, s->buf, (size_t)(len / wsz), definite_from, clique);
		a += len;
	}
}

static void drain(struct mt_leakscan *s, size_t clique)
{
	while (s->top && !s->incomplete && !s->failed)
		scan_block(s, s->stack[--s->top], clique);
}

void mt_leakscan_finish(struct mt_leakscan *s)
{
	drain(s, NO_CLIQUE);
	for (size_t i = 0; i < s->n && !s->incomplete && !s->failed; i++) {
		if (s->kind[i] != MT_LEAK_DEFINITE)
			continue;
		push(s, i);
		drain(s, i);
	}
	if (s->incomplete || s->failed)
		memset(s->kind, MT_LEAK_REACHABLE, s->n);
	s->top = 0;
}
