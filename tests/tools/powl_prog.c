/* Built by tests/check_tools with oshcc: powl is in libm, which oshcc links. */
#include <math.h>
#include <shmem.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    long double x;

    shmem_init();
    x = powl(2.0L, (long double)(argc + 9)); /* not folded: argc is known at run time */
    printf("PE %d of %d: powl %.0Lf\n", shmem_my_pe(), shmem_n_pes(), x);
    shmem_finalize();
    return 0;
}
