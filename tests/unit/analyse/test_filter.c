/*
 * test_filter.c - unit tests of the allocation filter (analyse/filter.c):
 * every kind of key parses its values (numbers, hex, seconds, minutes,
 * percentages, lifetimes, regexes) and refuses bad ones with a message
 * naming the key; the command-line form takes "--key N" and "--key=N"; and
 * each key matches exactly the allocations it should, per allocation (time,
 * size, address, lifetime) and per site (group figures, stack depth, regexes)
 * of a process built in memory; the thread key keeps one thread's
 * allocations.
 */
#include "analyse/filter.h"
#include "../check.h"

#include <stdio.h>
#include <string.h>

#define S 1000000000ull
#define T0 (5 * S)

static char err[300];

static int set(struct mt_filter *f, const char *key, const char *value)
{
	err[0] = 0;
	return mt_filter_set(f, key, value, err, sizeof err);
}

static void test_parse(void)
{
	struct mt_filter f;
	mt_filter_init(&f);
	CHECK(!f.active);
	CHECK(set(&f, "size_min", "100") == 0 && f.size_min.set && f.size_min.v == 100 &&
	      !f.size_min.pct);
	CHECK(f.active);
	CHECK(set(&f, "size_max", "0x10") == 0 && f.size_max.v == 16);
	CHECK(set(&f, "size_min", "-5") == -1 && !strcmp(err, "size_min: '-5' is not a number"));
	CHECK(f.size_min.v == 100); /* a refused value leaves the key as it was */
	CHECK(set(&f, "size_min", "12abc") == -1 && strstr(err, "size_min"));
	CHECK(set(&f, "size_min", "") == -1);
	CHECK(set(&f, "size_min", NULL) == -1);
	CHECK(set(&f, "address_min", "50%") == -1 && strstr(err, "is not a number"));
	CHECK(set(&f, "from", "1.5") == 0 && f.from.v == 1.5 && !f.from.pct);
	CHECK(set(&f, "from", "50%") == 0 && f.from.v == 50 && f.from.pct);
	CHECK(set(&f, "from", "150%") == -1 &&
	      !strcmp(err,
		      "from: '150%' is not a duration: seconds, or a number with ms, s, min or h "
		      "(200ms, 1.5s, 2min, 1h), or a percentage of the run (10%)"));
	CHECK(set(&f, "to", "2s") == 0 && f.to.v == 2 && !f.to.pct);
	CHECK(set(&f, "to", "200ms") == 0 && f.to.v == 0.2);
	CHECK(set(&f, "to", "1.5s") == 0 && f.to.v == 1.5);
	CHECK(set(&f, "to", "2min") == 0 && f.to.v == 120);
	CHECK(set(&f, "to", "1h") == 0 && f.to.v == 3600);
	/* "m" is minutes to some and milliseconds to others: refused, and the
	 * key keeps its value */
	CHECK(set(&f, "to", "200m") == -1 && strstr(err, "to: '200m' is not a duration: ") &&
	      strstr(err, "200ms, 1.5s, 2min, 1h"));
	CHECK(f.to.v == 3600);
	CHECK(set(&f, "to", "1.5 s") == -1 && set(&f, "to", "inf") == -1 &&
	      set(&f, "to", "5x") == -1);
	CHECK(set(&f, "lifetime_max", "10ms") == 0 && f.lifetime_max.v == 0.01);
	CHECK(set(&f, "to", "soon") == -1);
	CHECK(set(&f, "lifetime_min", "0.25") == 0 && f.lifetime_min.v == 0.25);
	CHECK(set(&f, "lifetime_min", "50%") == -1 &&
	      !strcmp(err,
		      "lifetime_min: '50%' is not a duration: seconds, or a number with ms, s, "
		      "min or h (200ms, 1.5s, 2min, 1h)"));
	CHECK(set(&f, "group_leaked_allocations_min", "50%") == 0 && f.group_leaked_min.pct &&
	      f.group_leaked_min.v == 50);
	CHECK(set(&f, "group_leaked_allocations_max", "3") == 0 && !f.group_leaked_max.pct &&
	      f.group_leaked_max.v == 3);
	CHECK(set(&f, "group_leaked_allocations_max", "x") == -1 &&
	      strstr(err, "is not a number or a percentage"));
	CHECK(set(&f, "group_allocations_min", "50%") == -1);
	CHECK(set(&f, "group_interval_min", "10%") == 0 && f.group_interval_min.pct);
	CHECK(set(&f, "backtrace_depth_min", "3") == 0 && f.depth_min.v == 3);
	CHECK(set(&f, "nonsense", "1") == 1);
	/* the description: each key once, with its last value taken, in the
	 * order last set */
	CHECK(f.desc && !strcmp(f.desc, "size_min=100\nsize_max=0x10\nfrom=50%\nto=1h\n"
					"lifetime_max=10ms\nlifetime_min=0.25\n"
					"group_leaked_allocations_min=50%\n"
					"group_leaked_allocations_max=3\ngroup_interval_min=10%\n"
					"backtrace_depth_min=3"));
	mt_filter_free(&f);

	mt_filter_init(&f);
	CHECK(set(&f, "lifetime", "all") == 0 && f.lifetime == MT_LIFE_ALL && !f.active);
	CHECK(set(&f, "lifetime", "only_leaked") == 0 && f.lifetime == MT_LIFE_ONLY_LEAKED &&
	      f.active);
	CHECK(set(&f, "lifetime", "only_whole_group_leaked") == 0 &&
	      f.lifetime == MT_LIFE_ONLY_WHOLE_GROUP_LEAKED);
	CHECK(set(&f, "lifetime", "bogus") == -1 &&
	      !strncmp(err, "lifetime: 'bogus' is none of all, ", 34));
	CHECK(f.lifetime == MT_LIFE_ONLY_WHOLE_GROUP_LEAKED);
	CHECK(set(&f, "function_regex", "(") == -1 &&
	      !strncmp(err, "function_regex: not a regular expression: ", 42));
	CHECK(!f.re_set[0]);
	CHECK(set(&f, "function_regex", "^main$") == 0 && f.re_set[0]);
	CHECK(set(&f, "negative_source_regex", "[") == -1 && !f.re_set[3]);
	CHECK(set(&f, "negative_source_regex", "\\.h$") == 0 && f.re_set[3]);
	mt_filter_free(&f);
	CHECK(!f.re_set[0] && !f.active);
}

