/*
 * sigkill.c - a traced program, or its recorder, killed with SIGKILL.
 *
 * gt-sigkill self:     before_kill: 1000 x malloc(100), all kept; prints
 *                      "ready"; sleeps 1.5 s; late: 10 x malloc(100); then
 *                      raise(SIGKILL).  The process has no chance to flush
 *                      anything: what memtrace got, it got while the program
 *                      ran.  The 1000 blocks made 1.5 s before the kill must
 *                      all be in the recording, leaked (nothing was freed);
 *                      of the 10 made just before it, anywhere from none to
 *                      all.  `memtrace record` exits with 128 + 9.
 *
 * gt-sigkill recorder: before_kill as above; prints "pid=PID ready"; sleeps
 *                      3 s (the test kills `memtrace record` with SIGKILL
 *                      1.5 s after "ready"); late: 10 x malloc(100); prints
 *                      "done" and exits 0.  The program must go on unharmed
 *                      when its recorder is gone and finish with its own
 *                      status, 0 (the test, made the reaper of orphans,
 *                      waits for it), and the recording must
 *                      hold the 1000 blocks, written at least 1.25 s before
 *                      the recorder died.
 */
#include "gt.h"

#include <signal.h>

static void *kept[1010];

NOINLINE void before_kill(void)
{
	for (int i = 0; i < GT_N(1000); i++) {
		kept[i] = malloc(100); /* @site:before_kill */
		gt_keep(kept[i]);
	}
}

NOINLINE void late(void)
{
	for (int i = 0; i < GT_N(10); i++) {
		kept[1000 + i] = malloc(100); /* @site:late */
		gt_keep(kept[1000 + i]);
	}
}

int main(int argc, char **argv)
{
	int recorder = argc > 1 && !strcmp(argv[1], "recorder");
	before_kill();
	gt_say("pid=%d ready\n", (int)getpid());
	gt_sleep_ms(recorder ? 3000 : 1500);
	late();
	if (recorder) {
		gt_say("done\n");
		return 0;
	}
	raise(SIGKILL);
	return 1;
}
