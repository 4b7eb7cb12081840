/*  kg_gpuenv: what each GPU variable does and when it is a problem. */
#include "kg_gpuenv.h"

#include <stdio.h>
#include <string.h>

static const kg_gpuenv_var_t s_table[] = {
  {"CUDA_VISIBLE_DEVICES", KG_GPUENV_SELECT,
   "which NVIDIA devices the process sees, and in which order (cuda:0 is the first listed)"},
  {"HIP_VISIBLE_DEVICES", KG_GPUENV_SELECT,
   "which AMD devices a ROCm process sees, and in which order"},
  {"ROCR_VISIBLE_DEVICES", KG_GPUENV_SELECT,
   "which AMD devices the ROCm runtime exposes at all (applied before HIP_VISIBLE_DEVICES)"},
  {"CUDA_LAUNCH_BLOCKING", KG_GPUENV_DIAGNOSTIC,
   "1 makes every CUDA launch synchronous, so an error is raised at the operation "
   "that caused it (slow: for locating a device error only)"},
  {"AMD_SERIALIZE_KERNEL", KG_GPUENV_DIAGNOSTIC,
   "1/2/3 makes ROCm wait before/after/around each kernel, the ROCm counterpart of "
   "CUDA_LAUNCH_BLOCKING (slow: for locating a device error only)"},
  {"HIP_LAUNCH_BLOCKING", KG_GPUENV_DIAGNOSTIC,
   "the older HIP switch for synchronous launches (slow: diagnosis only)"},
  {"TORCH_USE_CUDA_DSA", KG_GPUENV_DIAGNOSTIC,
   "a PyTorch BUILD option (device-side assertion tracking); setting it at run time "
   "does nothing, a DSA build is switched on with PYTORCH_USE_CUDA_DSA=1"},
  {"PYTORCH_USE_CUDA_DSA", KG_GPUENV_DIAGNOSTIC,
   "1 turns on device-side assertion details in a PyTorch built with TORCH_USE_CUDA_DSA"},
  {"PYTORCH_CUDA_ALLOC_CONF", KG_GPUENV_TUNING,
   "options of PyTorch's caching allocator (e.g. expandable_segments:True against "
   "fragmentation)"},
  {"PYTORCH_HIP_ALLOC_CONF", KG_GPUENV_TUNING,
   "the caching allocator options on ROCm builds"},
  {"TORCH_NCCL_ASYNC_ERROR_HANDLING", KG_GPUENV_TUNING,
   "what a failed or timed-out NCCL collective does: 1 (default) or 3 end the process, "
   "0 leaves it hanging, 2 only cleans up"},
};

const kg_gpuenv_var_t *
kg_gpuenv_table(size_t *n)
{
  *n = sizeof s_table / sizeof s_table[0];
  return s_table;
}

const kg_gpuenv_var_t *
kg_gpuenv_find(const char *name)
{
  for (size_t i = 0; i < sizeof s_table / sizeof s_table[0]; i++)
    if (strcmp(s_table[i].name, name) == 0)
      return &s_table[i];
  return NULL;
}

const char *
kg_gpuenv_kind_name(kg_gpuenv_kind_t kind)
{
  return kind == KG_GPUENV_SELECT ? "select" : kind == KG_GPUENV_DIAGNOSTIC ? "diagnostic"
                                                                          : "tuning";
}

const char *
kg_gpuenv_level_name(kg_gpuenv_level_t level)
{
  return level == KG_GPUENV_WARN ? "warn" : level == KG_GPUENV_INFO ? "info" : "ok";
}

/*  "", "0", "false", "no", "off" (any case) switch a boolean variable off. */
static bool
s_is_off(const char *v)
{
  static const char *off[] = {"", "0", "false", "no", "off"};
  for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
    if (strcasecmp(v, off[i]) == 0)
      return true;
  return false;
}

kg_gpuenv_level_t
kg_gpuenv_assess(const char *name, const char *value, bool diagnostic_run, char *note,
                 size_t len)
{
  if (len)
    note[0] = '\0';
  const kg_gpuenv_var_t *v = kg_gpuenv_find(name);
  if (!v || !value)
    return KG_GPUENV_OK;
  if (v->kind == KG_GPUENV_SELECT) {
    if (!*value || strcmp(value, "-1") == 0 || strcmp(value, "none") == 0) {
      snprintf(note, len, "hides every device: PyTorch will see no GPU and run on the CPU");
      return KG_GPUENV_WARN;
    }
    snprintf(note, len, "only the devices listed are visible, renumbered from 0");
    return KG_GPUENV_INFO;
  }
  if (strcmp(name, "TORCH_USE_CUDA_DSA") == 0) {
    snprintf(note, len, "has no effect at run time (it is a build option)");
    return KG_GPUENV_INFO;
  }
  if (strcmp(name, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == 0) {
    if (strcmp(value, "0") == 0) {
      snprintf(note, len, "a failed collective can hang the kernel forever instead of "
                          "ending it, so kguard sees no error to act on");
      return KG_GPUENV_WARN;
    }
    return KG_GPUENV_OK;
  }
  if (v->kind == KG_GPUENV_DIAGNOSTIC) {
    if (s_is_off(value))
      return KG_GPUENV_OK;
    if (diagnostic_run) {
      snprintf(note, len, "on for this diagnostic run");
      return KG_GPUENV_INFO;
    }
    snprintf(note, len, "a diagnostic switch left on outside a diagnostic run: training "
                        "runs slower; unset it once the error is located");
    return KG_GPUENV_WARN;
  }
  return KG_GPUENV_OK;
}