static void test_arg(void)
{
	char *argv[] = { "report",	  "--size-min", "50",
			 "--size-max=90", "--lifetime", "only_temporary",
			 "--json",	  "-n",		"--group-allocations-min=x",
			 "--size-min",	  NULL };
	int argc = 10, i;
	struct mt_filter f;
	mt_filter_init(&f);
	i = 1;
	CHECK(mt_filter_arg(&f, "report", argc, argv, &i) == 1 && i == 2 && f.size_min.v == 50);
	i = 3;
	CHECK(mt_filter_arg(&f, "report", argc, argv, &i) == 1 && i == 3 && f.size_max.v == 90);
	i = 4;
	CHECK(mt_filter_arg(&f, "report", argc, argv, &i) == 1 && i == 5 &&
	      f.lifetime == MT_LIFE_ONLY_TEMPORARY);
	i = 6;
	CHECK(mt_filter_arg(&f, "report", argc, argv, &i) == 0 && i == 6); /* not a filter option */
	i = 7;
	CHECK(mt_filter_arg(&f, "report", argc, argv, &i) == 0 && i == 7);
	fprintf(stderr, "(two usage errors expected:)\n");
	i = 8;
	CHECK(mt_filter_arg(&f, "report", argc, argv, &i) == -1 && !f.group_allocations_min.set);
	i = 9; /* the last argument: no value follows */
	CHECK(mt_filter_arg(&f, "report", argc, argv, &i) == -1);
	mt_filter_free(&f);
}

/* A process of two sites: site 0 (2 frames), 4 allocations between 1 s and
 * 1 s, all leaked; site 1 (3 frames), 10 allocations from 1 s to 9 s, one
 * leaked.  It runs from T0 for 10 s. */
static struct mt_recording rec;
static struct mt_process *proc;
static uint32_t site0, site1;

