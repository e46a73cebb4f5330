/*
 * oshrun: launches N PEs on this machine and is itself their PMIx server,
 * so no external runtime is needed. oshrun.c parses the command line,
 * forks and supervises the PEs; oshrun_server.c is the PMIx server side.
 *
 * PMIx upcalls run on PMIx's own thread. They never touch the process table:
 * they record what happened and wake the main loop through a pipe.
 */
#ifndef OSHRUN_H
#define OSHRUN_H

#include <limits.h>
#include <pmix_server.h>
#include <poll.h>
#include <sys/types.h>

typedef struct oshrun_job {
    int np;      /* number of PEs */
    int nodes;   /* emulated nodes; PEs are placed in blocks */
    char **argv; /* program and its arguments */
    char tmpdir[PATH_MAX];
    char nspace[PMIX_MAX_NSLEN + 1];
    int wake_fd;       /* write end of the main loop's wake-up pipe */
    int netns;         /* --netns: one network namespace per node */
    int *netns_fds;    /* node k's namespace (NULL without --netns) */
    int netns_hub;     /* the bridge's namespace; -1 without --netns */
    int nodes_given;   /* --nodes was on the command line */
    int local;         /* --local: on this machine even in a Slurm job */
    int per_node;      /* PEs per node (--map-by ppr:N:node); 0: ceil(np/nodes) */
    int map_cyclic;    /* --map-by node: PE r on node r mod nodes */
    int bind;          /* --bind-to: OSHRUN_BIND_* */
    int oversubscribe; /* --oversubscribe (always allowed here; srun --overcommit) */
    int tag_output;    /* --tag-output: "[PE r] " before each line */
    int *out_fds;      /* --tag-output: per PE the read ends of stdout, stderr */
} oshrun_job_t;

enum { OSHRUN_BIND_DEFAULT, OSHRUN_BIND_NONE, OSHRUN_BIND_CORE };

/* --tag-output (oshrun_output.c): every PE's stdout and stderr go through
 * a pipe; oshrun writes each whole line with the PE's tag in one write(),
 * so lines of different PEs never mix inside a line. */
int oshrun_output_open(oshrun_job_t *job);
/* In PE rank's child before exec: its stdout and stderr onto its pipes. */
void oshrun_output_child(const oshrun_job_t *job, int rank);
/* In oshrun after PE rank is forked: closes the PE's ends of its pipes. */
void oshrun_output_spawned(const oshrun_job_t *job, int rank);
/* Adds the open read ends to pfd (at most 2 * np); returns how many. */
int oshrun_output_pollfds(const oshrun_job_t *job, struct pollfd *pfd);
/* Forwards what is readable on the fds that pfd reports (from
 * oshrun_output_pollfds); finish: read to the end, flush and close all. */
void oshrun_output_forward(oshrun_job_t *job, const struct pollfd *pfd, int n, int finish);

/* --netns: the PEs' interface and the hub's address (oshrun_netns.c). */
#define OSHRUN_NETNS_IFACE    "rmb0"
#define OSHRUN_NETNS_HUB_ADDR "10.213.0.254"
#define OSHRUN_NETNS_SUBNET   "10.213.0.0/24"

/* Creates the namespaces and links (root only); prints one line on failure. */
int oshrun_netns_create(oshrun_job_t *job);
/* The calling thread enters the hub (for the PMIx listener) and returns. */
int oshrun_netns_enter_hub(const oshrun_job_t *job);
int oshrun_netns_leave_hub(void);
/* In a PE's child before exec: joins its node's namespace. */
int oshrun_netns_enter_node(const oshrun_job_t *job, int node);
void oshrun_netns_close(oshrun_job_t *job);

/* oshrun_slurm.c: 1 when the job goes to srun (in a Slurm allocation,
 * not in a step, no --local); oshrun_slurm_exec returns only on failure,
 * with oshrun's exit status, after one line on stderr. */
int oshrun_slurm_wanted(const oshrun_job_t *job);
int oshrun_slurm_exec(const oshrun_job_t *job, long timeout_s);

/* Node of a PE under block placement. */
int oshrun_node_of(const oshrun_job_t *job, int rank);

/* Starts the PMIx server with a private tmpdir and registers the job. */
int oshrun_server_start(oshrun_job_t *job);
/* Registers one PE and appends the PMIx client variables to *env_p. */
int oshrun_server_setup_pe(oshrun_job_t *job, int rank, char ***env_p);
/* Shuts the server down; clean = every PE ended normally. */
void oshrun_server_stop(oshrun_job_t *job, int clean);

/* What a PE reported through PMIx_Abort, if any (first one wins). */
int oshrun_server_abort_info(int *rank_p, int *status_p, char *msg, size_t msglen);

#endif
