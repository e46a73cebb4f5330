/*
 * oshrun inside a Slurm allocation (SLURM_JOB_ID set, as after salloc or
 * in an sbatch script): the PEs belong on the allocation's nodes, started
 * by Slurm, so oshrun hands the job to `srun --mpi=pmix`, as mpirun does.
 * Inside a job step (SLURM_STEP_ID set: oshrun was itself started by
 * srun) and with --local, oshrun runs the PEs on this machine as usual.
 */
#include "config.h"
#include "oshrun/oshrun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int oshrun_slurm_wanted(const oshrun_job_t *job)
{
    const char *jobid = getenv("SLURM_JOB_ID");

    return !job->local && jobid != NULL && *jobid != '\0' && getenv("SLURM_STEP_ID") == NULL;
}

#define OSHRUN_SRUN_ARGS 14 /* srun and its options, at most */

int oshrun_slurm_exec(const oshrun_job_t *job, long timeout_s)
{
    char ntasks[32], nodes[32], minutes[32], per_node[48], **argv;
    int argc = 0, nargs = 0;

    if (job->netns) {
        fprintf(stderr,
                "oshrun: --netns emulates nodes on this machine, but this is Slurm job %s: "
                "its PEs run on the allocation's nodes (oshrun --local to emulate here)\n",
                getenv("SLURM_JOB_ID"));
        return 2;
    }
    while (job->argv[nargs] != NULL) {
        nargs++;
    }
    argv = calloc((size_t)(OSHRUN_SRUN_ARGS + nargs + 1), sizeof(char *));
    if (argv == NULL) {
        fprintf(stderr, "oshrun: out of memory\n");
        return 1;
    }
    snprintf(ntasks, sizeof(ntasks), "--ntasks=%d", job->np);
    argv[argc++] = "srun";
    argv[argc++] = "--mpi=pmix";
    argv[argc++] = ntasks;
    if (job->nodes_given) {
        snprintf(nodes, sizeof(nodes), "--nodes=%d", job->nodes);
        argv[argc++] = nodes;
    }
    /* oshrun's placement and output options in srun's words; -x values
     * are already in the environment, which srun passes to every task. */
    if (job->per_node > 0) {
        snprintf(per_node, sizeof(per_node), "--ntasks-per-node=%d", job->per_node);
        argv[argc++] = per_node;
    }
    if (job->map_cyclic) {
        argv[argc++] = "--distribution=cyclic";
    }
    if (job->bind != OSHRUN_BIND_DEFAULT) {
        argv[argc++] = job->bind == OSHRUN_BIND_CORE ? "--cpu-bind=cores" : "--cpu-bind=none";
    }
    if (job->oversubscribe) {
        argv[argc++] = "--overcommit";
    }
    if (job->tag_output) {
        argv[argc++] = "--label"; /* srun's tag: "r: line" */
    }
    argv[argc++] = "--kill-on-bad-exit=1"; /* like oshrun: one failing PE ends the job */
    if (timeout_s > 0) {
        snprintf(minutes, sizeof(minutes), "--time=%ld", (timeout_s + 59) / 60);
        argv[argc++] = minutes;
    }
    argv[argc++] = "--";
    memcpy(argv + argc, job->argv, sizeof(char *) * (size_t)nargs);
    execvp("srun", argv);
    fprintf(stderr,
            "oshrun: this is Slurm job %s, but srun cannot be run (%s): start the PEs "
            "with srun --mpi=pmix, or with oshrun --local on this machine\n",
            getenv("SLURM_JOB_ID"), strerror(errno));
    free(argv);
    return 1;
}
