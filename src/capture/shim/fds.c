/*
 * fds.c - the shim's own descriptors, kept out of the program's way.
 *
 * Programs close descriptors they did not open (a daemon closes them all,
 * with a loop to 1024 or close_range) and expect open() to return the lowest
 * free number.  So the shim keeps its descriptors (the recorder's socket,
 * the output file, the log file) high, from MT_FD_FLOOR up, where they take
 * no number a program expects; and it remembers what each one is (device and
 * inode), so that before it writes to one or closes one it can tell whether
 * the program closed it and put a file of its own at that number.
 *
 * A program may also run with a descriptor limit too low for the shim
 * (RLIMIT_NOFILE 3, all taken by stdio).  Its soft limit is then raised
 * while the shim opens what it needs, as far as the hard limit allows, and
 * put back: descriptors above the soft limit stay valid, the limit only
 * bounds new ones, so the program sees the limit it set.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MT_FD_FLOOR 1000
#define MT_FD_ROOM 64 /* how far above the floor the limit is lifted */

int mt_fd_lift_limit(struct rlimit *saved)
{
	if (getrlimit(RLIMIT_NOFILE, saved) < 0 || saved->rlim_cur == RLIM_INFINITY ||
	    saved->rlim_cur >= MT_FD_FLOOR + MT_FD_ROOM)
		return 0;
	struct rlimit lifted = *saved;
	lifted.rlim_cur = saved->rlim_max == RLIM_INFINITY ||
					  saved->rlim_max > MT_FD_FLOOR + MT_FD_ROOM ?
				  MT_FD_FLOOR + MT_FD_ROOM :
				  saved->rlim_max;
	if (lifted.rlim_cur <= saved->rlim_cur)
		return 0;
	return setrlimit(RLIMIT_NOFILE, &lifted) == 0;
}

void mt_fd_restore_limit(const struct rlimit *saved)
{
	int e = errno;
	setrlimit(RLIMIT_NOFILE, saved);
	errno = e;
}

int mt_fd_place(int fd, struct mt_fd_id *id)
{
	if (fd < 0)
		return fd;
	if (fd < MT_FD_FLOOR) {
		struct rlimit rl;
		int floor = MT_FD_FLOOR;
		/* below a hard limit under the floor: as high as it allows */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur <= (rlim_t)floor)
			floor = rl.rlim_cur > 8 ? (int)rl.rlim_cur - 8 : fd + 1;
		int hi = floor > fd ? fcntl(fd, F_DUPFD_CLOEXEC, floor) : -1;
		if (hi >= 0) {
			close(fd);
			fd = hi;
		}
	}
	struct stat st;
	if (id) {
		id->dev = 0;
		id->ino = 0;
		if (fstat(fd, &st) == 0) {
			id->dev = (uint64_t)st.st_dev;
			id->ino = (uint64_t)st.st_ino;
		}
	}
	return fd;
}

int mt_fd_is(int fd, const struct mt_fd_id *id)
{
	struct stat st;
	int e = errno;
	int same = fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == id->dev &&
		   (uint64_t)st.st_ino == id->ino;
	errno = e;
	return same;
}

void mt_fd_close(int fd, const struct mt_fd_id *id)
{
	if (mt_fd_is(fd, id))
		close(fd);
}

void mt_fd_absolute(char *path, size_t len)
{
	if (path[0] == '/' || !path[0])
		return;
	char cwd[4096], rel[4096];
	if (!getcwd(cwd, sizeof cwd))
		return;
	size_t c = strlen(cwd), r = strlen(path);
	if (c + 1 + r + 1 > len || r + 1 > sizeof rel)
		return;
	memcpy(rel, path, r + 1);
	memcpy(path, cwd, c);
	path[c] = '/';
	memcpy(path + c + 1, rel, r + 1);
}
