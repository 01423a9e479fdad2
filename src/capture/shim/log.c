/*
 * log.c - the shim's messages (MEMTRACE_LOG), to stderr or MEMTRACE_LOGFILE.
 *
 * A message is formatted on the stack and written with one write(2): no
 * stdio buffer, no heap, and lines of several threads do not interleave.
 */
#include "shim.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static int log_fd = 2;

void mt_log_open(void)
{
	const char *lf = mt_cfg.logfile;
	if (!lf || !*lf || !mt_cfg.log_level)
		return;
	char path[4096];
	mt_expand_path(path, sizeof path, lf);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0)
		log_fd = fd;
}

void mt_log(int level, const char *fmt, ...)
{
	if (level > mt_cfg.log_level)
		return;
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "memtrace[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(log_fd, buf, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
}
