/* threads.c -- allocations on two threads through the same functions and a leak per thread,
 * so the same call stack below the thread entry is reached from two threads (heaptrack's
 * trace tree does not record the thread). Written for metatf's tests. Built -O0 -g -pthread. */
#include <pthread.h>
#include <stdlib.h>

void *make(size_t n) { return malloc(n); }

void *worker(void *arg)
{
    size_t n = (size_t)arg;
    void *keep = make(n);
    for (int i = 0; i < 3; i++) {
        void *t = make(n * 2);
        free(t);
    }
    return keep; /* leaked by main */
}

int main(void)
{
    pthread_t a, b;
    void *ra, *rb;
    pthread_create(&a, NULL, worker, (void *)64);
    pthread_join(a, &ra);
    pthread_create(&b, NULL, worker, (void *)128);
    pthread_join(b, &rb);
    free(ra);
    return 0;
}
