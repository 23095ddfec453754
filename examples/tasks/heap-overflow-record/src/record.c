#include "record.h"

#include <stdlib.h>
#include <string.h>

/* Splits "name:value" into a record. The name is copied into its own buffer. */
struct record *parse_record(const char *line) {
  struct record *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  const char *colon = strchr(line, ':');
  size_t name_len = colon != NULL ? (size_t)(colon - line) : strlen(line);
  r->name = malloc(name_len);
  if (r->name == NULL) {
    free(r);
    return NULL;
  }
  memcpy(r->name, line, name_len);
  r->name[name_len] = '\0';
  r->value = colon != NULL ? atoi(colon + 1) : 0;
  return r;
}

void free_record(struct record *r) {
  if (r == NULL) return;
  free(r->name);
  free(r);
}
