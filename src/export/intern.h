/*
 * intern.h - numbering distinct (string, string, tag) triples as they are
 * first seen: the function and frame tables of the exports (a function is
 * a name in a module of a process, a speedscope frame a name in a file).
 */
#ifndef MEMTRACE_INTERN_H
#define MEMTRACE_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct mt_pair {
	char *a, *b; /* owned copies; b may be NULL */
	uint32_t tag;
	int64_t aux; /* the caller's, 0 when added */
	uint64_t hash;
};

struct mt_pairs {
	struct mt_pair *v;
	size_t n, cap;
	uint32_t *slot; /* index + 1, 0: empty */
	size_t mask;
};

/* The index of (A, B, TAG) in T, added if new (*ADDED set, when given). */
uint32_t mt_pairs_index(struct mt_pairs *t, const char *a, const char *b, uint32_t tag, int *added);
void mt_pairs_free(struct mt_pairs *t);

#endif
