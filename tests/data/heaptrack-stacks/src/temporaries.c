/* temporaries.c -- temporary allocations (heaptrack: a block freed with no allocation in
 * between), blocks freed later (not temporary), and a peak reached in one branch of a
 * function called from two places. Written for metatf's tests. Built -O0 -g. */
#include <stdlib.h>
#include <string.h>

/* A temporary: allocate, use, free; nothing allocated in between. */
size_t scratch(size_t n)
{
    char *p = malloc(n);
    memset(p, 0, n);
    size_t r = (size_t)p[n - 1] + n;
    free(p);
    return r;
}

/* Two blocks freed in allocation order: the first is not temporary (the second was
 * allocated before it was freed), the second is. */
void pair(void)
{
    char *a = malloc(24);
    char *b = malloc(48);
    free(a);
    free(b);
}

/* big == 1: a large short-lived buffer, the peak of the run is inside this branch. */
void work(int big)
{
    if (big) {
        char *huge = malloc(100000);
        char *side = malloc(3000);
        memset(huge, 2, 100000);
        free(side);
        free(huge);
    } else {
        char *small = malloc(500);
        free(small);
    }
}

void caller_a(void) { work(0); }
void caller_b(void) { work(1); }

int main(void)
{
    size_t s = 0;
    for (int i = 0; i < 10; i++)
        s += scratch(32 + (size_t)i);
    pair();
    pair();
    caller_a();
    caller_b();
    caller_a();
    char *held = malloc(777); /* leaked */
    held[0] = (char)s;
    return 0;
}
