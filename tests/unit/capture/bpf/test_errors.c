/*
 * test_errors.c - every failure says why in one line: mt_bpf_trace_pid on a
 * pid that does not exist, on memtrace itself, on a static program without
 * symbols; mt_bpf_trace_exec of such a program and of a missing file;
 * mt_bpf_open without privileges (a child that dropped to uid 65534, and one
 * that kept only CAP_BPF); mt_bpf_trace_pid of a kernel thread, and from a
 * child that has CAP_SYS_PTRACE where it does not reach (a user namespace
 * of its own), which must not be told it needs root; the support checks against fake /proc and /sys
 * trees (old kernel, no BTF, no uprobes).
 *
 * Usage: test-bpf-errors GT_STATIC_STRIPPED
 */
#include "bpf_test.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/bpf/capture_int.h"

static void expect(int ret, const char *err, const char *want, const char *what)
{
	CHECK(ret == -1, "%s: returned %d", what, ret);
	CHECK(strstr(err, want) != NULL, "%s: \"%s\" does not say \"%s\"", what, err, want);
	CHECK(err[0] && !strchr(err, '\n'), "%s: not one line: \"%s\"", what, err);
	printf("%-40s %s\n", what, err);
}

/* mt_bpf_open in a child after DROP(); its error line comes back. */
static void open_dropped(void (*drop)(void), const char *want, const char *what)
{
	int p[2];
	char err[512] = "";

	if (pipe(p))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct mt_bpf *b;
		char e[512] = "";
		close(p[0]);
		drop();
		int r = mt_bpf_open(&b, NULL, e, sizeof(e));
		if (r == 0)
			snprintf(e, sizeof(e), "(opened)");
		if (write(p[1], e, strlen(e)) < 0)
			_exit(1);
		_exit(r == 0 ? 3 : 0);
	}
	close(p[1]);
	ssize_t n = read(p[0], err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? -1 : 0, err, want, what);
}

/* mt_bpf_trace_pid(TARGET) in a child that ran BEFORE() (mt_bpf_open must
 * succeed then), opened BPF and ran AFTER() (either may be NULL); its
 * error line comes back in ERR. */
static void trace_child(void (*before)(void), void (*after)(void), pid_t target, const char *want,
			const char *what, char err[512])
{
	int p[2];

	err[0] = 0;
	if (pipe(p))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct mt_bpf *b;
		char e[512] = "";
		close(p[0]);
		if (before)
			before();
		int r = mt_bpf_open(&b, NULL, e, sizeof(e));
		if (r == 0) {
			if (after)
				after();
			r = mt_bpf_trace_pid(b, target, e, sizeof(e));
			if (r == 0)
				snprintf(e, sizeof(e), "(traced)");
		} else {
			r = 0; /* not what is tested: show its error */
		}
		if (write(p[1], e, strlen(e)) < 0)
			_exit(1);
		_exit(r == 0 ? 3 : 0);
	}
	close(p[1]);
	ssize_t n = read(p[0], err, 511);
	err[n > 0 ? n : 0] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? -1 : 0, err, want, what);
}

/* uid 65534 with what loading and attaching needs, and nothing that opens
 * other users' processes (CAP_SYS_PTRACE, CAP_DAC_*). */
static void drop_to_nobody_with_bpf(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	if (prctl(PR_SET_KEEPCAPS, 1) || setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534))
		_exit(2);
	d[0].effective = d[0].permitted = 1u << CAP_SYS_ADMIN;
	d[1].effective = d[1].permitted = 1u << (38 - 32) |
					  1u << (39 - 32); /* CAP_PERFMON, CAP_BPF */
	if (syscall(SYS_capset, &h, d))
		_exit(2);
}

/* Root of a user namespace of its own: every capability, none of which
 * reaches the processes outside it. */
static void enter_user_ns(void)
{
	if (unshare(CLONE_NEWUSER))
		_exit(2);
}

/* A kernel thread's pid (kthreadd is 2 where the pid namespace is the
 * machine's), or 0 if this pid namespace shows none. */
static pid_t a_kernel_thread(void)
{
	for (pid_t pid = 2; pid < 200; pid++) {
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		unsigned long flags = 0;
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		    (flags & 0x00200000))
			return pid;
	}
	return 0;
}

static void drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(2);
}

