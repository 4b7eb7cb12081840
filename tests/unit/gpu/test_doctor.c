/*  kg_doctor: the judgement of the room in-memory snapshots (kguard.snapshot)
    have, by table: a warning, never a problem (snapshots are optional), that
    names the directory, the room and what to do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_doctor.h"
#include "kg_test.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/*  A report of a CPU-only machine with one guarded kernelspec (no other
    warning) and snapshots (JSON, NULL: no such fact), assessed. */
static cJSON *
s_report(const char *snapshots)
{
  cJSON *r = cJSON_CreateObject();
  cJSON_AddItemToObject(r, "kernel", cJSON_Parse("{\"name\":\"k\",\"interpreter\":\"python3\"}"));
  cJSON_AddItemToObject(r, "probe", cJSON_Parse("{\"torch\":\"2.5.1\",\"cuda\":null,"
                                                "\"hip\":null,\"arch_list\":[]}"));
  cJSON_AddItemToObject(r, "drivers", cJSON_Parse("{\"cuda\":{\"loaded\":false},"
                                                  "\"hip\":{\"loaded\":false}}"));
  cJSON_AddItemToObject(r, "kernelspecs", cJSON_Parse("[{\"name\":\"k\",\"guarded\":true}]"));
  cJSON_AddItemToObject(r, "env", cJSON_Parse("[]"));
  if (snapshots)
    cJSON_AddItemToObject(r, "snapshots", cJSON_Parse(snapshots));
  kg_doctor_assess(r);
  return r;
}

/*  The warnings joined by "\n" (caller frees). */
static char *
s_warnings(const cJSON *r)
{
  size_t n = 1;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "warnings")) n += strlen(e->valuestring) + 1;
  char *all = calloc(1, n);
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "warnings"))
  {
    strcat(all, e->valuestring);
    strcat(all, "\n");
  }
  return all;
}

KG_TEST(doctor_snapshot_room_table)
{
  char big[160], small[160], edge[160], disk[160], under[160];
  snprintf(big, sizeof big, "{\"base\":\"/dev/shm\",\"free_bytes\":%.0f,\"total_bytes\":%.0f,"
           "\"tmpfs\":true}", 24 * GIB, 24 * GIB);
  snprintf(small, sizeof small, "{\"base\":\"/dev/shm\",\"free_bytes\":%.0f,\"total_bytes\":"
           "%.0f,\"tmpfs\":true}", 64 * MIB, 64 * MIB);
  snprintf(edge, sizeof edge, "{\"base\":\"/dev/shm\",\"free_bytes\":%.0f,\"total_bytes\":"
           "%.0f,\"tmpfs\":true}", GIB, 2 * GIB);
  snprintf(under, sizeof under, "{\"base\":\"/mnt/ram\",\"free_bytes\":%.0f,\"total_bytes\":"
           "%.0f,\"tmpfs\":true}", 900 * MIB, 8 * GIB);
  snprintf(disk, sizeof disk, "{\"base\":\"/scratch\",\"free_bytes\":%.0f,\"total_bytes\":"
           "%.0f,\"tmpfs\":false}", 500 * GIB, 900 * GIB);
  static const char *none[] = {NULL};
  static const char *room[] = {"/dev/shm", "64.0 MiB free", "about twice the state's size",
                               "docker run --shm-size", "emptyDir with medium: Memory mounted "
                               "at /dev/shm", "KGUARD_SNAPSHOT_BASE", NULL};
  static const char *room_under[] = {"/mnt/ram", "900.0 MiB free", "make that tmpfs larger",
                                     "KGUARD_SNAPSHOT_BASE", NULL};
  static const char *missing[] = {"/nowhere", "No such file or directory", "kguard.snapshot "
                                  "will raise", "kguard.save", "KGUARD_SNAPSHOT_BASE", NULL};
  static const char *not_tmpfs[] = {"/scratch", "not a tmpfs", "disk", "KGUARD_SNAPSHOT_BASE",
                                    NULL};
  const struct {
    const char *facts;     /* the "snapshots" fact, NULL: absent */
    int warnings;          /* how many warnings in all */
    const char *const *says;
  } rows[] = {
    {NULL, 0, none},                  /* a report without the fact judges nothing */
    {big, 0, none},                   /* plenty of room: nothing to say */
    {edge, 0, none},                  /* 1 GiB free is enough not to warn */
    {small, 1, room},                 /* docker's default /dev/shm */
    {under, 1, room_under},           /* under 1 GiB, under another base */
    {"{\"base\":\"/nowhere\",\"error\":\"No such file or directory\"}", 1, missing},
    {disk, 1, not_tmpfs},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    cJSON *r = s_report(rows[i].facts);
    char *all = s_warnings(r);
    if (cJSON_GetArraySize(cJSON_GetObjectItem(r, "warnings")) != rows[i].warnings)
      fprintf(stderr, "row %zu: warnings:\n%s", i, all);
    KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "warnings")), rows[i].warnings);
    /* optional: never a problem, never a failing exit */
    KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "problems")), 0);
    for (const char *const *s = rows[i].says; *s; s++) {
      if (!strstr(all, *s))
        fprintf(stderr, "row %zu: no \"%s\" in:\n%s", i, *s, all);
      KG_CHECK(strstr(all, *s) != NULL);
    }
    free(all);
    cJSON_Delete(r);
  }
}

KG_TEST(doctor_snapshot_room_rendered)
{
  char small[160];
  snprintf(small, sizeof small, "{\"base\":\"/dev/shm\",\"free_bytes\":%.0f,\"total_bytes\":"
           "%.0f,\"tmpfs\":true}", 60 * MIB, 64 * MIB);
  cJSON *r = s_report(small);
  char *text = kg_doctor_render(r, KG_DOCTOR_TEXT);
  KG_CHECK(text != NULL);
  /* the room is shown whether or not it is enough, and the warning with it */
  KG_CHECK(strstr(text, "\nSnapshots in memory (kguard.snapshot)\n  /dev/shm (tmpfs): "
                  "60.0 MiB free of 64.0 MiB\n") != NULL);
  KG_CHECK(strstr(text, "\nWarnings\n  in-memory snapshots") != NULL);
  free(text);
  cJSON_Delete(r);
  r = s_report("{\"base\":\"/nowhere\",\"error\":\"No such file or directory\"}");
  text = kg_doctor_render(r, KG_DOCTOR_MARKDOWN);
  KG_CHECK(text && strstr(text, "- /nowhere: cannot be used: No such file or directory\n"));
  free(text);
  cJSON_Delete(r);
}

KG_TEST_MAIN(KG_CASE(doctor_snapshot_room_table), KG_CASE(doctor_snapshot_room_rendered))
