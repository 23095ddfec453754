#!/usr/bin/env python3
"""The store's rooms keep their shape (coordinator/store/CMakeLists.txt):

- a room (coordinator/store/<room>/) includes from its own room and from records/ only;
  records/ includes from no other room; nothing in a room includes from coordinator/store/
  itself (the folder that spans rooms);
- no include cycle among the store's components, a component being a file's .h and .cc
  together (a test is a component of its own that nothing includes).

Usage: store_layout_test.py <source dir>. Exits 1 naming each violation.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"coordinator/store/([^"]+)"', re.M)


def component(path):
    """coordinator/store/a2a/tasks.cc -> a2a/tasks."""
    return re.sub(r'\.(h|cc)$', '', path)


def room(path):
    return path.split('/', 1)[0] if '/' in path else ''


def main(src):
    store = os.path.join(src, 'coordinator', 'store')
    edges = {}
    problems = []
    for dirpath, _, names in os.walk(store):
        for name in sorted(names):
            if not name.endswith(('.h', '.cc')):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, store)
            with open(full, encoding='utf-8') as f:
                included = INCLUDE.findall(f.read())
            me = component(rel)
            edges.setdefault(me, set())
            for target in included:
                if not os.path.exists(os.path.join(store, target)):
                    problems.append(f'{rel} includes coordinator/store/{target}, which does not exist')
                    continue
                mine, theirs = room(rel), room(target)
                if mine and theirs != mine and theirs != 'records':
                    problems.append(f'{rel} (room {mine}/) includes coordinator/store/{target}: '
                                    'a room uses only itself and records/')
                if mine == 'records' and theirs != 'records':
                    problems.append(f'{rel} includes coordinator/store/{target}: records/ knows no '
                                    'domain')
                other = component(target)
                if other != me:
                    edges[me].add(other)
    # Cycles: depth-first search with colours; report each cycle found once.
    colour = {}
    stack = []

    def visit(node):
        colour[node] = 'grey'
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if colour.get(nxt) == 'grey':
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append('include cycle: ' + ' -> '.join(cycle))
            elif nxt not in colour:
                visit(nxt)
        stack.pop()
        colour[node] = 'black'

    for node in sorted(edges):
        if node not in colour:
            visit(node)
    if not edges:
        problems.append(f'no sources found under {store}')
    for p in problems:
        print('store layout:', p)
    print(f'store layout: {len(edges)} components, {sum(len(e) for e in edges.values())} '
          f'include edges, {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')))