static void keep_cap_bpf_only(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	d[1].effective = d[1].permitted = 1u << (39 - 32); /* CAP_BPF */
	if (syscall(SYS_capset, &h, d))
		_exit(2);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void fake_roots(void)
{
	char root[] = "/tmp/memtrace-bpf-root-XXXXXX", p[256], err[512];

	if (!mkdtemp(root))
		return;
	snprintf(p, sizeof(p),
		 "mkdir -p %s/proc/sys/kernel %s/sys/kernel/btf %s/sys/bus/event_source/devices",
		 root, root, root);
	if (system(p))
		return;
	snprintf(p, sizeof(p), "%s/proc/sys/kernel/osrelease", root);
	write_file(p, "5.4.0-42-generic\n");
	expect(mtb_check_support(root, err, sizeof(err)), err, "kernel 5.4.0-42-generic is too old",
	       "old kernel");
	write_file(p, "6.1.0\n");
	expect(mtb_check_support(root, err, sizeof(err)), err, "no BTF", "no BTF");
	snprintf(p, sizeof(p), "%s/sys/kernel/btf/vmlinux", root);
	write_file(p, "");
	expect(mtb_check_support(root, err, sizeof(err)), err, "no uprobes", "no uprobes");
	snprintf(p, sizeof(p), "%s/sys/bus/event_source/devices/uprobe", root);
	mkdir(p, 0755);
	CHECK(mtb_check_support(root, err, sizeof(err)) == 0, "fake root with everything: %s", err);
	snprintf(p, sizeof(p), "rm -rf %s", root);
	if (system(p))
		return;
}

/* libbpf's messages for a program the verifier refused (as captured from a
 * broken build of memtrace.bpf.c, shortened). */
static const char verifier_log[] =
	"libbpf: sec 'uprobe': found program 'mt_entry' at insn offset 0 (0 bytes), code size 1116 insns (8928 bytes)\n"
	"libbpf: prog 'mt_entry': BPF program load failed: Permission denied\n"
	"libbpf: prog 'mt_entry': -- BEGIN PROG LOAD LOG --\n"
	"0: R1=ctx() R10=fp0\n"
	"507: (0f) r1 += r2                    ; R1=ctx(off=96) R2=96\n"
	"508: (79) r8 = *(u64 *)(r1 +0)\n"
	"dereference of modified ctx ptr R1 off=96 disallowed\n"
	"processed 160 insns (limit 1000000) max_states_per_insn 0 total_states 12 peak_states 12 mark_read 0\n"
	"-- END PROG LOAD LOG --\n"
	"libbpf: prog 'mt_entry': failed to load: -13\n"
	"libbpf: failed to load object 'memtrace_bpf'\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_STATIC_STRIPPED\n", argv[0]);
		return 2;
	}
	const char *stat_exe = argv[1];
	struct mt_bpf *b = bt_open(NULL);
	char err[512];

	/* A pid that is not there: the highest one, after checking. */
	pid_t nopid = 4194303;
	while (kill(nopid, 0) == 0 || errno != ESRCH)
		nopid--;
	char want[64];
	snprintf(want, sizeof(want), "no such process: %d", nopid);
	expect(mt_bpf_trace_pid(b, nopid, err, sizeof(err)), err, want, "trace_pid(no such pid)");
	expect(mt_bpf_trace_pid(b, getpid(), err, sizeof(err)), err, "memtrace itself",
	       "trace_pid(self)");

	struct bt_child c;
	char *cargv[] = { (char *)stat_exe, NULL };
	bt_spawn(&c, cargv);
	bt_go(&c);
	CHECK(bt_wait_output(&c, "ready\n", 5000), "static program did not start");
	snprintf(want, sizeof(want), "process %d maps no allocator", c.pid);
	expect(mt_bpf_trace_pid(b, c.pid, err, sizeof(err)), err, want,
	       "trace_pid(static, stripped)");
	CHECK(strstr(err, "static program without its symbol table") != NULL &&
		      strstr(err, "unstripped build") != NULL,
	      "%s", err);
	bt_close_input(&c);
	bt_reap(&c, 1);
	free(c.buf);

	pid_t kt = a_kernel_thread();
	if (kt) {
		snprintf(want, sizeof(want), "process %d is a kernel thread", (int)kt);
		expect(mt_bpf_trace_pid(b, kt, err, sizeof(err)), err, want,
		       "trace_pid(kernel thread)");
	} else {
		printf("trace_pid(kernel thread): not run: this pid namespace shows no kernel thread\n");
	}

	bt_spawn(&c, cargv);
	expect(mt_bpf_trace_exec(b, c.pid, stat_exe, err, sizeof(err)), err, "defines no allocator",
	       "trace_exec(static, stripped)");
	CHECK(strstr(err, "record an unstripped build") != NULL, "%s", err);
	expect(mt_bpf_trace_exec(b, c.pid, "/nonexistent/program", err, sizeof(err)), err,
	       "cannot open /nonexistent/program: No such file or directory",
	       "trace_exec(missing file)");
	bt_go(&c);
	bt_close_input(&c);
	bt_reap(&c, 1);
	free(c.buf);
	mt_bpf_close(b);

	open_dropped(drop_to_nobody,
		     "needs root, or CAP_BPF and CAP_PERFMON (uid 65534 has neither)",
		     "open as uid 65534");
	open_dropped(keep_cap_bpf_only, "(uid 0 has CAP_BPF only)", "open with CAP_BPF only");
	snprintf(want, sizeof(want), "cannot read /proc/%d/root/", (int)getpid());
	char said[512];
	trace_child(drop_to_nobody_with_bpf, NULL, getpid(), want,
		    "trace_pid(root's process) as uid 65534", said);
	trace_child(drop_to_nobody_with_bpf, NULL, getpid(),
		    "Permission denied (needs root, or CAP_SYS_PTRACE,",
		    "  ... says what is missing", said);
	trace_child(NULL, enter_user_ns, getpid(), "memtrace runs in a user namespace",
		    "trace_pid(outside its user namespace)", said);
	CHECK(!strstr(said, "needs root"),
	      "%s: tells a process with CAP_SYS_PTRACE it needs root: %s",
	      "trace_pid(outside its user namespace)", said);
	fake_roots();

	char err2[512];
	mtb_load_error(verifier_log, 13, err2, sizeof(err2));
	expect(-1, err2,
	       "BPF verifier rejected mt_entry: dereference of modified ctx ptr R1 off=96 disallowed",
	       "verifier");
	mtb_load_error("libbpf: failed to load object 'memtrace_bpf'\n", 1, err2, sizeof(err2));
	expect(-1, err2, "loading the BPF programs failed: Operation not permitted",
	       "load without a log");
	return failures ? 1 : 0;
}
