/*  kg_ckpt_seal: what a failed seal leaves, and the payloads it refuses. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "ckpt_fixture.h"

/*  A write error (file size limit) must leave no final name and no
    temporary. Run in a child so the limit does not leak. */
KG_TEST(seal_write_error_leaves_nothing)
{
  s_setup();
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {.rlim_cur = 100000, .rlim_max = RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &rl);
    char out[PATH_MAX];
    int rc = s_seal(5, 0, false, out);
    _exit(rc == -EFBIG ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  KG_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char ck[PATH_MAX + 8];
  snprintf(ck, sizeof ck, "%s/ck", s_root);
  DIR *d = opendir(ck);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++, fprintf(stderr, "left: %s\n", de->d_name);
  if (d)
    closedir(d);
  KG_CHECK_INT(n, 0);
  s_teardown();
}

KG_TEST(seal_refuses_links)
{
  s_setup();
  char link[PATH_MAX + 32], out[PATH_MAX + 32], src[PATH_MAX + 8], why[512];
  snprintf(link, sizeof link, "%s/src/escape", s_root);
  KG_CHECK_INT(symlink("/etc/passwd", link), 0);
  snprintf(src, sizeof src, "%s/src", s_root);
  snprintf(out, sizeof out, "%s/x.kgckpt.tar", s_root);
  char final[PATH_MAX];
  kg_ckpt_seal_opts_t o = {.dir = src, .step = 1, .output = out, .sk = s_sk};
  KG_CHECK_INT(kg_ckpt_seal(&o, final, sizeof final, why, sizeof why), KG_EUSAGE);
  KG_CHECK(strstr(why, "escape") != NULL);
  KG_CHECK_INT(access(out, F_OK), -1);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(seal_write_error_leaves_nothing), KG_CASE(seal_refuses_links))
