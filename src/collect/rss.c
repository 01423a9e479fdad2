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
