/*
 * self.c - what the process is called: its executable and arguments, read
 * from /proc/self, and file names made from them.
 *
 * The PROCESS record carries the executable and arguments, the main
 * program's MODULE record its path, and the output and log file names may
 * contain the executable's name (%e).  Nothing is kept: these are asked
 * for at start-up, after a fork and when an object is loaded, not per event.
 */
#include "shim.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int mt_read_self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

size_t mt_read_self_cmdline(char *buf, size_t len)
{
	size_t got = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n;
	while (got < len && (n = read(fd, buf + got, len - got)) > 0)
		got += (size_t)n;
	close(fd);
	return got;
}

/* Expands %p (pid), %t (seconds since the epoch), %e (executable name) and
 * %n (a counter making the name unique) into OUT. */
int mt_expand_path(char *out, size_t len, const char *pattern)
{
	static unsigned counter;
	char exe[4096], *base = exe;
	if (mt_read_self_exe(exe, sizeof exe) > 0) {
		char *slash = strrchr(exe, '/');
		if (slash)
			base = slash + 1;
	} else {
		strcpy(exe, "unknown");
	}
	size_t o = 0;
	for (const char *p = pattern; *p && o + 32 < len; p++) {
		if (*p != '%' || !p[1]) {
			out[o++] = *p;
			continue;
		}
		switch (*++p) {
		case 'p':
			o += (size_t)snprintf(out + o, len - o, "%d", (int)getpid());
			break;
		case 't':
			o += (size_t)snprintf(out + o, len - o, "%lld", (long long)time(NULL));
			break;
		case 'e':
			o += (size_t)snprintf(out + o, len - o, "%.200s", base);
			break;
		case 'n':
			o += (size_t)snprintf(out + o, len - o, "%u", counter++);
			break;
		default:
			out[o++] = '%';
			out[o++] = *p;
		}
	}
	out[o < len ? o : len - 1] = 0;
	return 0;
}
