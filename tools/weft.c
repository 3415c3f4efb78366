/* tools/weft.c — the `weft` command-line program: parses the options common
 * to the inspection commands and dispatches to each subcommand, every one
 * in a file of its own (tools/cmd_*.c): version, plugins, ops, devices and
 * data (tools/inspect.h) take the parsed options; graph, ckpt, run and
 * worker parse their own arguments (tools/commands.h). It uses only the
 * public API. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "commands.h"
#include "inspect.h"

/* ---- dispatch ---------------------------------------------------------------
 */

static const weft_inspect_command *const commands[] = {
    &weft_version_command, &weft_plugins_command, &weft_ops_command,
    &weft_devices_command, &weft_data_command,
};

#define NUM_COMMANDS (int)(sizeof commands / sizeof commands[0])

/* Commands with files and arguments of their own (tools/commands.h). */
typedef struct own_command {
  const char *name;
  weft_cmd_main *main;
  const char *summary;
  const char *help;
} own_command;

static const own_command own_commands[] = {
    {"graph", weft_cmd_graph, weft_graph_summary, weft_graph_help},
    {"ckpt", weft_cmd_ckpt, weft_ckpt_summary, weft_ckpt_help},
    {"run", weft_cmd_run, weft_run_summary, weft_run_help},
    {"import", weft_cmd_import, weft_import_summary, weft_import_help},
    {"worker", weft_cmd_worker, weft_worker_summary, weft_worker_help},
    {"serve", weft_cmd_serve, weft_serve_summary, weft_serve_help},
};

#define NUM_OWN_COMMANDS (int)(sizeof own_commands / sizeof own_commands[0])

static const own_command *find_own_command(const char *name) {
  for (int i = 0; i < NUM_OWN_COMMANDS; i++)
    if (strcmp(own_commands[i].name, name) == 0)
      return &own_commands[i];
  return NULL;
}

/* Runs an own command if argv names one after the global options
 * (--config FILE, --config=FILE); -1 when it does not. */
static int try_own_command(int argc, char **argv) {
  const char *config = NULL;
  int i = 1;
  while (i < argc) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config = argv[i + 1];
      i += 2;
    } else if (strncmp(argv[i], "--config=", 9) == 0) {
      config = argv[i] + 9;
      i++;
    } else {
      break;
    }
  }
  if (i >= argc)
    return -1;
  const own_command *c = find_own_command(argv[i]);
  if (!c)
    return -1;
  for (int k = i + 1; k < argc; k++) {
    if (strcmp(argv[k], "--") == 0)
      break;
    if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
      fputs(c->help, stdout);
      return 0;
    }
  }
  int rc = c->main(argc - i, argv + i, config);
  if (fflush(stdout) != 0) {
    fprintf(stderr, "weft: writing output: %s\n", strerror(errno));
    return 1;
  }
  return rc;
}

static void usage(FILE *f) {
  fprintf(f, "usage: weft [--config FILE] COMMAND [OPTIONS]\n\n"
             "weft is a dataflow-graph machine-learning runtime. Commands:\n");
  for (int i = 0; i < NUM_COMMANDS; i++)
    fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  for (int i = 0; i < NUM_OWN_COMMANDS; i++)
    fprintf(f, "  %-10s %s\n", own_commands[i].name, own_commands[i].summary);
  fprintf(f, "\nOptions for every command:\n"
             "  --config FILE  read this config (default: $WEFT_CONFIG, then "
             "the installed weft.conf)\n"
             "  --json         machine-readable output\n"
             "  --help         help for the command\n"
             "\nRun `weft COMMAND --help` for more.\n");
}

static const weft_inspect_command *find_command(const char *name) {
  for (int i = 0; i < NUM_COMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0)
      return commands[i];
  return NULL;
}

wf_runtime *weft_open_runtime(const char *config) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  wf_runtime *rt = NULL;
  if (!st || !cfg) {
    fprintf(stderr, "weft: out of memory\n");
    goto done;
  }
  const char *path = config ? config : wf_config_default_path();
  if (path && wf_config_load(cfg, path, st)) {
    fprintf(stderr, "weft: %s\n", wf_status_message(st));
    goto done;
  }
  rt = wf_runtime_new(cfg, st);
  if (!rt)
    fprintf(stderr, "weft: %s\n", wf_status_message(st));
