/*  kg_exec_standby: warm standby ranks (`kguard exec --standby`).

    For each local rank kguard keeps one pre-started Python interpreter,
    started with the rank's environment and the command's interpreter
    options, that has imported the job's heavy modules (--standby-imports,
    default torch; importing torch creates no GPU context) and waits. At a
    restart, once the old generation is gone and its checkpoint chosen,
    the standby becomes the rank instead of a cold start: kguard writes it
    the new generation's environment and the command's program and
    arguments through a pipe only the two share, and it runs the program
    as `python` would (runpy: __main__, __file__, sys.argv, sys.path[0]).
    Its process group becomes the rank's. A new standby starts behind each
    one once the new generation has trained a step. A standby that died or
    is older than --standby-max-age means a cold start, logged; after
    three deaths before use no more are started.

    What a standby cannot give: modules imported in it see the
    environment and files as they were at its start (the variables that
    change per generation are not read by torch at import).
*/
#include "kg_exec_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_envp.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"
#include "kg_throughput.h"

#define S_READY "kguard-standby-ready"
#define S_MAX_FAILURES 3
#define S_DUE_WITHOUT_STEPS_MS 20000   /* no step markers: start them anyway */

/*  The standby's program (python -c). It must stay small and import
    nothing heavy itself; its own names are gone from the program's view
    (runpy gives the program a fresh __main__). */
static const char s_boot[] =
  "import os, sys\n"
  "fd = int(os.environ.pop('KGUARD_STANDBY_FD'))\n"
  "for name in filter(None, os.environ.pop('KGUARD_STANDBY_IMPORTS', '').split(',')):\n"
  "    try:\n"
  "        __import__(name)\n"
  "    except Exception as e:\n"
  "        print('kguard standby: import %s failed: %s: %s' % (name, type(e).__name__, e),\n"
  "              file=sys.stderr, flush=True)\n"
  "print('" S_READY "', flush=True)\n"
  "with os.fdopen(fd, 'rb') as f:\n"
  "    data = f.read()\n"
  "if not data:\n"
  "    sys.exit(0)\n"
  "import json, runpy\n"
  "h = json.loads(data)\n"
  "os.environ.clear()\n"
  "os.environ.update(h['env'])\n"
  "sys.argv = h['argv']\n"
  "if h.get('module'):\n"
  "    sys.path[0] = os.getcwd()\n"
  "    del json, h, data, f, fd\n"
  "    runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
  "else:\n"
  "    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))\n"
  "    del json, h, data, f, fd\n"
  "    runpy.run_path(sys.argv[0], run_name='__main__')\n";

bool
kg_ex_standby_possible(const kg_exec_s *E, char *why, size_t len)
{
  bool module;
  if (E->mode == KG_EXEC_MODE_WRAP) {
    snprintf(why, len, "--standby needs kguard to start the ranks: run `kguard exec "
             "--nproc-per-node N -- python train.py` rather than torchrun");
    return false;
  }
  if (kg_exec_python_program(E->cfg.argv, &module) < 0) {
    snprintf(why, len, "--standby needs COMMAND to be `python [OPTIONS] SCRIPT [ARGS]` or "
             "`python [OPTIONS] -m MODULE [ARGS]` (a standby is a Python that runs it)");
    return false;
  }
  return true;
}

