/*
 * rss.c - see rss.h.
 *
 * /proc/PID/status rather than smaps_rollup: the kernel keeps its Rss*
 * counters per mm and prints them without walking the mappings, so a
 * sample costs tens of microseconds however big the process is, and can be
 * taken every few milliseconds.  (The counters are batched per CPU and may
 * lag by a few pages: fine for a series whose unit is megabytes.)
 */
#include "rss.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* The value in kB of the line starting with KEY in TEXT, in bytes. */
static uint64_t field(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? strtoull(p + strlen(key), NULL, 10) * 1024 : 0;
}

int mt_rss_read(uint32_t pid, struct mt_rss *m)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%u/status", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!strstr(buf, "\nVmRSS:"))
		return -1; /* a zombie, or a kernel thread: no memory of its own */
	static uint64_t ram;
	if (!ram) {
		struct sysinfo si;
		ram = sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
	}
	*m = (struct mt_rss){
		.vm_size = field(buf, "\nVmSize:"),
		.vm_data = field(buf, "\nVmData:"),
		.rss = field(buf, "\nVmRSS:"),
		.anon = field(buf, "\nRssAnon:"),
		.file = field(buf, "\nRssFile:"),
		.shmem = field(buf, "\nRssShmem:"),
		.ram = ram,
	};
	return 0;
}

/* mincore() on the recorder's own mapping: a shared memfd's pages are in
 * memory for every process that maps it, and the shim writes every page
 * of the ring before the recorder reads it, so the pages in memory are the
 * pages resident in the traced process.  One system call over a few
 * thousand pages, where the process's smaps would walk all its mappings at
 * every sample.  (The shim's second view of the ring, which only records
 * straddling its end touch, adds a page or two that are left in.) */
void mt_rss_exclude(struct mt_rss *m, const void *ring, size_t len)
{
	static unsigned char *vec;
	static size_t veclen;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
	if (n > veclen) {
		unsigned char *v = realloc(vec, n);
		if (!v)
			return;
		vec = v;
		veclen = n;
	}
	if (mincore((void *)ring, len, vec) < 0)
		return;
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += vec[i] & 1 ? page : 0;
	if (bytes > m->shmem)
		bytes = m->shmem;
	if (bytes > m->rss)
		bytes = m->rss;
	m->rss -= bytes;
	m->shmem -= bytes;
	m->ring = bytes;
}
