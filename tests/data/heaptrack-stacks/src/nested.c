/* nested.c -- allocations under nested calls several frames deep, recursion, calloc and
 * realloc, and leaks. Written for metatf's tests (no third-party code). Built -O0 -g. */
#include <stdlib.h>
#include <string.h>

static void *keep[64];
static int nkeep;

void *leaf_alloc(size_t n)
{
    return malloc(n);
}

void *middle(size_t n)
{
    return leaf_alloc(n);
}

void *outer(size_t n)
{
    return middle(n);
}

/* Recursion: every level allocates, so each depth is a distinct stack. */
void recurse(int depth)
{
    keep[nkeep++] = malloc(16 * (size_t)(depth + 1));
    if (depth > 0)
        recurse(depth - 1);
}

/* calloc then realloc growing the same block; the last size is leaked. */
char *grow(int steps)
{
    char *p = calloc(4, 8);
    for (int i = 0; i < steps; i++)
        p = realloc(p, 64 << i);
    return p;
}

int main(void)
{
    for (int i = 0; i < 5; i++)
        keep[nkeep++] = outer(100);
    void *direct = malloc(40);
    recurse(3);
    char *g = grow(3);
    memset(g, 1, 64);
    free(direct);
    /* free all but the last two kept blocks: those two and g leak */
    for (int i = 0; i < nkeep - 2; i++)
        free(keep[i]);
    return 0;
}
