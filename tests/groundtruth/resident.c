/*
 * resident.c - the process's memory beside its heap (record's RSS samples).
 *
 *   fragment: 40,000 x malloc(200) = 8,000,000 bytes, every other one
 *             freed: 20,000 blocks and 4,000,000 bytes stay in use, and
 *             stay there to the end (leaked).  No neighbours of a free
 *             block are free, so the allocator can give nothing back: the
 *             anonymous memory resident stays about 8.3 MB (200 bytes and
 *             a header per block) while the heap halves.  Marker
 *             "fragmented", then 150 ms.
 *   steps:    a 48 MiB anonymous mapping (mmap, not the heap) touched 16 MiB
 *             at a time, a marker after each ("touched-1".."touched-3")
 *             and 150 ms between them; then unmapped, marker "unmapped",
 *             150 ms.  Resident memory rises by 16 MiB at each marker and
 *             falls back by 48 MiB at the last; the heap does not move.
 *   shared:   first of all, a 4 MiB memfd mapped shared and written
 *             whole, kept to the end: the process's RssShmem is 4 MiB from
 *             "fragmented" on, and no more (the shim's own ring, a memfd
 *             too, is memtrace's and is not counted).
 * The shared mmap, and the 48 MiB mapping's mmap and munmap are the run's
 * only mapping calls: the mapped series is 4 MiB, then 52 MiB between the
 * other two, then 4 MiB to the end.
 * The 150 ms plateaus give the recorder's 10 ms samples room: the test
 * looks at the samples between markers, never at how long anything took.
 */
#include "gt.h"

#include <sys/mman.h>
#include <sys/syscall.h>

extern void memtrace_marker(const char *) __attribute__((weak));

#define BLOCKS 40000
#define STEP (16u << 20)
#define SHARED (4u << 20)

static void *blocks[BLOCKS];

static void mark(const char *what)
{
	if (memtrace_marker)
		memtrace_marker(what);
}

NOINLINE void fragment(void)
{
	for (int i = 0; i < GT_N(BLOCKS); i++) {
		blocks[i] = malloc(200); /* @site:fragment */
		gt_keep(blocks[i]);
		((char *)blocks[i])[0] = 1;
	}
	for (int i = 1; i < GT_N(BLOCKS); i += 2) {
		free(blocks[i]);
		blocks[i] = NULL;
	}
}

/* SHARED bytes of shared memory, every page written, never unmapped. */
static int share(void)
{
	int fd = (int)syscall(SYS_memfd_create, "gt-resident", 0u);
	if (fd < 0 || ftruncate(fd, SHARED) < 0)
		return -1;
	char *p = mmap(NULL, SHARED, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	for (size_t at = 0; at < SHARED; at += 4096)
		p[at] = 1;
	return 0;
}

int main(void)
{
	if (share() < 0)
		return 1;
	fragment();
	mark("fragmented");
	gt_sleep_ms(150);
	char *map = mmap(NULL, 3 * (size_t)STEP, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 1;
	static const char *const names[] = { "touched-1", "touched-2", "touched-3" };
	for (int s = 0; s < 3; s++) {
		for (size_t at = 0; at < STEP; at += 4096)
			map[(size_t)s * STEP + at] = 1;
		mark(names[s]);
		gt_sleep_ms(150);
	}
	munmap(map, 3 * (size_t)STEP);
	mark("unmapped");
	gt_sleep_ms(150);
	gt_say("resident: done\n");
	return 0;
}
