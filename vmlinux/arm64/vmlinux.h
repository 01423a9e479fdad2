/*
 * Trimmed vmlinux.h for arm64: only what memtrace.bpf.c needs (basic types,
 * the BPF UAPI constants, struct user_pt_regs and the head of struct
 * pt_regs).  Used when the build machine has no /sys/kernel/btf/vmlinux to
 * generate the full one from; CO-RE relocates the fields against the
 * running kernel's BTF at load time.
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)
#endif

#include "../common.h"

struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};

struct pt_regs {
	union {
		struct user_pt_regs user_regs;
		struct {
			u64 regs[31];
			u64 sp;
			u64 pc;
			u64 pstate;
		};
	};
	u64 orig_x0;
	s32 syscallno;
};

#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute pop
#endif

#endif /* __VMLINUX_H__ */
