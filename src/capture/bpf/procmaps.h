/*
 * procmaps.h - what a running process is, read from /proc: its executable,
 * command line and parent, and the ELF objects it maps (path, load bias,
 * address range, build-id), as the attach, top and sweep commands need them
 * to describe and symbolize a process they did not start.
 */
#ifndef MEMTRACE_PROCMAPS_H
#define MEMTRACE_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct mt_pmod {
	char *path; /* as the process sees it */
	uint64_t bias, start, end;
	uint8_t build_id[64];
	size_t build_id_len;
};

struct mt_pinfo {
	pid_t pid, ppid;
	char *exe;  /* NULL when unreadable */
	char *argv; /* NUL-separated, argv_len bytes */
	size_t argv_len;
	struct mt_pmod *mods;
	size_t nmods;
	uint64_t start_ns; /* when it started, CLOCK_MONOTONIC; 0 when unknown */
};

/* One line of /proc/PID/maps.  PATH points into the line read (its end
 * without the newline), "" for an anonymous mapping. */
struct mt_maps_line {
	uint64_t lo, hi, off, ino;
	unsigned maj, min;
	char perms[8];
	char *path;
};

/* Reads the next line of the maps file F into *BUF (of *CAP bytes, grown as
 * needed: a line is read whole whatever its length, since a tail split off a
 * long path and parsed as a line of its own could name any file) and parses
 * it into L.  Returns 1, or 0 at the end.  Lines that do not parse are
 * passed over. */
int mt_maps_next(FILE *f, char **buf, size_t *cap, struct mt_maps_line *l);

/* Calls FN(CTX, line) for each line of /proc/PID/maps, in order, until FN
 * returns non-zero.  FN may write into the line's PATH (the buffer is
 * reused for the next line).  Returns FN's non-zero result, 0 at the end,
 * or -1 with errno when the file cannot be opened or read. */
typedef int (*mt_maps_fn)(void *ctx, struct mt_maps_line *l);
int mt_maps_each(pid_t pid, mt_maps_fn fn, void *ctx);

/* Reads PID's identity and mapped objects.  Returns 0, or -1 with errno
 * (ESRCH: no such process, EACCES: not allowed). */
int mt_pinfo_read(struct mt_pinfo *pi, pid_t pid);
void mt_pinfo_free(struct mt_pinfo *pi);

/* 1 while PID runs (a zombie has exited), 0 once it has exited. */
int mt_pid_alive(pid_t pid);

/* 0 if every one of PIDS runs; else says "no process N" and returns -1. */
int mt_pids_running(const pid_t *pids, size_t n);

/* Load bias and build-id of the ELF file open on FD, mapped at START with
 * file offset OFFSET.  Returns 0 or -1. */
int mt_elf_bias(int fd, uint64_t start, uint64_t offset, uint64_t *bias, uint8_t *build_id,
		size_t *build_id_len);

/* Objects larger than this are not read (no ELF object is; a planted file
 * could be sparse and endless). */
#define MT_OBJECT_MAX_BYTES (4ull << 30)

/* Opens, read-only, the object process PID maps at [LO, HI) from inode INO
 * (as its maps give them), named PATH there.  The process's owner controls
 * what PATH names (a chroot's paths resolve in the jail, a container's in
 * its own mounts), so PATH is never opened as it is: the very inode mapped
 * is opened through /proc/PID/map_files/LO-HI when allowed (CAP_SYS_ADMIN),
 * else PATH is resolved inside the process's root (openat2 RESOLVE_IN_ROOT,
 * no magic link, no symbolic link at the end).  Either way the file is
 * first looked at through an O_PATH descriptor, so that a FIFO or a device
 * is never opened, and it must be a regular file of inode INO, at most
 * MT_OBJECT_MAX_BYTES long.  Returns the descriptor, or -1 with errno; when
 * a file was there but refused, WHY says why ("" when it is simply missing
 * or unreadable). */
int mt_proc_open_object(pid_t pid, uint64_t lo, uint64_t hi, uint64_t ino, const char *path,
			char *why, size_t whylen);

/* Says once per process and path that PATH of process PID is skipped, and
 * WHY. */
void mt_proc_warn_skipped(pid_t pid, const char *path, const char *why);

#endif
