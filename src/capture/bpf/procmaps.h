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

/* Reads PID's identity and mapped objects.  Returns 0, or -1 with errno
 * (ESRCH: no such process, EACCES: not allowed). */
int mt_pinfo_read(struct mt_pinfo *pi, pid_t pid);
void mt_pinfo_free(struct mt_pinfo *pi);

/* 1 while PID runs (a zombie has exited), 0 once it has exited. */
int mt_pid_alive(pid_t pid);

/* 0 if every one of PIDS runs; else says "no process N" and returns -1. */
int mt_pids_running(const pid_t *pids, size_t n);

/* Load bias and build-id of the ELF file at PATH mapped at START with file
 * offset OFFSET.  Returns 0 or -1. */
int mt_elf_bias(const char *path, uint64_t start, uint64_t offset, uint64_t *bias,
		uint8_t *build_id, size_t *build_id_len);

#endif
