/*  kg_exec_stepsock: the words of a step report by a table, and reports
    sent as python/kguard/pace.py sends them reaching the socket. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kg_exec_stepsock.h"
#include "kg_test.h"

KG_TEST(parse_table)
{
  static const struct {
    const char *words;
    bool ok;
    int gen, rank;
    int64_t step;
  } rows[] = {
    {"kguard-step 0 0 0", true, 0, 0, 0},
    {"kguard-step 3 7 1200\n", true, 3, 7, 1200},
    {"kguard-step 12 1 999999999999999999", true, 12, 1, 999999999999999999LL},
    {"kguard-step 1 0 9999999999999999999", false, 0, 0, 0},    /* 19 digits */
    {"kguard-step 1 0 -5", false, 0, 0, 0},
    {"kguard-step 1 0", false, 0, 0, 0},
    {"kguard-step 1 0 5 6", false, 0, 0, 0},
    {"kguard-step 1  0 5", false, 0, 0, 0},
    {"kguard-step 1 0 5\n\n", false, 0, 0, 0},
    {"kguard-step 99999999999 0 5", false, 0, 0, 0},             /* > INT32_MAX */
    {"kguard: completed step 5", false, 0, 0, 0},
    {"", false, 0, 0, 0},
    {"kguard-step ", false, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_exec_step_msg_t m = {-1, -1, -1};
    bool ok = kg_exec_step_parse(rows[i].words, strlen(rows[i].words), &m);
    fprintf(stderr, "row %zu\n", i);
    KG_CHECK_INT(ok, rows[i].ok);
    if (ok && rows[i].ok) {
      KG_CHECK_INT(m.generation, rows[i].gen);
      KG_CHECK_INT(m.rank, rows[i].rank);
      KG_CHECK_INT(m.step, rows[i].step);
    }
  }
  /* Not NUL-terminated: only len bytes are read. */
  const char raw[] = "kguard-step 1 2 3XYZ";
  kg_exec_step_msg_t m;
  KG_CHECK(kg_exec_step_parse(raw, strlen("kguard-step 1 2 3"), &m) && m.step == 3);
}

static void
s_send(const char *env, const char *words)
{
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  size_t n = strlen(env + 1);
  memcpy(a.sun_path + 1, env + 1, n);
  KG_CHECK(sendto(fd, words, strlen(words), 0, (struct sockaddr *) &a,
                  (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n)) >= 0);
  close(fd);
}

KG_TEST(reports_reach_the_socket_and_garbage_is_dropped)
{
  kg_exec_stepsock_t *s = NULL;
  KG_CHECK_INT(kg_exec_stepsock_new(&s), 0);
  if (!s)
    return;
  const char *env = kg_exec_stepsock_env(s);
  KG_CHECK(strncmp(env, "@kguard-step-", 13) == 0);
  kg_exec_stepsock_t *other = NULL;
  KG_CHECK_INT(kg_exec_stepsock_new(&other), 0);
  KG_CHECK(other && strcmp(kg_exec_stepsock_env(other), env) != 0);   /* names differ */
  kg_exec_stepsock_destroy(&other);
  KG_CHECK(other == NULL);

  kg_exec_step_msg_t m;
  KG_CHECK_INT(kg_exec_stepsock_recv(s, &m), 0);          /* nothing waiting */
  s_send(env, "kguard-step 2 1 40");
  s_send(env, "not a report");
  s_send(env, "kguard-step 2 0 41");
  KG_CHECK_INT(kg_exec_stepsock_recv(s, &m), 1);
  KG_CHECK(m.generation == 2 && m.rank == 1 && m.step == 40);
  KG_CHECK_INT(kg_exec_stepsock_recv(s, &m), -1);         /* dropped, go on */
  KG_CHECK_INT(kg_exec_stepsock_recv(s, &m), 1);
  KG_CHECK(m.rank == 0 && m.step == 41);
  KG_CHECK_INT(kg_exec_stepsock_recv(s, &m), 0);
  kg_exec_stepsock_destroy(&s);
  kg_exec_stepsock_destroy(&s);   /* NULL is fine */
}

KG_TEST_MAIN(KG_CASE(parse_table), KG_CASE(reports_reach_the_socket_and_garbage_is_dropped))
