#include "list.h"

#include <stdlib.h>

int list_push(struct list *l, int key) {
  struct node *n = malloc(sizeof(*n));
  if (n == NULL) return 0;
  n->key = key;
  n->next = l->head;
  l->head = n;
  return 1;
}

/* Unlinks and frees the first node with `key`; 1 when one was found. */
int list_remove(struct list *l, int key) {
  struct node **p = &l->head;
  while (*p != NULL) {
    struct node *n = *p;
    if (n->key == key) {
      free(n);
      *p = n->next;
      return 1;
    }
    p = &n->next;
  }
  return 0;
}

void list_clear(struct list *l) {
  while (l->head != NULL) list_remove(l, l->head->key);
}
