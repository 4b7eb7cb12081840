/*  kguard install: write a kernelspec that wraps an existing one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_cli.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_kernelspec.h"
#include "kg_paths.h"

static void
s_usage(FILE *out)
{
  fputs(
    "usage: kguard install [--kernel NAME] [--name N] [--display-name D]\n"
    "                      [--user | --sys-prefix | --prefix P] [--checkpoints DIR]\n"
    "\n"
    "Write a kernelspec whose argv runs `kguard kernel ... -- <the wrapped argv>`,\n"
    "keeping the wrapped kernelspec's language, env, interrupt_mode, metadata and\n"
    "logos. Jupyter then lists it as e.g. \"Python 3 (kguard)\".\n"
    "\n"
    "  --kernel NAME        kernelspec to wrap (default python3)\n"
    "  --name N             name of the new kernelspec (default NAME-kguard)\n"
    "  --display-name D     default: the wrapped display name with its trailing\n"
    "                       \"(...)\" replaced by \"(kguard)\", or \" (kguard)\" appended:\n"
    "                       \"Python 3 (ipykernel)\" becomes \"Python 3 (kguard)\"\n"
    "  --user               install in $JUPYTER_DATA_DIR/kernels or\n"
    "                       ~/.local/share/jupyter/kernels (the default)\n"
    "  --sys-prefix         install in $VIRTUAL_ENV, else $CONDA_PREFIX, else /usr\n"
    "                       (Debian's sys.prefix), under share/jupyter/kernels\n"
    "  --prefix P           install in P/share/jupyter/kernels\n"
    "  --checkpoints DIR    checkpoint directory for the guarded kernel\n"
    "                       (default ./kguard-checkpoints in the kernel's cwd)\n"
    "exit codes: 0 installed, 100 usage error or no such kernelspec, 111 I/O error.\n",
    out);
}

static void
s_display_name(const char *wrapped, char *buf, size_t len)
{
  size_t n = strlen(wrapped);
  const char *open = strrchr(wrapped, '(');
  if (n > 0 && wrapped[n - 1] == ')' && open && open > wrapped && open[-1] == ' ')
    snprintf(buf, len, "%.*s(kguard)", (int) (open - wrapped), wrapped);
  else
    snprintf(buf, len, "%s (kguard)", wrapped);
}

static int
s_copy_file(const char *from, const char *to)
{
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return -errno;
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    int e = errno;
    close(in);
    return -e;
  }
  char buf[65536];
  ssize_t r;
  int rc = 0;
  while ((r = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t) r) != r) {
      rc = -EIO;
      break;
    }
  if (r < 0)
    rc = -errno;
  close(in);
  if (close(out) != 0 && rc == 0)
    rc = -errno;
  return rc;
}

static void
s_copy_logos(const char *from_dir, const char *to_dir)
{
  DIR *d = opendir(from_dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "logo-", 5) != 0)
      continue;
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof a, "%.3000s/%.255s", from_dir, e->d_name);
    snprintf(b, sizeof b, "%.3000s/%.255s", to_dir, e->d_name);
    int rc = s_copy_file(a, b);
    if (rc)
      fprintf(stderr, "kguard install: unable to copy %s: %s\n", a, kg_strerror(rc));
  }
  closedir(d);
}

int
kg_cli_install_main(int argc, char **argv)
{
  enum { O_KERNEL = 1000, O_NAME, O_DISPLAY, O_USER, O_SYSPREFIX, O_PREFIX, O_CKPT };
  static const struct option opts[] = {
    {"kernel", required_argument, NULL, O_KERNEL},
    {"name", required_argument, NULL, O_NAME},
    {"display-name", required_argument, NULL, O_DISPLAY},
    {"user", no_argument, NULL, O_USER},
    {"sys-prefix", no_argument, NULL, O_SYSPREFIX},
    {"prefix", required_argument, NULL, O_PREFIX},
    {"checkpoints", required_argument, NULL, O_CKPT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};
  const char *kernel = "python3", *name = NULL, *display = NULL, *prefix = NULL, *ckpt = NULL;
  int where = 0;   /* 0 user, 1 sys-prefix, 2 prefix */
  int places = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case O_KERNEL: kernel = optarg; break;
    case O_NAME: name = optarg; break;
    case O_DISPLAY: display = optarg; break;
    case O_USER: where = 0; places++; break;
    case O_SYSPREFIX: where = 1; places++; break;
    case O_PREFIX: where = 2; prefix = optarg; places++; break;
    case O_CKPT: ckpt = optarg; break;
    case 'h': s_usage(stdout); return KG_EXIT_OK;
    default: s_usage(stderr); return KG_EXIT_USAGE;
    }
  }
  if (optind < argc || places > 1) {
    fprintf(stderr, "kguard install: %s (see kguard install --help)\n",
            places > 1 ? "give at most one of --user, --sys-prefix, --prefix"
                       : "unexpected argument");
    return KG_EXIT_USAGE;
  }
  if (where == 1) {
    prefix = getenv("VIRTUAL_ENV");
    if (!prefix || !*prefix)
      prefix = getenv("CONDA_PREFIX");
    if (!prefix || !*prefix)
      prefix = "/usr";
  }
  char err[2048] = "";
  kg_kernelspec_t *spec = NULL;
  int rc = kg_kernelspec_find(kernel, prefix, &spec, err, sizeof err);
  if (rc) {
    fprintf(stderr, "kguard install: %s\n", *err ? err : kg_strerror(rc));
    return rc == KG_ENOKERNEL || rc == KG_EKERNELSPEC || rc == KG_EUSAGE ? KG_EXIT_USAGE
                                                                         : KG_EXIT_SYSTEM;
  }
  const char *a0 = cJSON_GetArrayItem(spec->argv, 0)->valuestring;
  const cJSON *a1 = cJSON_GetArrayItem(spec->argv, 1);
  if (strstr(a0, "kguard") && cJSON_IsString(a1) && strcmp(a1->valuestring, "kernel") == 0) {
    fprintf(stderr, "kguard install: '%s' is already a kguard kernelspec; wrap the kernel it "
                    "wraps instead\n", kernel);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  char exe[PATH_MAX], newname[256], dname[512], kdir[PATH_MAX], dest[PATH_MAX];
  if (kg_paths_exe(exe, sizeof exe) != 0) {
    fprintf(stderr, "kguard install: unable to find kguard's own path\n");
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_SYSTEM;
  }
  snprintf(newname, sizeof newname, "%s", name ? name : "");
  if (!name)
    snprintf(newname, sizeof newname, "%.240s-kguard", kernel);
  if (!*newname || strchr(newname, '/')) {
    fprintf(stderr, "kguard install: invalid --name '%s'\n", newname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  if (display)
    snprintf(dname, sizeof dname, "%s", display);
  else
    s_display_name(spec->display_name, dname, sizeof dname);
  if (where == 0)
    kg_kernelspec_user_dir(kdir, sizeof kdir);
  else
    snprintf(kdir, sizeof kdir, "%.4000s/share/jupyter/kernels", prefix);
  snprintf(dest, sizeof dest, "%.3800s/%s", kdir, newname);

  cJSON *out = cJSON_CreateObject();
  cJSON *av = cJSON_AddArrayToObject(out, "argv");
  const char *head[] = {exe, "kernel", "-f", "{connection_file}", "--name", newname};
  for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
    cJSON_AddItemToArray(av, cJSON_CreateString(head[i]));
  if (strcmp(spec->interrupt_mode, "signal") != 0) {
    cJSON_AddItemToArray(av, cJSON_CreateString("--interrupt-mode"));
    cJSON_AddItemToArray(av, cJSON_CreateString(spec->interrupt_mode));
  }
  if (ckpt) {
    cJSON_AddItemToArray(av, cJSON_CreateString("--checkpoints"));
    cJSON_AddItemToArray(av, cJSON_CreateString(ckpt));
  }
  cJSON_AddItemToArray(av, cJSON_CreateString("--"));
  const cJSON *a;
  cJSON_ArrayForEach(a, spec->argv) cJSON_AddItemToArray(av, cJSON_CreateString(a->valuestring));
  cJSON_AddStringToObject(out, "display_name", dname);
  cJSON_AddStringToObject(out, "language", spec->language);
  if (cJSON_GetObjectItemCaseSensitive(spec->json, "interrupt_mode"))
    cJSON_AddStringToObject(out, "interrupt_mode", spec->interrupt_mode);
  if (spec->env)
    cJSON_AddItemToObject(out, "env", cJSON_Duplicate(spec->env, 1));
  cJSON *md = spec->metadata ? cJSON_Duplicate(spec->metadata, 1) : cJSON_CreateObject();
  cJSON *kgm = cJSON_AddObjectToObject(md, "kguard");
  cJSON_AddStringToObject(kgm, "wraps", kernel);
  cJSON_AddItemToObject(out, "metadata", md);
  char *text = cJSON_Print(out);
  cJSON_Delete(out);

  int code = KG_EXIT_OK;
  rc = kg_paths_mkdirs(dest, 0755);
  char file[PATH_MAX];
  snprintf(file, sizeof file, "%.4000s/kernel.json", dest);
  if (rc == 0)
    rc = kg_file_write_atomic(file, text, strlen(text), 0644);
  if (rc != 0) {
    fprintf(stderr, "kguard install: unable to write %s: %s\n", file, kg_strerror(rc));
    code = KG_EXIT_SYSTEM;
  }
  if (code == KG_EXIT_OK) {
    if (spec->dir)
      s_copy_logos(spec->dir, dest);
    printf("installed kernelspec %s (\"%s\", wraps %s) in %s\n", newname, dname, kernel, dest);
  }
  free(text);
  kg_kernelspec_destroy(&spec);
  return code;
}
