/*  kg_exec_output: the output of `kguard exec` (contracts in
    kg_exec_priv.h): the ranks' pipes passed through, kept and diagnosed
    line by line; the checkpoint helper's answer kept and its words
    passed; kguard's stdout and stderr written through their queues
    (kg_fdq), never waiting on a reader. Below the decisions (kg_exec.c)
    and the loop (kg_exec_loop.c): what it sees it only queues as events
    (kg_exec_event.c). */
#include "kg_exec_priv.h"

#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_log.h"

#define S_HELPER_OUT_MAX (1 << 20)

int
kg_ex_start_helper(kg_exec_s *E, char **argv)
{
  kg_child_opts_t opts = {.argv = argv, .capture = true};
  free(E->helper_out);
  E->helper_out = NULL;
  E->helper_len = 0;
  return kg_child_spawn(&opts, &E->helper);
}

/* ---- output ------------------------------------------------------------ */

#define S_DRAIN_MS 5000

/*  What the queue of which dropped, said in that stream once its reader
    reads again; a reader that is gone is said once, on the log only. */
static void
s_output_note(kg_exec_s *E, int which)
{
  kg_fdq_t *q = E->out[which - 1];
  const char *name = which == 1 ? "stdout" : "stderr";
  if (kg_fdq_failed(q)) {
    kg_fdq_take_dropped(q);
    if (!E->out_closed[which - 1]) {
      E->out_closed[which - 1] = true;
      char line[PATH_MAX + 256];
      int n = snprintf(line, sizeof line, "kguard exec: %s is closed (its reader is gone): "
                       "the job's output goes on only to %s; supervision goes on\n", name,
                       E->log_path);
      if (n > 0)
        kg_exec_log_output(E->log, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
      kg_warning("exec: %s is closed (its reader is gone): the job's output goes on only "
                 "to %s", name, E->log_path);
    }
    return;
  }
  uint64_t dropped = kg_fdq_take_dropped(q);
  if (dropped == 0)
    return;
  char line[PATH_MAX + 256];
  int n = snprintf(line, sizeof line, "kguard exec: %llu bytes of the job's output are not "
                   "shown here (nothing read %s for a while); %s has all of it\n",
                   (unsigned long long) dropped, name, E->log_path);
  if (n > 0)
    kg_fdq_write(q, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
}

void
kg_ex_output(kg_exec_s *E, int which, const char *buf, size_t len)
{
  kg_fdq_write(E->out[which - 1], buf, len);
  s_output_note(E, which);
}

void
kg_ex_output_flush(kg_exec_s *E, int which)
{
  kg_fdq_flush(E->out[which - 1]);
  s_output_note(E, which);
}

void
kg_ex_output_drain(kg_exec_s *E)
{
  if (!E->out[0] && !E->out[1])
    return;   /* the setup never got that far */
  int64_t end = kg_ex_now(E) + S_DRAIN_MS;
  for (int i = 0; i < 2; i++) {
    if (!E->out[i])
      continue;
    int64_t left = end - kg_ex_now(E);
    kg_fdq_drain(E->out[i], left > 0 ? (int) left : 0);
    s_output_note(E, i + 1);
    kg_fdq_drain(E->out[i], 0);
  }
}

/*  A completed step, printed or reported: a newer one of this run is
    progress, and measures the job's pace. */
static void
s_step_seen(kg_exec_s *E, int64_t step)
{
  if (step >= 0 && kg_exec_pace_step(&E->pace, step, kg_ex_now(E)))
    kg_ex_fire(E, KG_EXE_STEP, step);
}

void
kg_ex_read_steps(kg_exec_s *E)
{
  kg_exec_step_msg_t m;
  int64_t newest = -1;
  /* Bounded: a flood of reports never starves the loop's other sources;
     one event for the newest (the ranks report the same steps). */
  for (int i = 0; i < 256; i++) {
    int rc = kg_exec_stepsock_recv(E->steps, &m);
    if (rc == 0)
      break;
    /* A report of an earlier generation (a rank of a killed tree still
       draining) says nothing of this run. */
    if (rc == 1 && m.generation == E->generation - 1 && m.step > newest)
      newest = m.step;
  }
  s_step_seen(E, newest);
}

struct s_line_ctx {
  kg_exec_s *E;
  int rank;
  kg_source_t src;
};

/*  One whole line of one rank's stream, to the diagnosis: ranks' lines
    never mix there, whatever the pipes' reads cut. */
static void
s_diag_line(void *arg, const char *line, size_t len, bool truncated, int64_t first_ms)
{
  (void) truncated;
  struct s_line_ctx *c = arg;
  kg_exec_s *E = c->E;
  char buf[KG_DIAG_MAX_LINE + 2];
  if (len > KG_DIAG_MAX_LINE)
    len = KG_DIAG_MAX_LINE;
  memcpy(buf, line, len);
  buf[len] = '\n';
  kg_diag_event_t d = kg_diagnosis_feed(E->diag, c->src, NULL, NULL, buf, len + 1, first_ms);
  s_step_seen(E, kg_diagnosis_last_step(E->diag));
  /* Text on the group's pipes proves nothing by itself (a suspicion):
     the proof is a failure or a stall after it (kg_exec.c). */
  if (d == KG_DIAG_SUSPECT || d == KG_DIAG_STICKY) {
    if (E->fault_rank < 0)
      E->fault_rank = c->rank;
    kg_ex_fire(E, KG_EXE_STICKY, 0);
  }
}

/*  n bytes of rank r's stream which, to kguard's stream and the log as
    they come; when the job has several ranks, each line led by its rank
    as torchrun's --tee does ("[rank1]: "), so the ranks' lines can be told
    apart (a line a rank writes in pieces can still be cut by another's). */
static void
s_pass(kg_exec_s *E, int r, int which, const char *buf, size_t n)
{
  if (E->mode != KG_EXEC_MODE_AGENT || E->cfg.nnodes * E->nranks < 2) {
    kg_ex_output(E, which, buf, n);
    kg_exec_log_output(E->log, buf, n);
    return;
  }
  bool *mid = &E->ranks[r].mid_line[which - 1];
  char pre[32], out[16384];
  size_t pn = (size_t) snprintf(pre, sizeof pre, "[rank%d]: ", E->cfg.node_rank * E->nranks + r);
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    if (o + pn > sizeof out) {
      kg_ex_output(E, which, out, o);
      kg_exec_log_output(E->log, out, o);
      o = 0;
    }
    if (!*mid) {
      memcpy(out + o, pre, pn);
      o += pn;
      *mid = true;
    }
    const char *nl = memchr(buf + i, '\n', n - i);
    size_t seg = nl ? (size_t) (nl - (buf + i)) + 1 : n - i;
    size_t take = seg < sizeof out - o ? seg : sizeof out - o;
    memcpy(out + o, buf + i, take);
    o += take;
    i += take;
    if (take == seg && nl)
      *mid = false;
  }
  kg_ex_output(E, which, out, o);
  kg_exec_log_output(E->log, out, o);
}

/*  Pass one rank's pipe through as it comes, keep it, and diagnose it line
    by line. */
void
kg_ex_read_rank(kg_exec_s *E, int r, int which)
{
  kg_ex_rank_t *k = &E->ranks[r];
  char buf[65536];
  struct s_line_ctx ctx = {E, r, which == 1 ? KG_SRC_RAW_STDOUT : KG_SRC_RAW_STDERR};
  for (int rounds = 0; rounds < 16 && k->child; rounds++) {
    ssize_t n = kg_child_read(k->child, which, buf, sizeof buf);
    if (n == 0)
      kg_linebuf_flush(k->lines[which - 1], s_diag_line, &ctx);
    if (n <= 0)
      return;
    s_pass(E, r, which, buf, (size_t) n);
    kg_linebuf_feed(k->lines[which - 1], buf, (size_t) n, kg_clock_wall_ms(), s_diag_line, &ctx);
  }
}

void
kg_ex_read_helper(kg_exec_s *E)
{
  char buf[8192];
  for (;;) {
    ssize_t n = kg_child_read(E->helper, 1, buf, sizeof buf);
    if (n <= 0)
      break;
    if (E->helper_len + (size_t) n > S_HELPER_OUT_MAX)
      continue;
    char *g = realloc(E->helper_out, E->helper_len + (size_t) n + 1);
    if (!g)
      continue;
    E->helper_out = g;
    memcpy(g + E->helper_len, buf, (size_t) n);
    E->helper_len += (size_t) n;
    g[E->helper_len] = '\0';
  }
  for (;;) {
    ssize_t n = kg_child_read(E->helper, 2, buf, sizeof buf);
    if (n <= 0)
      break;
    /* Its words pass; its machine progress lines (kguard-progress DONE
       TOTAL) are for programs, not for the job's log. */
    for (char *line = buf, *end = buf + n; line < end;) {
      char *nl = memchr(line, '\n', (size_t) (end - line));
      size_t len = nl ? (size_t) (nl - line) + 1 : (size_t) (end - line);
      if (len < 16 || strncmp(line, "kguard-progress ", 16) != 0)
        kg_ex_output(E, 2, line, len);
      line += len;
    }
  }
}
