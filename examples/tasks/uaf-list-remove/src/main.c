#include <stdio.h>
#include <stdlib.h>

#include "list.h"

/* Pushes every argument as a key, then removes the first one. */
int main(int argc, char **argv) {
  struct list l = {NULL};
  for (int i = 1; i < argc; ++i) list_push(&l, atoi(argv[i]));
  if (argc > 1) printf("removed %d: %d\n", atoi(argv[1]), list_remove(&l, atoi(argv[1])));
  list_clear(&l);
  return 0;
}
