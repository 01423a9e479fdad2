/*
 * state.c - the shim's process-wide switches: whether events are recorded
 * now, and which clock stamps them.
 *
 * They live apart from the hooks because more than the hooks change them:
 * start-up, fork and SIGUSR1/SIGUSR2 (preload.c) turn recording on and off,
 * and the channel turns it off when the recorder has gone.  mt_now() itself
 * is inline in shim.h, so that reading the clock stays a direct call to
 * clock_gettime on the allocation path.
 */
#include "shim.h"

int mt_enabled;
clockid_t mt_clock = CLOCK_MONOTONIC;