static void
s_close_fd(int *fd)
{
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/*  Start rank r's standby. Returns 0 or a negative code. */
static int
s_start(kg_exec_s *E, int r)
{
  kg_ex_rank_t *k = &E->ranks[r];
  bool module;
  int prog = kg_exec_python_program(E->cfg.argv, &module);
  if (prog < 0)
    return KG_EUSAGE;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return -errno;
  /* The read end is the standby's: inherited across exec (kguard is one
     thread; no other child is started before it is closed here). */
  fcntl(fds[0], F_SETFD, 0);
  char **env = kg_ex_build_env(E, r);
  size_t n = 0;
  while (env && env[n])
    n++;
  size_t alloc = n + 1;
  char fdtext[16];
  snprintf(fdtext, sizeof fdtext, "%d", fds[0]);
  int rc = env ? 0 : KG_ENOMEM;
  rc = rc ? rc : kg_envp_push(&env, &n, &alloc, "KGUARD_STANDBY_FD", fdtext) ? KG_ENOMEM : 0;
  rc = rc ? rc : kg_envp_push(&env, &n, &alloc, "KGUARD_STANDBY_IMPORTS",
                              E->cfg.standby_imports) ? KG_ENOMEM : 0;
  /* The interpreter with the command's own options, then the boot program. */
  int first = module ? prog - 1 : prog;
  char **argv = calloc((size_t) first + 3, sizeof *argv);
  if (!argv)
    rc = KG_ENOMEM;
  if (rc == 0) {
    for (int i = 0; i < first; i++)
      argv[i] = E->cfg.argv[i];
    argv[first] = "-c";
    argv[first + 1] = (char *) s_boot;
    /* With the keeper, as a rank: it becomes one. */
    kg_child_opts_t opts = {.argv = argv, .envp = env, .capture = true, .keeper = true,
                            .keeper_kill_at_once = true};
    rc = kg_child_spawn(&opts, &k->standby);
  }
  free(argv);
  kg_ex_free_env(&env);
  close(fds[0]);
  if (rc != 0) {
    close(fds[1]);
    return rc;
  }
  k->standby_fd = fds[1];
  k->standby_started = kg_ex_now(E);
  k->standby_warm = false;
  k->standby_seen = 0;
  kg_info("exec: warm standby for rank %d starting (pid %ld, importing %s)",
          E->cfg.node_rank * E->nranks + r, (long) kg_child_pid(k->standby),
          E->cfg.standby_imports);
  return 0;
}

void
kg_ex_standby_stop(kg_exec_s *E, int r)
{
  kg_ex_rank_t *k = &E->ranks[r];
  kg_child_destroy(&k->standby);
  s_close_fd(&k->standby_fd);
  k->standby_warm = false;
}

int64_t
kg_ex_standby_due(const kg_exec_s *E)
{
  if (!E->cfg.standby || kg_ex_state(E) != KG_EX_RUNNING || E->standby_failures >= S_MAX_FAILURES)
    return 0;
  bool missing = false;
  for (int r = 0; r < E->nranks; r++)
    missing = missing || !E->ranks[r].standby;
  if (!missing)
    return 0;
  /* Behind the generation's own start, not against it: once it trained a
     step (or after a while for a script that prints none). */
  return E->pace.last_step >= 0 ? 1 : E->generation_started + S_DUE_WITHOUT_STEPS_MS;
}

void
kg_ex_standby_tick(kg_exec_s *E)
{
  int64_t due = kg_ex_standby_due(E);
  if (due == 0 || due > kg_ex_now(E))
    return;
  for (int r = 0; r < E->nranks; r++) {
    if (E->ranks[r].standby)
      continue;
    int rc = s_start(E, r);
    if (rc != 0) {
      kg_warning("exec: cannot start a warm standby for rank %d: %s",
                 E->cfg.node_rank * E->nranks + r, kg_strerror(rc));
      E->standby_failures++;
      return;
    }
  }
}

void
kg_ex_standby_read(kg_exec_s *E, int r, int which)
{
  kg_ex_rank_t *k = &E->ranks[r];
  char buf[8192];
  for (int rounds = 0; rounds < 16 && k->standby; rounds++) {
    ssize_t n = kg_child_read(k->standby, which, buf, sizeof buf);
    if (n <= 0)
      return;
    size_t skip = 0;
    if (which == 1 && !k->standby_warm) {
      /* Its first line says it is ready; nothing else comes before. */
      size_t want = sizeof S_READY;   /* the line and its newline */
      while (skip < (size_t) n && k->standby_seen < want
             && buf[skip] == (S_READY "\n")[k->standby_seen]) {
        skip++;
        k->standby_seen++;
      }
      if (k->standby_seen == want) {
        k->standby_warm = true;
        char took[32];
        kg_notice("exec: warm standby for rank %d ready (pid %ld, in %s)",
                  E->cfg.node_rank * E->nranks + r, (long) kg_child_pid(k->standby),
                  kg_throughput_duration(kg_ex_now(E) - k->standby_started, took,
                                         sizeof took));
      }
    }
    /* Anything else it says (an import's warning) is the job's output. */
    if ((size_t) n > skip) {
      kg_ex_output(E, which, buf + skip, (size_t) n - skip);
      kg_exec_log_output(E->log, buf + skip, (size_t) n - skip);
    }
  }
}

bool
kg_ex_standby_reaped(kg_exec_s *E, pid_t pid)
{
  for (int r = 0; r < E->nranks; r++) {
    kg_ex_rank_t *k = &E->ranks[r];
    if (!k->standby || pid != kg_child_pid(k->standby))
      continue;
    if (kg_child_reap(k->standby) != 1)
      return true;
    char how[64];
    kg_child_describe(kg_child_status(k->standby), how, sizeof how);
    E->standby_failures++;
    kg_warning("exec: the warm standby for rank %d died before it was needed (%s)%s",
               E->cfg.node_rank * E->nranks + r, how,
               E->standby_failures >= S_MAX_FAILURES ? ": no more are started" : "");
    kg_ex_standby_stop(E, r);
    return true;
  }
  return false;
}

bool
kg_ex_standby_spared(const kg_exec_s *E, pid_t pid)
{
  for (int r = 0; E->ranks && r < E->nranks; r++)
    if (E->ranks[r].standby && pid == kg_child_pid(E->ranks[r].standby))
      return true;
  return false;
}

/*  The handover: the program's environment and argv, as JSON. */
static char *
s_handover(const kg_exec_s *E, char *const *envp)
{
  bool module;
  int prog = kg_exec_python_program(E->cfg.argv, &module);
  cJSON *h = cJSON_CreateObject();
  cJSON *env = cJSON_AddObjectToObject(h, "env");
  for (char *const *e = envp; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq)
      continue;
    char name[256];
    size_t nl = (size_t) (eq - *e);
    if (nl >= sizeof name)
      continue;
    memcpy(name, *e, nl);
    name[nl] = '\0';
    cJSON_AddStringToObject(env, name, eq + 1);
  }
  cJSON *argv = cJSON_AddArrayToObject(h, "argv");
  for (int i = prog; i >= 0 && E->cfg.argv[i]; i++)
    cJSON_AddItemToArray(argv, cJSON_CreateString(E->cfg.argv[i]));
  cJSON_AddBoolToObject(h, "module", module);
  char *text = cJSON_PrintUnformatted(h);
  cJSON_Delete(h);
  return text;
}

