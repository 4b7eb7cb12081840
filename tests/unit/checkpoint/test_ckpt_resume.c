/*  kg_ckpt_resume_prepare_tiers: the memory tier of snapshots against the
    disk. A newer snapshot wins without a byte of the disk's older
    checkpoints read (a corrupt one is not even reported); a tampered
    snapshot is skipped, named with its tier, and the disk's chosen; a
    snapshot sealed after the fault is quarantined in memory, so a second
    fault before the restarted run's first snapshot does not choose it
    (other runs' snapshots and the chosen one stay); a newer disk
    checkpoint wins; a missing memory directory holds none and is not
    created; latest's choice across the tiers moves nothing.
    Keys and payload from ckpt_fixture.h. */
#include "ckpt_fixture.h"

#include <cjson/cJSON.h>

#include "kg_ckpt_resume.h"

#define S_T0 1700000000000LL

/*  Seal src as run's step at S_T0 + when_s seconds into root/<sub>. */
static void
s_seal_run(const char *sub, const char *run, int64_t step, int64_t when_s, char *out)
{
  char src[PATH_MAX + 8], into[PATH_MAX + 32], why[512];
  snprintf(src, sizeof src, "%s/src", s_root);
  snprintf(into, sizeof into, "%s/%s", s_root, sub);
  kg_ckpt_seal_opts_t o = {.dir = src, .step = step, .run = run, .into = into,
                           .sk = s_sk, .now_ms = S_T0 + when_s * 1000};
  KG_CHECK_INT(kg_ckpt_seal(&o, out, PATH_MAX, why, sizeof why), 0);
}

/*  The run being resumed's. */
static void
s_seal_into(const char *sub, int64_t step, int64_t when_s, char *out)
{
  s_seal_run(sub, "unit", step, when_s, out);
}

/*  Flip a byte in the middle of path (a payload byte: only a complete
    verification finds it). */
static void
s_corrupt(const char *path)
{
  int fd = open(path, O_RDWR);
  struct stat st;
  KG_CHECK(fd >= 0 && fstat(fd, &st) == 0);
  unsigned char b;
  KG_CHECK_INT(pread(fd, &b, 1, st.st_size / 2), 1);
  b ^= 0xff;
  KG_CHECK_INT(pwrite(fd, &b, 1, st.st_size / 2), 1);
  close(fd);
}

/*  Prepare for a fault at S_T0 + before_s seconds, with root/mem as the
    memory directory. */
static cJSON *
s_prepare(int64_t before_s, const char *incident)
{
  char disk[PATH_MAX + 8], mem[PATH_MAX + 8], dest[PATH_MAX + 32], why[600] = "";
  snprintf(disk, sizeof disk, "%s/ck", s_root);
  snprintf(mem, sizeof mem, "%s/mem", s_root);
  snprintf(dest, sizeof dest, "%s/dest-%s", s_root, incident);
  kg_ckpt_resume_opts_t o = {.dir = disk, .memory = mem, .before_ms = S_T0 + before_s * 1000,
                             .incident = incident, .run = "unit", .dest = dest,
                             .keys = s_keys};
  cJSON *out = NULL;
  int rc = kg_ckpt_resume_prepare_tiers(&o, &out, why, sizeof why);
  if (rc < 0)
    fprintf(stderr, "prepare: %s\n", why);
  KG_CHECK_INT(rc, 0);
  return out;
}

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "(not a string)";
}

/*  The entry of out's list (an array of {"archive": ...}) naming path, or
    NULL. */
static const cJSON *
s_entry_of(const cJSON *out, const char *list, const char *path)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(out, list))
    if (strcmp(s_str(it, "archive"), path) == 0)
      return it;
  return NULL;
}

/*  The skip naming path, or NULL. */
static const cJSON *
s_skip_of(const cJSON *out, const char *path)
{
  return s_entry_of(out, "skipped", path);
}

