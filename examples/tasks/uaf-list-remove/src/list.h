#ifndef EXAMPLES_TASKS_UAF_LIST_REMOVE_SRC_LIST_H_
#define EXAMPLES_TASKS_UAF_LIST_REMOVE_SRC_LIST_H_

/* A singly linked list of integer keys. */
struct node {
  int key;
  struct node *next;
};

struct list {
  struct node *head;
};

int list_push(struct list *l, int key);
int list_remove(struct list *l, int key);
void list_clear(struct list *l);

#endif
