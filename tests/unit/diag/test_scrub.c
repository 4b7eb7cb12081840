/*  Tables for kg_tokens and kg_scrub_secrets: credentials found by shape
    and by registered value, and text users need that must come out as it
    went in (digests, tensor dumps, tracebacks, tokenizer settings). */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"
#include "kg_incident.h"
#include "kg_scrub.h"
#include "kg_test.h"
#include "kg_tokens.h"

/* Fakes in the real shapes (none of them is a live credential). */
#define HF "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
#define GHP "ghp_0123456789abcdefghijABCDEFGHIJ012345"
#define PAT "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
#define OPENAI "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
#define SLACK "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
#define AKID "AKIAIOSFODNN7EXAMPLE"
#define AWSSEC "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define WANDB "8c1f2e3d4b5a69788796a5b4c3d2e1f0a9b8c7d6"
#define JWT "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

static void
s_table(kg_scrub_t *s, const char *const (*rows)[2], size_t n)
{
  for (size_t i = 0; i < n; i++) {
    char *out = kg_scrub_secrets(s, rows[i][0]);
    KG_CHECK_STR(out, rows[i][1]);
    free(out);
  }
}

KG_TEST(tokens_by_shape)
{
  static const char *const rows[][2] = {
    {"401 Client Error for token " HF ".", "401 Client Error for token <hf-token>."},
    {"login(" HF ")", "login(<hf-token>)"},
    {"remote: " GHP " rejected", "remote: <github-token> rejected"},
    {"GITHUB_TOKEN=" PAT, "GITHUB_TOKEN=<secret>"},    /* the earlier rule names it */
    {"use " PAT " here", "use <github-token> here"},
    {"Incorrect API key provided: " OPENAI ".", "Incorrect API key provided: <api-key>."},
    {"slack " SLACK " invalid_auth", "slack <slack-token> invalid_auth"},
    {"InvalidAccessKeyId: " AKID " does not exist",
     "InvalidAccessKeyId: <aws-access-key-id> does not exist"},
    {"aws_secret_access_key = " AWSSEC, "aws_secret_access_key = <secret>"},
    {"AWS_SECRET_ACCESS_KEY=" AWSSEC " python train.py",
     "AWS_SECRET_ACCESS_KEY=<secret> python train.py"},
    {"wandb: WANDB_API_KEY=" WANDB, "wandb: WANDB_API_KEY=<secret>"},
    {"{'WANDB_API_KEY': '" WANDB "', 'X': 1}", "{'WANDB_API_KEY': '<secret>', 'X': 1}"},
    {"\"api_key\": \"" WANDB "\"", "\"api_key\": \"<secret>\""},
    {"Authorization: Bearer " JWT, "Authorization: Bearer <jwt>"},
    {"Authorization: Bearer " WANDB, "Authorization: Bearer <secret>"},
    {"cookie " JWT " expired", "cookie <jwt> expired"},
    {"could not connect to postgresql://trainer:s3cr3t-pw@db.internal:5432/runs",
     "could not connect to postgresql://<credentials>@db.internal:5432/runs"},
    {"git clone https://" GHP "@github.com/org/repo",
     "git clone https://<credentials>@github.com/org/repo"},
    {"redis://:hunter2@cache:6379/0", "redis://<credentials>@cache:6379/0"},
    {"password=hunter2hunter2", "password=<secret>"},
    {"DB_PASSWORD: 'correct horse'", "DB_PASSWORD: 'correct horse'"},   /* 7 bytes before the space */
    {"DB_PASSWORD: 'correcthorse'", "DB_PASSWORD: '<secret>'"},
    {"key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n"
     "-----END OPENSSH PRIVATE KEY-----\ndone",
     "key:\n<private-key>\ndone"},
    {"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA (cut", "<private-key>"},
    {"two: " HF " and " GHP, "two: <hf-token> and <github-token>"},
  };
  kg_scrub_t *s = kg_scrub_new();
  s_table(s, rows, sizeof rows / sizeof rows[0]);
  KG_CHECK(kg_scrub_count(s, "token") >= 20);
  KG_CHECK_INT(kg_scrub_count(s, "secret"), 0);
  kg_scrub_destroy(&s);
}

