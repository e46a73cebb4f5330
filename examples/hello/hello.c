/*
 * hello: the first demo. Every PE publishes a greeting under its rank,
 * the job fences, and every PE reads its right neighbour's greeting.
 *   oshrun -n 4 examples/hello/hello
 * (Until the OpenSHMEM layer lands this uses the internal bootstrap.)
 */
#include "bootstrap/bootstrap.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char mine[128], theirs[128], host[64] = "";
    size_t size;
    int me, n, right;

    if (bootstrap_init() != UTIL_OK) {
        fprintf(stderr, "hello: cannot start (run it under oshrun)\n");
        return 1;
    }
    me = bootstrap_rank();
    n = bootstrap_size();
    right = (me + 1) % n;
    gethostname(host, sizeof(host) - 1);
    snprintf(mine, sizeof(mine), "greetings from PE %d (pid %ld on %s)", me, (long)getpid(), host);
    if (bootstrap_put("greeting", mine, strlen(mine) + 1) != UTIL_OK ||
        bootstrap_commit() != UTIL_OK || bootstrap_fence() != UTIL_OK ||
        bootstrap_get(right, "greeting", theirs, sizeof(theirs), &size) != UTIL_OK) {
        fprintf(stderr, "hello: PE %d: key exchange failed\n", me);
        bootstrap_abort(1, "key exchange failed");
    }
    printf("PE %d of %d (node %d, local %d of %d): PE %d says \"%s\"\n", me, n, bootstrap_node_id(),
           bootstrap_local_rank(), bootstrap_local_size(), right, theirs);
    bootstrap_finalize();
    return 0;
}