static void make_process(void)
{
	static const uint64_t a[] = { 0x401010, 0x402020 }, b[] = { 0x401210, 0x402120, 0x403000 };
	proc = mt_process_add(&rec, 1, 0, "/bin/x", "x", 2, "preload");
	site0 = mt_process_site(proc, a, 2);
	site1 = mt_process_site(proc, b, 3);
	CHECK(site0 != site1);
	mt_figures_reserve_site(&proc->figures, site0);
	mt_figures_reserve_site(&proc->figures, site1);
	proc->start_ts = T0;
	proc->end_ts = T0 + 10 * S;
	struct mt_site_stats *s = &proc->figures.sites[site0];
	s->allocations = 4;
	s->live_count = 4;
	proc->figures.times[site0].first_ts = proc->figures.times[site0].last_ts = T0 + S;
	s = &proc->figures.sites[site1];
	s->allocations = 10;
	s->live_count = 1;
	proc->figures.times[site1].first_ts = T0 + S;
	proc->figures.times[site1].last_ts = T0 + 9 * S;
}

/* Does an allocation (site SITE, SIZE bytes at PTR, made at T seconds,
 * freed at FREE seconds or never when FREE < 0) match F? */
static int life(const struct mt_filter *f, uint32_t site, uint64_t ptr, uint64_t size, double t,
		double free, int temporary)
{
	struct mt_filter_proc fp;
	struct mt_life l = { .ptr = ptr,
			     .size = size,
			     .ts = T0 + (uint64_t)(t * S),
			     .site = site,
			     .freed = free >= 0,
			     .temporary = temporary };
	if (free >= 0)
		l.free_ts = T0 + (uint64_t)(free * S);
	mt_filter_prepare(&fp, f, proc, NULL);
	int m = mt_filter_match(&fp, &l);
	mt_filter_proc_free(&fp);
	return m;
}

/* A filter of one KEY=VALUE. */
static struct mt_filter one(const char *key, const char *value)
{
	struct mt_filter f;
	mt_filter_init(&f);
	CHECK(set(&f, key, value) == 0);
	return f;
}

