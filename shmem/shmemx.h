/*
 * shmemx.h — rmb extensions to OpenSHMEM. None yet beyond shmem.h; the
 * header exists so programs that include it build unchanged.
 */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#endif