done:
  wf_config_free(cfg);
  wf_status_free(st);
  return rt;
}

/* Settings of the libraries below the runtime that suit this program, made
 * before any of them reads its environment and before any thread exists;
 * a value the user set is kept. hwloc opens every plugin it finds when the
 * first topology is made: its libxml2 reader, GL, OpenCL and PCI
 * discovery serve nothing weft asks of hwloc (cores, caches and binding
 * come from its built-in Linux backend; a GPU's nearest CPUs from sysfs),
 * and opening them took 3-4 ms of every command's start. */
static void library_settings(void) {
  setenv("HWLOC_PLUGINS_BLACKLIST",
         "hwloc_xml_libxml,hwloc_gl,hwloc_opencl,hwloc_pci", 0);
}

int main(int argc, char **argv) {
  opts o = {0};
  int help = 0;
  const weft_inspect_command *cmd = NULL;
  library_settings();
  int own = try_own_command(argc, argv);
  if (own >= 0)
    return own;
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'},
      {"json", no_argument, NULL, 'j'},
      {"device", required_argument, NULL, 'd'},
      {"format", required_argument, NULL, 'f'},
      {"option", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  /* Options may come before or after the command; GNU getopt permutes. */
  int c;
  o.records = -1;
  while ((c = getopt_long(argc, argv, "c:jd:hn:", longopts, NULL)) != -1) {
    switch (c) {
    case 'c':
      o.config = optarg;
      break;
    case 'j':
      o.json = 1;
      break;
    case 'd':
      o.device = optarg;
      break;
    case 'h':
      help = 1;
      break;
    case 'n': {
      char *end;
      errno = 0;
      o.records = strtol(optarg, &end, 10);
      if (errno || *end || o.records < 0) {
        fprintf(stderr, "weft: -n wants a number of records, not '%s'\n",
                optarg);
        return 2;
      }
      break;
    }
    case 'f':
      o.format = optarg;
      break;
    case 'o':
      if (o.noptions == MAX_DATA_OPTIONS) {
        fprintf(stderr, "weft: at most %d --option\n", MAX_DATA_OPTIONS);
        return 2;
      }
      o.options[o.noptions++] = optarg;
      break;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    cmd = find_command(argv[optind]);
    if (!cmd) {
      fprintf(stderr, "weft: unknown command '%s'\n\n", argv[optind]);
      usage(stderr);
      return 2;
    }
    optind++;
  }
  if (!cmd) {
    usage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  if (help) {
    fputs(cmd->help, stdout);
    return 0;
  }
  if (cmd == &weft_ops_command && optind < argc)
    o.op = argv[optind++];
  if (cmd == &weft_data_command) {
    if (optind + 2 > argc) {
      fprintf(stderr, "weft data: give an action (head, count, validate) and "
                      "a SOURCE (see weft data --help)\n");
      return 2;
    }
    o.action = argv[optind++];
    o.source = argv[optind++];
  }
  if (optind < argc) {
    fprintf(stderr, "weft %s: unexpected argument '%s' (see weft %s --help)\n",
            cmd->name, argv[optind], cmd->name);
    return 2;
  }
  if (o.device && cmd != &weft_ops_command) {
    fprintf(stderr, "weft %s: --device applies to `weft ops` only\n",
            cmd->name);
    return 2;
  }
  if ((o.format || o.noptions || o.records >= 0) && cmd != &weft_data_command) {
    fprintf(stderr,
            "weft %s: -n, --format and --option apply to `weft data` only\n",
            cmd->name);
    return 2;
  }
  if (cmd == &weft_data_command && strcmp(o.action, "head") &&
      strcmp(o.action, "count") && strcmp(o.action, "validate")) {
    fprintf(stderr,
            "weft data: unknown action '%s' (head, count or validate)\n",
            o.action);
    return 2;
  }
  wf_runtime *rt = NULL;
  if (cmd->needs_runtime) {
    rt = weft_open_runtime(o.config);
    if (!rt)
      return 1;
  }
  int rc = cmd->run(rt, &o);
  wf_runtime_free(rt);
  if (fflush(stdout) != 0) {
    fprintf(stderr, "weft: writing output: %s\n", strerror(errno));
    return 1;
  }
  return rc;
}
