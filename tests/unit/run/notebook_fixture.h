/*  The run unit tests' notebook: a markdown cell and two code cells (one
    tagged raises-exception), and a loader that checks it parses. Included by
    test_notebook.c and test_params.c; each program gets its own copy
    (static). */
#ifndef KG_NOTEBOOK_FIXTURE_H
#define KG_NOTEBOOK_FIXTURE_H

#include <string.h>

#include "kg_notebook.h"
#include "kg_test.h"

static const char *s_nb =
  "{\"cells\": [{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"# t\"},"
  " {\"cell_type\": \"code\", \"metadata\": {\"tags\": [\"raises-exception\"]},"
  "  \"source\": [\"a = 1\\n\", \"print(a)\"], \"outputs\": [], \"execution_count\": null},"
  " {\"cell_type\": \"code\", \"metadata\": {}, \"source\": \"x\", \"outputs\": [],"
  "  \"execution_count\": 7}],"
  " \"metadata\": {\"kernelspec\": {\"name\": \"python3\", \"display_name\": \"P\"}},"
  " \"nbformat\": 4, \"nbformat_minor\": 4}";

static inline kg_notebook_t *
s_load(const char *text)
{
  kg_notebook_t *nb = NULL;
  char err[256];
  int rc = kg_notebook_parse(text, strlen(text), &nb, err, sizeof err);
  KG_CHECK_INT(rc, 0);
  return nb;
}

#endif
