/*  kg_gpudrv's classification of driver codes: which make the pre-flight
    declare a device failing (exit 1, kernel down) and which describe only
    the setup (no device, stub library, busy, out of memory). */
#include "kg_gpudrv.h"
#include "kg_test.h"

KG_TEST(failing_codes)
{
  static const struct { int code, failing; } rows[] = {
    {0, 0}, {2, 0}, {34, 0}, {35, 0}, {46, 0}, {100, 0}, {101, 0}, {209, 0}, {218, 0},
    {222, 0}, {214, 1}, {220, 1}, {700, 1}, {702, 1}, {710, 1}, {714, 1}, {715, 1},
    {716, 1}, {717, 1}, {718, 1}, {719, 1}, {999, 1}, {-1, 1}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    KG_CHECK_INT(kg_gpudrv_code_is_failing(rows[i].code), rows[i].failing);
}

KG_TEST_MAIN(KG_CASE(failing_codes))
