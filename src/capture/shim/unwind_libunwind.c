/*
 * unwind_libunwind.c - mt_unwind() on libunwind: the unwinder of AArch64
 * and of any architecture without a choice of its own (src/capture/shim/
 * meson.build), from .eh_frame (.ARM.exidx on 32-bit ARM), whole stacks
 * without frame pointers.
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
	for (int i = 2 + skip; i < n && out < max; i++) {
		uintptr_t pc = (uintptr_t)buf[i];
#if defined(__arm__)
		/* a return into Thumb code has bit 0 set (the mode, not the
		 * address): the reader takes pc - 1 for the call, which must
		 * land in the call instruction, not on the one after it */
		pc &= ~(uintptr_t)1;
#endif
		pcs[out++] = (uint64_t)pc;
	}
	return out;
}

void mt_unwind_modules_changed(void)
{
}
