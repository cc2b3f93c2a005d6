/* inlined.c -- static functions the compiler inlines at -O2, so heaptrack's `i` lines carry
 * inlined frames, plus an ordinary call chain. Written for metatf's tests. Built -O2 -g. */
#include <stdlib.h>
#include <string.h>

static inline __attribute__((always_inline)) void *inner_inline(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 3, n);
    return p;
}

static inline __attribute__((always_inline)) void *outer_inline(size_t n)
{
    return inner_inline(n + 8);
}

__attribute__((noinline)) void *not_inlined(size_t n)
{
    return outer_inline(n);
}

void *volatile sink;

int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 4; i++) {
        void *p = not_inlined(64 * (size_t)(i + argc));
        sink = p;
        if (i % 2)
            free(p); /* the odd ones are freed at once: temporary */
    }
    sink = outer_inline(200); /* inlined into main: leaked */
    return 0;
}