bool
kg_ex_standby_promote(kg_exec_s *E, int r)
{
  kg_ex_rank_t *k = &E->ranks[r];
  int rank = E->cfg.node_rank * E->nranks + r;
  if (!E->cfg.standby || !E->generation_started)
    return false;   /* the first start has no standby yet */
  if (!k->standby || !k->standby_warm) {
    kg_notice("exec: no warm standby for rank %d (%s): cold start", rank,
              k->standby ? "still importing" : "none is running");
    kg_ex_standby_stop(E, r);
    return false;
  }
  int64_t age = kg_ex_now(E) - k->standby_started;
  if (age > E->cfg.standby_max_age_ms) {
    kg_notice("exec: the warm standby for rank %d is %lld s old (--standby-max-age): "
              "cold start", rank, (long long) (age / 1000));
    kg_ex_standby_stop(E, r);
    return false;
  }
  char *text = s_handover(E, k->envp);
  int rc = text ? kg_file_write_all(k->standby_fd, text, strlen(text)) : KG_ENOMEM;
  free(text);
  s_close_fd(&k->standby_fd);
  if (rc != 0) {
    kg_warning("exec: cannot hand rank %d to its warm standby (%s): cold start", rank,
               kg_strerror(rc));
    kg_ex_standby_stop(E, r);
    return false;
  }
  kg_child_destroy(&k->child);
  k->child = k->standby;
  k->standby = NULL;
  k->standby_warm = false;
  kg_info("exec: rank %d is its warm standby (pid %ld)", rank, (long) kg_child_pid(k->child));
  return true;
}
