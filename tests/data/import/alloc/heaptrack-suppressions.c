#include <stdlib.h>
const char *__lsan_default_suppressions(void) { return "leak:foo\nleak:bar*\n"; }
int main(void) { void *p = malloc(10); (void)p; return 0; }
