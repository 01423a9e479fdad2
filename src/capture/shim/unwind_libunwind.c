/*
 * unwind_libunwind.c - mt_unwind() on libunwind: the portable fallback.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "unwind.h"

int mt_unwind(uint64_t *pcs, int max, int skip)
{
	enum { MT_UNWIND_BUF = 160 };
	void *buf[MT_UNWIND_BUF];
	int n = unw_backtrace(buf, max + skip + 2 < MT_UNWIND_BUF ? max + skip + 2 : MT_UNWIND_BUF);
	int out = 0;
	/* buf[0] is in this function, buf[1] in the hook that called it */
	for (int i = 2 + skip; i < n && out < max; i++)
		pcs[out++] = (uint64_t)(uintptr_t)buf[i];
	return out;
}

void mt_unwind_modules_changed(void)
{
}
