/* tools/commands.h — the `weft` subcommands that parse their own arguments
 * (graph, ckpt, run, worker, import, serve; each in its cmd_*.c). weft.c
 * dispatches to them; everything they use of weft is the public API. */
#ifndef WEFT_TOOLS_COMMANDS_H
#define WEFT_TOOLS_COMMANDS_H

#include <weft/weft.h>

/* A command's entry point. argv[0] is the command's name ("graph"), the
 * rest its own arguments; config is the --config FILE given before the
 * command, or NULL. Returns the exit status: 0 success, 1 failure (a message
 * on stderr naming the file and the problem), 2 bad usage. */
typedef int weft_cmd_main(int argc, char **argv, const char *config);

int weft_cmd_graph(int argc, char **argv, const char *config);
int weft_cmd_ckpt(int argc, char **argv, const char *config);
int weft_cmd_run(int argc, char **argv, const char *config);
int weft_cmd_worker(int argc, char **argv, const char *config);
int weft_cmd_import(int argc, char **argv, const char *config);
int weft_cmd_serve(int argc, char **argv, const char *config);

/* Each command's one-line summary and full help (printed for --help). */
extern const char weft_graph_summary[], weft_graph_help[];
extern const char weft_ckpt_summary[], weft_ckpt_help[];
extern const char weft_run_summary[], weft_run_help[];
extern const char weft_worker_summary[], weft_worker_help[];
extern const char weft_import_summary[], weft_import_help[];
extern const char weft_serve_summary[], weft_serve_help[];

/* A runtime with the config at path (NULL: $WEFT_CONFIG, then the installed
 * weft.conf). Prints the reason on stderr and returns NULL on failure. */
wf_runtime *weft_open_runtime(const char *config);

#endif
