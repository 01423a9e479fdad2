/*
 * fuzz_elf.c - libFuzzer target for the ELF readers of the BPF backend
 * (capture/bpf: elf.c, which allocator functions an object defines and
 * where their probes go, and what a program loads; unwind.c, its unwind
 * table), which root runs on any file a traced process maps executable.
 * Any bytes must give an answer or a refusal, never a crash, a hang or
 * memory out of proportion to the input.  The input is put in a memfd, as
 * the loader reads a mapped file through a descriptor.
 *
 * Built only with -Dfuzz=true and clang (tests/fuzz/meson.build).
 */
#include "capture/bpf/capture_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", 0);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		struct mtb_elf_syms syms;
		struct mtb_elf_deps deps;
		struct mtb_urow *rows = NULL;

		mtb_elf_analyze(fd, &syms);
		mtb_elf_deps(fd, &deps);
		mtb_unwind_rows(fd, &rows);
		free(rows);
	}
	close(fd);
	return 0;
}