KG_TEST(memory_newer_wins_without_verifying_the_disk)
{
  s_setup();
  char d1[PATH_MAX], d2[PATH_MAX], m3[PATH_MAX];
  s_seal_into("ck", 1, 1, d1);
  s_seal_into("ck", 2, 2, d2);
  s_seal_into("mem", 3, 3, m3);
  s_corrupt(d2);
  cJSON *out = s_prepare(10, "i1");
  KG_CHECK_STR(s_str(out, "status"), "restored");
  KG_CHECK_STR(s_str(out, "tier"), "memory");
  KG_CHECK_STR(s_str(out, "archive"), m3);
  KG_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "in_place")));
  KG_CHECK(strstr(s_str(out, "memory_dir"), "/mem") != NULL);
  KG_CHECK(s_skip_of(out, d2) == NULL);   /* never verified: it could not win */
  cJSON_Delete(out);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST(tampered_snapshot_skipped_and_disk_chosen)
{
  s_setup();
  char d1[PATH_MAX], m2[PATH_MAX];
  s_seal_into("ck", 1, 1, d1);
  s_seal_into("mem", 2, 2, m2);
  s_corrupt(m2);
  cJSON *out = s_prepare(10, "i2");
  KG_CHECK_STR(s_str(out, "status"), "restored");
  KG_CHECK_STR(s_str(out, "tier"), "disk");
  KG_CHECK_STR(s_str(out, "archive"), d1);
  const cJSON *skip = s_skip_of(out, m2);
  KG_CHECK(skip != NULL);
  if (skip) {
    KG_CHECK_STR(s_str(skip, "tier"), "memory");
    KG_CHECK(strstr(s_str(skip, "reason"), "corrupt") || strstr(s_str(skip, "reason"), "tamper"));
  }
  cJSON_Delete(out);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

/*  The quarantined entry naming path, or NULL. */
static const cJSON *
s_quarantined_of(const cJSON *out, const char *path)
{
  return s_entry_of(out, "quarantined", path);
}

/*  Fault T1 at 4 s with snapshots of steps 2 and 5 (sealed after T1) in
    memory; the restarted run faults again at T2 = 6 s before sealing any
    snapshot: step 5 holds state from after the first fault, so the second
    restore must not choose it. */
KG_TEST(snapshot_after_the_fault_quarantined_so_a_second_fault_skips_it)
{
  s_setup();
  char d1[PATH_MAX], m2[PATH_MAX], m5[PATH_MAX], other[PATH_MAX];
  s_seal_into("ck", 1, 1, d1);
  s_seal_into("mem", 2, 2, m2);
  s_seal_into("mem", 5, 5, m5);
  s_seal_run("mem", "other", 7, 5, other);
  /* A file that does not authenticate, modified after T1 (now): it stays,
     as the memory tier's pruning leaves it. */
  char junk[PATH_MAX + 64];
  snprintf(junk, sizeof junk, "%s/mem/step-0000000009-20231114T221330000Z.kgckpt.tar", s_root);
  s_write(junk, 1000, 3);
  cJSON *out = s_prepare(4, "i3");
  KG_CHECK_STR(s_str(out, "tier"), "memory");
  KG_CHECK_STR(s_str(out, "archive"), m2);
  const cJSON *q = s_quarantined_of(out, m5);
  KG_CHECK(q != NULL);
  char to[PATH_MAX + 64];
  snprintf(to, sizeof to, "%s/mem/quarantine/i3/%s", s_root, strrchr(m5, '/') + 1);
  if (q) {
    KG_CHECK_STR(s_str(q, "tier"), "memory");
    KG_CHECK_STR(s_str(q, "to"), to);
    KG_CHECK(strstr(s_str(q, "reason"), "at or after the failure") != NULL);
  }
  KG_CHECK(access(m5, F_OK) != 0);
  KG_CHECK_INT(access(to, F_OK), 0);
  KG_CHECK_INT(access(m2, F_OK), 0);      /* the chosen one stays */
  KG_CHECK_INT(access(other, F_OK), 0);   /* so does another run's */
  KG_CHECK(s_quarantined_of(out, other) == NULL);
  KG_CHECK_INT(access(junk, F_OK), 0);
  const cJSON *skip = s_skip_of(out, junk);
  KG_CHECK(skip && strstr(s_str(skip, "reason"), "does not authenticate is never moved"));
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(out, "quarantined")), 1);
  cJSON_Delete(out);
  out = s_prepare(6, "i4");
  KG_CHECK_STR(s_str(out, "status"), "restored");
  KG_CHECK_STR(s_str(out, "tier"), "memory");
  KG_CHECK_STR(s_str(out, "archive"), m2);
  cJSON_Delete(out);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST(disk_newer_than_memory_wins)
{
  s_setup();
  char m1[PATH_MAX], d2[PATH_MAX];
  s_seal_into("mem", 1, 1, m1);
  s_seal_into("ck", 2, 2, d2);
  cJSON *out = s_prepare(10, "i4");
  KG_CHECK_STR(s_str(out, "tier"), "disk");
  KG_CHECK_STR(s_str(out, "archive"), d2);
  cJSON_Delete(out);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST(missing_memory_dir_holds_no_snapshots)
{
  s_setup();
  char d1[PATH_MAX];
  s_seal_into("ck", 1, 1, d1);
  cJSON *out = s_prepare(10, "i5");
  KG_CHECK_STR(s_str(out, "tier"), "disk");
  char mem[PATH_MAX + 8];
  snprintf(mem, sizeof mem, "%s/mem", s_root);
  KG_CHECK(access(mem, F_OK) != 0);   /* nothing made where there is no memory dir */
  KG_CHECK_STR(s_str(out, "archive"), d1);
  cJSON_Delete(out);
  /* neither tier has one: none, and "tier" is null */
  unlink(d1);
  out = s_prepare(10, "i6");
  KG_CHECK_STR(s_str(out, "status"), "none");
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(out, "tier")));
  cJSON_Delete(out);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

