/*
 * endrss.c - resident memory at the end is the process's at its end.
 *
 * A 32 MiB anonymous mapping (not the heap), left untouched for 200 ms,
 * then every page of it written and the program exits at once, the
 * mapping still there.  Recorded with a sampling interval longer than the
 * run (record --rss-interval 5000), the periodic samples are the one taken
 * at the start; what the report says is resident at the end must count
 * the 32 MiB all the same: the recorder samples the process at its exit.
 */
#include "gt.h"

#include <sys/mman.h>

#define SIZE (32u << 20)

int main(void)
{
	char *map = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 1;
	gt_sleep_ms(200);
	for (size_t at = 0; at < SIZE; at += 4096)
		map[at] = 1;
	gt_say("endrss: touched\n");
	return 0;
}
