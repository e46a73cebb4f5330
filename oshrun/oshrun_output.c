/*
 * oshrun --tag-output: each PE's stdout and stderr come to oshrun through a
 * pipe of their own, and oshrun writes every whole line as "[PE r] line"
 * with one write() to its own stdout or stderr. Only oshrun writes there, so
 * a line is never split by another PE's output (a PE's own stdout and
 * stderr stay separate streams, as without tags). A line longer than the
 * buffer is written in tagged pieces; a last line without a newline gets
 * one when the PE ends.
 */
#define _GNU_SOURCE
#include "config.h"
#include "oshrun/oshrun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OSHRUN_LINE_MAX 8192

typedef struct {
    int rank;
    int dest;   /* STDOUT_FILENO or STDERR_FILENO */
    int rd, wr; /* pipe ends; -1 once closed */
    size_t used;
    char buf[OSHRUN_LINE_MAX];
} oshrun_stream_t;

static oshrun_stream_t *oshrun_streams; /* 2 per PE: stdout, stderr */
static int oshrun_nstreams;

int oshrun_output_open(oshrun_job_t *job)
{
    oshrun_nstreams = 2 * job->np;
    oshrun_streams = calloc((size_t)oshrun_nstreams, sizeof(*oshrun_streams));
    if (oshrun_streams == NULL) {
        fprintf(stderr, "oshrun: out of memory\n");
        return -1;
    }
    for (int i = 0; i < oshrun_nstreams; i++) {
        oshrun_stream_t *s = &oshrun_streams[i];
        int fds[2];

        s->rank = i / 2;
        s->dest = (i % 2) ? STDERR_FILENO : STDOUT_FILENO;
        s->rd = s->wr = -1;
        /* close-on-exec: a PE keeps only its own ends, as fd 1 and 2 */
        if (pipe2(fds, O_CLOEXEC) != 0) {
            fprintf(stderr, "oshrun: --tag-output: cannot create a pipe: %s\n", strerror(errno));
            return -1;
        }
        fcntl(fds[0], F_SETFL, O_NONBLOCK);
        s->rd = fds[0];
        s->wr = fds[1];
    }
    return 0;
}

void oshrun_output_child(const oshrun_job_t *job, int rank)
{
    if (oshrun_streams == NULL) {
        return;
    }
    dup2(oshrun_streams[2 * rank].wr, STDOUT_FILENO);
    dup2(oshrun_streams[2 * rank + 1].wr, STDERR_FILENO);
}

void oshrun_output_spawned(const oshrun_job_t *job, int rank)
{
    for (int i = 2 * rank; oshrun_streams != NULL && i < 2 * rank + 2; i++) {
        if (oshrun_streams[i].wr >= 0) {
            close(oshrun_streams[i].wr); /* the PE's end: EOF when it ends */
            oshrun_streams[i].wr = -1;
        }
    }
}

int oshrun_output_pollfds(const oshrun_job_t *job, struct pollfd *pfd)
{
    for (int i = 0; i < oshrun_nstreams; i++) {
        pfd[i].fd = oshrun_streams[i].rd; /* poll skips negative fds */
        pfd[i].events = POLLIN;
        pfd[i].revents = 0;
    }
    return oshrun_nstreams;
}

static void oshrun_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return; /* reader gone: drop the output, keep supervising */
        }
        data += n;
        len -= (size_t)n;
    }
}

/* Writes "[PE r] " + len bytes of line + '\n' in one write(). */
static void oshrun_emit(const oshrun_stream_t *s, const char *line, size_t len)
{
    char out[OSHRUN_LINE_MAX + 32];
    int tag = snprintf(out, sizeof(out), "[PE %d] ", s->rank);

    memcpy(out + tag, line, len);
    out[(size_t)tag + len] = '\n';
    oshrun_write_all(s->dest, out, (size_t)tag + len + 1);
}

/* Emits the whole lines in the buffer (all of it when flush is set). */
static void oshrun_emit_lines(oshrun_stream_t *s, int flush)
{
    size_t start = 0;
    char *nl;

    while ((nl = memchr(s->buf + start, '\n', s->used - start)) != NULL) {
        size_t len = (size_t)(nl - (s->buf + start));
        oshrun_emit(s, s->buf + start, len);
        start += len + 1;
    }
    if ((flush || s->used == sizeof(s->buf)) && start == 0 && s->used > 0) {
        oshrun_emit(s, s->buf, s->used); /* no newline in a full buffer, or the end */
        start = s->used;
    } else if (flush && start < s->used) {
        oshrun_emit(s, s->buf + start, s->used - start);
        start = s->used;
    }
    memmove(s->buf, s->buf + start, s->used - start);
    s->used -= start;
}

/* Reads what is there; closes the stream at EOF, and with finish also
 * when nothing more is there now (a process the PE left behind may hold
 * the pipe open forever). */
static void oshrun_read_stream(oshrun_stream_t *s, int finish)
{
    for (;;) {
        ssize_t n = read(s->rd, s->buf + s->used, sizeof(s->buf) - s->used);

        if (n > 0) {
            s->used += (size_t)n;
            oshrun_emit_lines(s, 0);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0 || finish || errno != EAGAIN) {
            oshrun_emit_lines(s, 1);
            close(s->rd);
            s->rd = -1;
        }
        return;
    }
}

void oshrun_output_forward(oshrun_job_t *job, const struct pollfd *pfd, int n, int finish)
{
    for (int i = 0; i < oshrun_nstreams; i++) {
        oshrun_stream_t *s = &oshrun_streams[i];

        if (s->rd < 0) {
            continue;
        }
        if (finish || (i < n && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))) {
            oshrun_read_stream(s, finish);
        }
    }
    if (finish) {
        for (int i = 0; i < oshrun_nstreams; i++) {
            if (oshrun_streams[i].wr >= 0) {
                close(oshrun_streams[i].wr);
            }
        }
        free(oshrun_streams);
        oshrun_streams = NULL;
        oshrun_nstreams = 0;
    }
}
