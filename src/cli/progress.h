/*
 * progress.h - the command line's progress reporter (progress.c), which
 * main installs for every stage's long steps (base/progress.h).
 */
#ifndef MEMTRACE_CLI_PROGRESS_H
#define MEMTRACE_CLI_PROGRESS_H

#include "base/progress.h"

extern const struct mt_progress_reporter cli_progress;

#endif
