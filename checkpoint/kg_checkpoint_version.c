const char *kg_checkpoint_version(void); const char *kg_checkpoint_version(void) { return "1"; }