/*  kg_ckpt_resume_choose_tiers (kguard ckpt latest --memory): the same
    choice with nothing moved: a newer snapshot wins without the disk's
    older (corrupt) checkpoint read, and one sealed at or after --before
    is skipped where it lies. */
KG_TEST(latest_across_tiers_moves_nothing)
{
  s_setup();
  char d1[PATH_MAX], d2[PATH_MAX], m3[PATH_MAX], m5[PATH_MAX];
  s_seal_into("ck", 1, 1, d1);
  s_seal_into("ck", 2, 2, d2);
  s_seal_into("mem", 3, 3, m3);
  s_seal_into("mem", 5, 5, m5);
  s_corrupt(d2);
  char disk[PATH_MAX + 8], mem[PATH_MAX + 8], why[600] = "", q[PATH_MAX + 32];
  snprintf(disk, sizeof disk, "%s/ck", s_root);
  snprintf(mem, sizeof mem, "%s/mem", s_root);
  kg_ckpt_resume_opts_t o = {.dir = disk, .memory = mem, .before_ms = INT64_MAX, .run = "unit",
                             .keys = s_keys};
  cJSON *out = NULL;
  KG_CHECK_INT(kg_ckpt_resume_choose_tiers(&o, &out, why, sizeof why), 0);
  KG_CHECK_STR(s_str(out, "tier"), "memory");
  KG_CHECK_STR(s_str(out, "archive"), m5);
  KG_CHECK_STR(s_str(out, "memory_dir"), mem);
  KG_CHECK(s_skip_of(out, d2) == NULL);   /* never verified: it could not win */
  cJSON_Delete(out);
  o.before_ms = S_T0 + 4000;
  KG_CHECK_INT(kg_ckpt_resume_choose_tiers(&o, &out, why, sizeof why), 0);
  KG_CHECK_STR(s_str(out, "archive"), m3);
  const cJSON *skip = s_skip_of(out, m5);
  KG_CHECK(skip && strstr(s_str(skip, "reason"), "at or after --before (left in place: "
                                                 "nothing is moved)"));
  KG_CHECK(skip && strcmp(s_str(skip, "tier"), "memory") == 0);
  KG_CHECK(cJSON_GetObjectItemCaseSensitive(out, "quarantined") == NULL);
  KG_CHECK_INT(access(m5, F_OK), 0);
  snprintf(q, sizeof q, "%s/mem/quarantine", s_root);
  KG_CHECK(access(q, F_OK) != 0);
  cJSON_Delete(out);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(memory_newer_wins_without_verifying_the_disk),
             KG_CASE(tampered_snapshot_skipped_and_disk_chosen),
             KG_CASE(snapshot_after_the_fault_quarantined_so_a_second_fault_skips_it),
             KG_CASE(disk_newer_than_memory_wins),
             KG_CASE(missing_memory_dir_holds_no_snapshots),
             KG_CASE(latest_across_tiers_moves_nothing))
