/*
 * commands.h - the subcommands of the memtrace binary, one function each
 * (git's builtin style); main.c dispatches on the first argument.
 */
#ifndef MEMTRACE_COMMANDS_H
#define MEMTRACE_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_server(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_gather(int argc, char **argv);

#endif
