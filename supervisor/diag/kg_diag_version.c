/* placeholder so the library has a source until diag lands */
const char *kg_diag_version(void); const char *kg_diag_version(void) { return "1"; }
