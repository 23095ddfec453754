#include <stdio.h>

#include "record.h"

/* Prints each "name:value" argument as a parsed record. */
int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    struct record *r = parse_record(argv[i]);
    if (r == NULL) return 1;
    printf("%s = %d\n", r->name, r->value);
    free_record(r);
  }
  return 0;
}
