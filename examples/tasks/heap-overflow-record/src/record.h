#ifndef EXAMPLES_TASKS_HEAP_OVERFLOW_RECORD_SRC_RECORD_H_
#define EXAMPLES_TASKS_HEAP_OVERFLOW_RECORD_SRC_RECORD_H_

/* One "name:value" record of the input. */
struct record {
  char *name;
  int value;
};

struct record *parse_record(const char *line);
void free_record(struct record *r);

#endif