static void test_match(void)
{
	struct mt_filter f;
	make_process();

	mt_filter_init(&f);
	CHECK(life(&f, site1, 0x1000, 1, 2, 3, 0));
	CHECK(!life(&f, 7, 0x1000, 1, 2, 3, 0)); /* a site the process does not have */
	CHECK(set(&f, "size_min", "100") == 0 && set(&f, "size_max", "200") == 0);
	CHECK(life(&f, site1, 0x1000, 100, 2, 3, 0) && life(&f, site1, 0x1000, 200, 2, 3, 0));
	CHECK(!life(&f, site1, 0x1000, 99, 2, 3, 0) && !life(&f, site1, 0x1000, 201, 2, 3, 0));
	mt_filter_free(&f);

	f = one("address_min", "0x2000");
	CHECK(!life(&f, site1, 0x1fff, 1, 2, 3, 0) && life(&f, site1, 0x2000, 1, 2, 3, 0));
	mt_filter_free(&f);

	/* from/to bound when the allocation was made, in seconds or % of the run */
	f = one("from", "1");
	CHECK(set(&f, "to", "5") == 0);
	CHECK(life(&f, site1, 0x1000, 1, 2, -1, 0) && life(&f, site1, 0x1000, 1, 5, -1, 0));
	CHECK(!life(&f, site1, 0x1000, 1, 0.5, -1, 0) && !life(&f, site1, 0x1000, 1, 6, -1, 0));
	mt_filter_free(&f);

	/* thread: the allocating thread's id, whichever thread freed it */
	f = one("thread", "4242");
	{
		struct mt_filter_proc fp;
		struct mt_life l = {
			.ptr = 0x1000, .size = 1, .ts = T0 + S, .site = site1, .tid = 4242
		};
		mt_filter_prepare(&fp, &f, proc, NULL);
		CHECK(mt_filter_match(&fp, &l));
		l.tid = 4243;
		CHECK(!mt_filter_match(&fp, &l));
		l.tid = 0;
		CHECK(!mt_filter_match(&fp, &l));
		mt_filter_proc_free(&fp);
	}
	CHECK(f.desc && !strcmp(f.desc, "thread=4242"));
	mt_filter_free(&f);
	mt_filter_init(&f);
	CHECK(set(&f, "thread", "main") == -1 && !strcmp(err, "thread: 'main' is not a number"));
	CHECK(set(&f, "thread", "-1") == -1);
	mt_filter_free(&f);
	f = one("from", "50%"); /* 5 s of 10 */
	CHECK(!life(&f, site1, 0x1000, 1, 4.9, -1, 0) && life(&f, site1, 0x1000, 1, 5.1, -1, 0));
	mt_filter_free(&f);

	f = one("lifetime", "only_leaked");
	CHECK(life(&f, site1, 0x1000, 1, 2, -1, 0) && !life(&f, site1, 0x1000, 1, 2, 3, 0));
	mt_filter_free(&f);
	f = one("lifetime", "only_temporary");
	CHECK(life(&f, site1, 0x1000, 1, 2, 2.1, 1) && !life(&f, site1, 0x1000, 1, 2, 2.1, 0));
	mt_filter_free(&f);
	f = one("lifetime", "only_deallocated_in_current_range");
	CHECK(set(&f, "to", "2.5") == 0);
	CHECK(life(&f, site1, 0x1000, 1, 2, 2.2, 0) && !life(&f, site1, 0x1000, 1, 2, 3, 0));
	CHECK(!life(&f, site1, 0x1000, 1, 2, -1, 0));
	mt_filter_free(&f);
	f = one("lifetime", "only_not_deallocated_in_current_range");
	CHECK(set(&f, "to", "2.5") == 0);
	CHECK(!life(&f, site1, 0x1000, 1, 2, 2.2, 0) && life(&f, site1, 0x1000, 1, 2, 3, 0));
	CHECK(life(&f, site1, 0x1000, 1, 2, -1, 0));
	mt_filter_free(&f);

	/* lifetime_min/max: from allocation to free, or to the end (10 s) */
	f = one("lifetime_min", "0.5");
	CHECK(set(&f, "lifetime_max", "2") == 0);
	CHECK(life(&f, site1, 0x1000, 1, 2, 3, 0) && !life(&f, site1, 0x1000, 1, 2, 2.2, 0));
	CHECK(!life(&f, site1, 0x1000, 1, 2, -1, 0)); /* 8 s to the end */
	CHECK(life(&f, site1, 0x1000, 1, 9, -1, 0));  /* 1 s to the end */
	mt_filter_free(&f);

	/* the group keys judge the site over all its allocations */
	f = one("group_allocations_min", "5");
	CHECK(!life(&f, site0, 0x1000, 1, 1, -1, 0) && life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("group_leaked_allocations_min", "50%");
	CHECK(life(&f, site0, 0x1000, 1, 1, -1, 0) && !life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("group_leaked_allocations_max", "1");
	CHECK(!life(&f, site0, 0x1000, 1, 1, -1, 0) && life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("group_interval_min", "5");
	CHECK(!life(&f, site0, 0x1000, 1, 1, -1, 0) && life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("group_interval_max", "10%"); /* 1 s of 10 */
	CHECK(life(&f, site0, 0x1000, 1, 1, -1, 0) && !life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("lifetime", "only_whole_group_leaked");
	CHECK(life(&f, site0, 0x1000, 1, 1, 2, 0) && !life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);

	/* the stack: its depth, and regexes over its functions (these
	 * addresses lie in no module: no function has a name) */
	f = one("backtrace_depth_min", "3");
	CHECK(!life(&f, site0, 0x1000, 1, 1, -1, 0) && life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("backtrace_depth_max", "2");
	CHECK(life(&f, site0, 0x1000, 1, 1, -1, 0) && !life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("function_regex", ".");
	CHECK(!life(&f, site0, 0x1000, 1, 1, -1, 0) && !life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);
	f = one("negative_function_regex", ".");
	CHECK(life(&f, site0, 0x1000, 1, 1, -1, 0) && life(&f, site1, 0x1000, 1, 1, -1, 0));
	mt_filter_free(&f);

	mt_recording_free(&rec);
}

int main(void)
{
	test_parse();
	test_arg();
	test_match();
	if (failures) {
		fprintf(stderr, "filter: %d checks failed\n", failures);
		return 1;
	}
	printf("filter: all checks passed\n");
	return 0;
}
