/*
 * fuzz_recording.c - libFuzzer target for the recording reader: any bytes
 * handed to mt_recording_load must give figures or a one-line error, never
 * a crash, a hang or memory out of proportion to the input.  The input is
 * put in a memfd and loaded through /proc/self/fd, the path every command
 * uses; symbolization is not run (it reads the files a recording names).
 *
 * Built only with -Dfuzz=true and clang (tests/fuzz/meson.build); tests/fuzz/
 * run.py runs it over the seed corpus (tests/fuzz/corpus) for a fixed budget.
 */
#include "analyse/recording.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[256];
	struct mt_recording rec = { 0 };
	int fd = memfd_create("fuzz", 0);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		if (mt_recording_load(&rec, path, err, sizeof err) == 0)
			mt_recording_free(&rec);
	}
	close(fd);
	return 0;
}
