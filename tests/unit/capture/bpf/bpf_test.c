/*
 * bpf_test.c - helpers of the BPF capture tests (bpf_test.h).
 */
#include "bpf_test.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/bpf/capture_int.h"

int failures;

void bt_require_bpf(void)
{
	char err[512];

	if (mtb_check_support("/", err, sizeof(err))) {
		printf("SKIP: %s\n", err);
		exit(77);
	}
}

struct mt_bpf *bt_open(const struct mt_bpf_opts *o)
{
	struct mt_bpf *b;
	char err[512];

	bt_require_bpf();
	if (mt_bpf_open(&b, o, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_open: %s\n", err);
		exit(1);
	}
	return b;
}

void bt_spawn(struct bt_child *c, char *const argv[])
{
	bt_spawn_hook(c, argv, NULL, NULL);
}

void bt_spawn_hook(struct bt_child *c, char *const argv[], int (*before_exec)(void *arg), void *arg)
{
	int go[2], out[2], in[2];

	memset(c, 0, sizeof(*c));
	if (pipe2(go, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(in, O_CLOEXEC)) {
		perror("pipe");
		exit(1);
	}
	c->pid = fork();
	if (c->pid < 0) {
		perror("fork");
		exit(1);
	}
	if (c->pid == 0) {
		char ch;
		close(go[1]);
		close(out[0]);
		close(in[1]);
		if (read(go[0], &ch, 1) != 1)
			_exit(126);
		dup2(out[1], 1);
		dup2(in[0], 0);
		if (before_exec && before_exec(arg))
			_exit(125);
		execv(argv[0], argv);
		_exit(127);
	}
	close(go[0]);
	close(out[1]);
	close(in[0]);
	c->in = in[1];
	c->go = go[1];
	c->out = out[0];
	fcntl(c->out, F_SETFL, O_NONBLOCK);
}

void bt_go(struct bt_child *c)
{
	if (write(c->go, "g", 1) != 1)
		perror("write");
	close(c->go);
	c->go = -1;
}

void bt_write_input(struct bt_child *c, const char *s)
{
	if (c->in < 0 || write(c->in, s, strlen(s)) != (ssize_t)strlen(s))
		perror("write to child");
}

void bt_close_input(struct bt_child *c)
{
	if (c->in >= 0)
		close(c->in);
	c->in = -1;
}

int bt_read_output(struct bt_child *c)
{
	for (;;) {
		if (c->cap - c->len < 4096) {
			c->cap = c->cap ? c->cap * 2 : 65536;
			c->buf = realloc(c->buf, c->cap + 1);
			if (!c->buf)
				abort();
			c->buf[c->len] = 0; /* a string before anything is read */
		}
		ssize_t n = read(c->out, c->buf + c->len, c->cap - c->len);
		if (n > 0) {
			c->len += n;
			c->buf[c->len] = 0;
			continue;
		}
		if (n == 0)
			return 1;
		if (errno == EINTR)
			continue;
		return 0;
	}
}

int bt_reap(struct bt_child *c, int block)
{
	if (c->exited)
		return 1;
	pid_t r = waitpid(c->pid, &c->status, block ? 0 : WNOHANG);
	if (r == c->pid) {
		c->exited = 1;
		bt_read_output(c);
	}
	return c->exited;
}

int bt_wait_output(struct bt_child *c, const char *needle, int timeout_ms)
{
	uint64_t end = bt_now_ns() + (uint64_t)timeout_ms * 1000000;

	while (bt_now_ns() < end) {
		bt_read_output(c);
		if (c->buf && strstr(c->buf, needle))
			return 1;
		if (bt_reap(c, 0))
			return c->buf && strstr(c->buf, needle);
		struct pollfd p = { .fd = c->out, .events = POLLIN };
		poll(&p, 1, 10);
	}
	return 0;
}

/* The link-time value and size of function NAME in EXE's .symtab. */
static int sym_value(const char *exe, const char *name, uint64_t *value, uint64_t *size)
{
	int fd = open(exe, O_RDONLY), found = 0;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;

	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			const char *n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name)) {
				*value = s.st_value;
				*size = s.st_size;
				found = 1;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found ? 0 : -1;
}

int bt_symbol(const char *exe, const char *name, uint64_t main_runtime, uint64_t *lo, uint64_t *hi)
{
	uint64_t main_v, main_sz, v, sz;

	if (sym_value(exe, "main", &main_v, &main_sz) || sym_value(exe, name, &v, &sz))
		return -1;
	*lo = v - main_v + main_runtime;
	*hi = *lo + sz;
	return 0;
}

int bt_in_exe(const char *exe, uint64_t main_runtime, uint64_t addr)
{
	uint64_t main_v, main_sz;
	int fd, in = 0;
	size_t nph;

	if (sym_value(exe, "main", &main_v, &main_sz) || (fd = open(exe, O_RDONLY)) < 0)
		return 0;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);

	for (size_t k = 0; e && !elf_getphdrnum(e, &nph) && k < nph; k++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, k, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		uint64_t lo = ph.p_vaddr - main_v + main_runtime;
		in |= addr >= lo && addr < lo + ph.p_memsz;
	}
	if (e)
		elf_end(e);
	close(fd);
	return in;
}

void bt_collect(void *ctx, const struct mt_bpf_event *ev)
{
	struct bt_events *v = ctx;

	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 1024;
		v->v = realloc(v->v, v->cap * sizeof(*v->v));
		if (!v->v)
			abort();
	}
	v->v[v->n].e = *ev;
	v->v[v->n].frame0 = ev->nframes ? ev->frames[0] : 0;
	v->n++;
}

uint64_t bt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void bt_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}