KG_TEST(no_false_positives)
{
  static const char *const keep[] = {
    /* digests, revisions, UUIDs the user needs to compare */
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "digest 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824 mismatch",
    "checkout 8c1f2e3d4b5a69788796a5b4c3d2e1f0a9b8c7d6 (detached)",
    "GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901 MIG-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    "snapshots/8c1f2e3d4b5a69788796a5b4c3d2e1f0a9b8c7d6/config.json",
    /* tensors and shapes */
    "tensor([[-1.2345e-05,  6.7890e+01],\n        [ 3.1416e+00, -2.7183e+00]], device='cuda:0')",
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)",
    "torch.Size([32, 3, 224, 224]) torch.float16",
    /* PyTorch's own error text and assertion line */
    "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
    "block: [0,0,0], thread: [3,0,0] Assertion `t >= 0 && t < n_classes` failed.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    /* Hugging Face and W&B text that is not a credential */
    "  File \"/usr/lib/python3/dist-packages/huggingface_hub/file_download.py\", line 1, "
    "in hf_hub_download",
    "HF_HUB_ENABLE_HF_TRANSFER=1 TOKENIZERS_PARALLELISM=false",
    "tokenizer: bos_token='<|begin_of_text|>', eos_token='<|eot_id|>', pad_token=None",
    "generate(max_new_tokens=512, max_token=2048)",
    "wandb: W&B API key is configured. Use `wandb login --relogin` to force relogin",
    "api_key = os.environ[\"WANDB_API_KEY\"]",
    "token = tokenizer.encode(text)",
    "def login(self, username: str, password: Optional[str] = None):",
    "password = getpass.getpass()",
    "password=args.password",
    "WANDB_API_KEY=<env:WANDB_API_KEY>",
    /* URLs without credentials, and things that only look like them */
    "pip install torch --index-url https://download.pytorch.org/whl/cu121",
    "git clone ssh://git@github.com/org/repo.git",
    "docker://registry.example.org/img@sha256:abcdef",
    "mail alice@example.org about it",
    /* words around the prefixes */
    "scikit-learn sk-learn disk-usage task-0123456789012345678901",
    "AKIA is short; XAKIAIOSFODNN7EXAMPLE is inside a word",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
  };
  kg_scrub_t *s = kg_scrub_new();
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
    char *out = kg_scrub_secrets(s, keep[i]);
    KG_CHECK_STR(out, keep[i]);
    free(out);
  }
  KG_CHECK_INT(kg_scrub_count(s, "token"), 0);
  kg_scrub_destroy(&s);
}

