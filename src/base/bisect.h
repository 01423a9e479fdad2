/*
 * bisect.h - the partition point of a sorted range by bisection, written
 * once for arrays of any type: MT_PARTITION(N, I, PRED) is the first index
 * I in [0, N) for which PRED (an expression of I) is false, N if none, PRED
 * being true for a prefix of the range and false after it ("the first
 * block at or above ADDR": PRED is blocks[I].addr < addr).
 */
#ifndef MEMTRACE_BISECT_H
#define MEMTRACE_BISECT_H

#include <stddef.h>

#define MT_PARTITION(n, i, pred)                                   \
	__extension__({                                            \
		size_t mt_lo_ = 0, mt_hi_ = (n);                   \
		while (mt_lo_ < mt_hi_) {                          \
			size_t i = mt_lo_ + (mt_hi_ - mt_lo_) / 2; \
			if (pred)                                  \
				mt_lo_ = i + 1;                    \
			else                                       \
				mt_hi_ = i;                        \
		}                                                  \
		mt_lo_;                                            \
	})

#endif
