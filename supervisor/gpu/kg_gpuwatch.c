/*  kg_gpuwatch: baseline and check around a restart (contracts in the
    header). */
#include "kg_gpuwatch.h"

#include <stdlib.h>
#include <string.h>

#include "kg_nvml.h"

struct kg_gpuwatch_t {
  char *visible;                    /*  NULL: every device                 */
  kg_gpuhealth_reading_t *baseline; /*  NULL before it is taken            */
};

kg_gpuwatch_t *
kg_gpuwatch_new(const char *visible)
{
  kg_gpuwatch_t *self = calloc(1, sizeof *self);
  if (self && visible && !(self->visible = strdup(visible))) {
    free(self);
    return NULL;
  }
  return self;
}

void
kg_gpuwatch_destroy(kg_gpuwatch_t **self_p)
{
  kg_gpuwatch_t *self = *self_p;
  if (!self)
    return;
  free(self->visible);
  free(self->baseline);
  free(self);
  *self_p = NULL;
}

/*  A new reading (caller frees), NULL on allocation failure. */
static kg_gpuhealth_reading_t *
s_read(const kg_gpuwatch_t *self)
{
  kg_gpuhealth_reading_t *r = malloc(sizeof *r);
  kg_nvml_t *nvml = r ? kg_nvml_new() : NULL;
  if (!nvml) {
    free(r);
    return NULL;
  }
  kg_nvml_read(nvml, self->visible, r);
  kg_nvml_destroy(&nvml);
  return r;
}

bool
kg_gpuwatch_baseline(kg_gpuwatch_t *self)
{
  if (!self->baseline)
    self->baseline = s_read(self);
  return self->baseline && self->baseline->available;
}

kg_gpuhealth_verdict_t
kg_gpuwatch_check(kg_gpuwatch_t *self, const char *family, const char *text,
                  kg_gpuhealth_result_t *result, cJSON **record_p, char *line, size_t len)
{
  if (record_p)
    *record_p = NULL;
  kg_gpuhealth_reading_t *now = s_read(self);
  kg_gpuhealth_judge(self->baseline, now, family, text, result);
  if (record_p)
    *record_p = kg_gpuhealth_record(self->baseline, now, result);
  if (line && len)
    kg_gpuhealth_line(now, result, line, len);
  free(now);
  return result->verdict;
}