KG_TEST(registered_values_and_names)
{
  kg_scrub_t *s = kg_scrub_new();
  KG_CHECK_INT(kg_scrub_add_secret(s, "MY_SERVICE_PASSWORD", "plain words 42"), 0);
  KG_CHECK_INT(kg_scrub_add_secret(s, "TOKENIZERS_PARALLELISM", "false"), 0);   /* ignored */
  KG_CHECK_INT(kg_scrub_add_secret(s, "SHORT_TOKEN", "abc12"), 0);              /* ignored */
  KG_CHECK_INT(kg_scrub_add_secret(s, "PIN_SECRET", "2048"), 0);                /* ignored */
  static const char *const rows[][2] = {
    {"auth failed for 'plain words 42' on host", "auth failed for '<env:MY_SERVICE_PASSWORD>' on host"},
    {"flags: false false abc12 2048", "flags: false false abc12 2048"},
  };
  s_table(s, rows, sizeof rows / sizeof rows[0]);
  KG_CHECK_INT(kg_scrub_count(s, "secret"), 1);
  kg_scrub_destroy(&s);

  static const struct {
    const char *name;
    bool secret;
  } names[] = {
    {"HF_TOKEN", true},           {"HUGGING_FACE_HUB_TOKEN", true}, {"WANDB_API_KEY", true},
    {"AWS_SECRET_ACCESS_KEY", true}, {"AWS_SESSION_TOKEN", true},  {"OPENAI_API_KEY", true},
    {"JUPYTERHUB_API_TOKEN", true}, {"DB_PASSWORD", true},         {"GITHUB_PAT", true},
    {"SLACK_WEBHOOK_URL", true},  {"GH_AUTH", true},               {"my_passphrase", true},
    {"PATH", false},              {"HOME", false},                 {"CUDA_VISIBLE_DEVICES", false},
    {"GIT_AUTHOR_NAME", false},   {"KGUARD_KEY_DIR", false},       {"SSH_AUTH_SOCK", false},
    {"GOOGLE_APPLICATION_CREDENTIALS_FILE", false},                {"PYTHONPATH", false},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    KG_CHECK_INT(kg_tokens_secret_name(names[i].name, strlen(names[i].name)), names[i].secret);
  static const struct {
    const char *value;
    bool secret;
  } values[] = {
    {"false", false}, {"TRUE", false}, {"disabled", false}, {"12345678901", false},
    {"abc12", false}, {"123456789012", true}, {"hunter2", true}, {NULL, false},
  };
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
    KG_CHECK_INT(kg_tokens_secret_value(values[i].value), values[i].secret);
}

KG_TEST(export_scrub_keeps_its_rules)
{
  /* kg_scrub_text = secrets and shapes, then paths, words, UUIDs */
  kg_scrub_t *s = kg_scrub_new();
  kg_scrub_add_word(s, "alice", "<user>");
  char *out = kg_scrub_text(s, "/home/alice/run.py: " HF " on GPU-1b2c3d4e-5f60");
  KG_CHECK_STR(out, "<path>/run.py: <hf-token> on GPU-<uuid>");
  free(out);
  KG_CHECK_INT(kg_scrub_count(s, "token"), 1);
  kg_scrub_destroy(&s);
}

KG_TEST(incident_record_masks_secrets)
{
  /* the kernel's environment: secrets from the kernelspec or JupyterHub */
  char *envp[] = {"PATH=/usr/bin", "HF_TOKEN=" HF, "WANDB_API_KEY=" WANDB,
                  "AWS_SECRET_ACCESS_KEY=" AWSSEC, "MY_SERVICE_PASSWORD=plain words 42",
                  "TOKENIZERS_PARALLELISM=false", "CUDA_LAUNCH_BLOCKING=1", NULL};
  kg_incident_t *inc = kg_incident_new(1796230984500LL);
  KG_CHECK_INT(kg_incident_set_env(inc, envp), 0);
  /* the error text and the cell quote them, and a key set inside the
     kernel (os.environ, dotenv) that kguard never saw in an environment */
  kg_incident_set_cell(inc, "os.environ['OPENAI_API_KEY'] = '" OPENAI "'\n"
                            "login('" HF "'); use_cache = False", "m1", 3);
  cJSON *fe = cJSON_AddObjectToObject(kg_incident_json(inc), "first_error");
  cJSON_AddStringToObject(fe, "evalue", "CUDA error: device-side assert triggered while "
                                        "uploading with " AWSSEC " and plain words 42");
  cJSON *tb = cJSON_AddArrayToObject(fe, "traceback");
  cJSON_AddItemToArray(tb, cJSON_CreateString("wandb.login(key='" WANDB "')"));
  char dir[] = "/tmp/kg-secrets-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char *path = NULL, *text = NULL;
  size_t len = 0;
  KG_CHECK_INT(kg_incident_write(inc, dir, &path), 0);
  KG_CHECK_INT(kg_file_read(path, 1 << 20, &text, &len), 0);
  static const char *const never[] = {HF, WANDB, AWSSEC, OPENAI, "plain words 42"};
  for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
    KG_CHECK(text && strstr(text, never[i]) == NULL);
  KG_CHECK(text && strstr(text, "login('<env:HF_TOKEN>')"));
  KG_CHECK(text && strstr(text, "with <env:AWS_SECRET_ACCESS_KEY> and <env:MY_SERVICE_PASSWORD>"));
  KG_CHECK(text && strstr(text, "'<api-key>'"));                 /* by its shape */
  KG_CHECK(text && strstr(text, "use_cache = False"));
  cJSON *j = cJSON_Parse(text);
  cJSON *names = cJSON_GetObjectItem(j, "secret_env");
  KG_CHECK_INT(cJSON_GetArraySize(names), 4);     /* names only; "false" is no secret */
  KG_CHECK_STR(cJSON_GetArrayItem(names, 0)->valuestring, "HF_TOKEN");
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "diagnostic_env"),
                                   "CUDA_LAUNCH_BLOCKING")->valuestring, "1");
  cJSON_Delete(j);
  /* the record in memory keeps the text; every write masks it again */
  KG_CHECK(strstr(cJSON_GetObjectItem(kg_incident_json(inc), "cell")->child->valuestring, HF));
  free(text);
  unlink(path);
  free(path);
  rmdir(dir);
  kg_incident_destroy(&inc);
}

KG_TEST_MAIN(KG_CASE(tokens_by_shape), KG_CASE(no_false_positives),
             KG_CASE(registered_values_and_names), KG_CASE(export_scrub_keeps_its_rules),
             KG_CASE(incident_record_masks_secrets))
