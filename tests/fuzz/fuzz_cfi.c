/*
 * fuzz_cfi.c - libFuzzer target for the .eh_frame compiler (format/cfi.c)
 * as the BPF backend runs it on any file a traced process maps executable:
 * any bytes must give rows that stay inside their FDE's range, or none,
 * never a read outside the section, a crash or a hang.  The input is copied
 * into a block of its exact size, so that ASan sees a read past it.
 *
 * Built only with -Dfuzz=true and clang (tests/fuzz/meson.build).
 */
#include "format/cfi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void on_row(void *ctx, uint64_t lo, uint64_t hi, const struct mt_cfi_rule *r)
{
	(void)r;
	if (hi <= lo)
		abort(); /* a row that ends before it starts */
	++*(unsigned long *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long rows = 0;
	uint8_t *copy = malloc(size ? size : 1);

	memcpy(copy, data, size);
	mt_cfi_rows(copy, size, 0x400000, on_row, &rows);
	free(copy);
	return 0;
}
