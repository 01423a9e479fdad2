/*
 * test_ns.c - a C library at another path, in another mount namespace, as
 * in a container: gt-bpf-leak runs in its own mount namespace with a copy
 * of libc.so.6 on a tmpfs that only it sees (LD_LIBRARY_PATH), so the path
 * in its maps does not exist for us and the inode is not the system libc's.
 * mt_bpf_trace_pid must find that copy (through /proc/PID/map_files or
 * /proc/PID/root), probe it, and give exact figures attributed to it.
 *
 * Usage: test-bpf-ns GT_LEAK
 */
#include "bpf_test.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64] = "/tmp/memtrace-bpf-ns-XXXXXX";
static char libc_path[512];

static int copy(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	ssize_t n;

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	return close(out) || n < 0 ? -1 : 0;
}

/* In the child: its own mount namespace, a tmpfs there with a copy of
 * libc.so.6, and the dynamic linker told to look there first. */
static int enter_container(void *arg)
{
	char to[128];

	(void)arg;
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=16m"))
		return -1;
	snprintf(to, sizeof(to), "%s/libc.so.6", dir);
	if (copy(libc_path, to))
		return -1;
	return setenv("LD_LIBRARY_PATH", dir, 1);
}

struct find {
	uint32_t pid;
	uint64_t lo, hi, bytes;
	int sites;
	const char *obj;
	struct mt_bpf *b;
};

static void site_cb(void *ctx, const struct mt_bpf_site *s)
{
	struct find *f = ctx;
	if (s->pid != f->pid || !s->nframes || s->frames[0] < f->lo || s->frames[0] >= f->hi)
		return;
	f->sites++;
	f->bytes += s->outstanding_bytes;
	f->obj = mt_bpf_object_path(f->b, s->object);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_LEAK\n", argv[0]);
		return 2;
	}
	struct mt_bpf_opts o = { .events = 0 };
	struct mt_bpf *b = bt_open(&o);
	struct bt_child c;
	char *cargv[] = { argv[1], NULL };
	char err[512], line[1024];

	/* Our libc, to copy. */
	FILE *m = fopen("/proc/self/maps", "r");
	while (m && fgets(line, sizeof(line), m)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = 0;
			snprintf(libc_path, sizeof(libc_path), "%s", p);
			break;
		}
	}
	if (m)
		fclose(m);
	if (!mkdtemp(dir) || !libc_path[0]) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}
	bt_spawn_hook(&c, cargv, enter_container, NULL);
	bt_go(&c);
	if (!bt_wait_output(&c, "\n", 5000)) {
		int st = 0;
		bt_reap(&c, 1);
		st = c.status;
		rmdir(dir);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 125) {
			printf("SKIP: cannot make a mount namespace here\n");
			return 77;
		}
		fprintf(stderr, "gt-bpf-leak did not start (status 0x%x)\n", st);
		return 1;
	}
	/* Its libc is one we cannot see. */
	char mine[128];
	snprintf(mine, sizeof(mine), "%s/libc.so.6", dir);
	CHECK(access(mine, F_OK) != 0, "%s is visible outside the namespace", mine);

	if (mt_bpf_trace_pid(b, c.pid, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_pid: %s\n", err);
		failures++;
	}
	bt_write_input(&c, "go\n");
	CHECK(bt_wait_output(&c, "done\n", 5000), "no done");

	unsigned long long base = 0;
	const char *r = c.buf ? strstr(c.buf, "ready base ") : NULL;
	struct find f = { .pid = c.pid, .b = b };
	CHECK(r && sscanf(r, "ready base %llx", &base) == 1, "no base");
	CHECK(bt_symbol(argv[1], "leak_a", base, &f.lo, &f.hi) == 0, "no leak_a");
	mt_bpf_read_sites(b, 0, site_cb, &f);
	CHECK_EQ(f.sites, 1);
	CHECK_EQ(f.bytes, 10000);
	CHECK(f.obj && !strcmp(f.obj, mine), "allocations attributed to %s, not %s", f.obj ? f.obj : "(none)", mine);
	if (!failures)
		printf("ns: libc copy %s in the program's own mount namespace traced; leak_a's 10000 bytes exact\n", mine);

	bt_close_input(&c);
	bt_reap(&c, 1);
	mt_bpf_close(b);
	rmdir(dir);
	free(c.buf);
	return failures ? 1 : 0;
}
