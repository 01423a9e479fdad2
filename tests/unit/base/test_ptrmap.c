/*
 * test_ptrmap.c - unit test of base/ptrmap.h, the address map of the
 * recorder (compact), the exports and the shim: 10,000 keys put, found,
 * half taken out and the rest still found after the backward shifts; and
 * key 0 (the empty slot's), which a hostile stream's free of address 0
 * hands in, is never found nor stored: taking it once "found" an empty
 * slot, counted it out of `used` and shifted the entries after it.
 */
#include "base/ptrmap.h"
#include "../check.h"

#define N 10000

int main(void)
{
	struct mt_ptrmap m;
	uint64_t v = 0;
	CHECK(mt_ptrmap_init(&m, 16) == 0);
	for (uint64_t k = 1; k <= N; k++)
		CHECK(mt_ptrmap_put(&m, k * 4096, k) == 0);
	CHECK_EQ(m.used, N);
	/* key 0: nothing there, nothing moved, nothing counted */
	for (int i = 0; i < 100; i++) {
		CHECK(!mt_ptrmap_take(&m, 0, &v));
		CHECK(!mt_ptrmap_get(&m, 0, &v));
	}
	CHECK(mt_ptrmap_put(&m, 0, 7) == 0);
	CHECK(!mt_ptrmap_get(&m, 0, &v));
	CHECK_EQ(m.used, N);
	for (uint64_t k = 1; k <= N; k += 2) {
		CHECK(mt_ptrmap_take(&m, k * 4096, &v));
		CHECK_EQ(v, k);
	}
	CHECK_EQ(m.used, N / 2);
	for (uint64_t k = 1; k <= N; k++) {
		int found = mt_ptrmap_get(&m, k * 4096, &v);
		CHECK_EQ(found, k % 2 == 0);
		if (found)
			CHECK_EQ(v, k);
	}
	mt_ptrmap_destroy(&m);
	return failures != 0;
}
