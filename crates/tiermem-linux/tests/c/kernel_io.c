/* Kernel-mode accesses to evicted pages: write(2) from and read(2) into managed buffers
 * through a pipe, then send(2) from and recv(2) into them through a TCP loopback socket,
 * each by two threads (the kernel copies from the sender's buffer and into the
 * receiver's, faulting on any page that is not mapped). Every byte is checked against
 * what it must hold; stdout is one line per buffer (a hash) and "ok", identical under any
 * budget. stderr: how many pages were not resident (mincore) when a system call was
 * handed them, per call kind: under tiermem most are, in a plain run none.
 *
 * usage: kernel_io [BUFFERS (default 48)]   buffers of 1 MiB, half sources, half targets
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF (1 << 20)
#define CHUNK (64 << 10)
#define PG 4096

static int n;             /* buffers */
static unsigned char **b; /* b[0..n/2): sources, b[n/2..n): targets */
static long evicted[4];   /* pipe write, pipe read, send, recv */

static void fill(unsigned char *p, int tag) {
    /* Compressible (a compressed tier takes it) and different on every line. */
    char line[64];
    for (int off = 0; off < BUF; off += 32) {
        snprintf(line, sizeof line, "buffer %04d line %08d .....\n", tag, off / 32);
        memcpy(p + off, line, 32);
    }
}

static void check(const unsigned char *p, int tag, const char *what, int i) {
    static unsigned char want[BUF];
    fill(want, tag);
    if (memcmp(p, want, BUF) != 0) {
        size_t k = 0;
        while (p[k] == want[k]) k++;
        fprintf(stderr, "MISMATCH %s buffer %d at byte %zu: %02x, want %02x\n", what, i, k, p[k], want[k]);
        exit(1);
    }
}

static long not_resident(void *p, size_t len) {
    unsigned char v[CHUNK / PG];
    if (mincore(p, len, v) != 0) { perror("mincore"); exit(1); }
    long c = 0;
    for (size_t k = 0; k < len / PG; k++) c += !(v[k] & 1);
    return c;
}

static void put_all(int fd, unsigned char *p, size_t len, int sock, long *ev) {
    for (size_t off = 0; off < len; off += CHUNK) {
        __atomic_fetch_add(ev, not_resident(p + off, CHUNK), __ATOMIC_RELAXED);
        size_t done = 0;
        while (done < CHUNK) {
            ssize_t w = sock ? send(fd, p + off + done, CHUNK - done, 0) : write(fd, p + off + done, CHUNK - done);
            if (w <= 0) { perror(sock ? "send" : "write"); exit(1); }
            done += w;
        }
    }
}

static void get_all(int fd, unsigned char *p, size_t len, int sock, long *ev) {
    for (size_t off = 0; off < len; off += CHUNK) {
        __atomic_fetch_add(ev, not_resident(p + off, CHUNK), __ATOMIC_RELAXED);
        size_t done = 0;
        while (done < CHUNK) {
            ssize_t r = sock ? recv(fd, p + off + done, CHUNK - done, MSG_WAITALL) : read(fd, p + off + done, CHUNK - done);
            if (r <= 0) { perror(sock ? "recv" : "read"); exit(1); }
            done += r;
        }
    }
}

struct job { int fd, sock, from, to; };

static void *sender(void *arg) {
    struct job *j = arg;
    for (int i = j->from; i < j->to; i++) put_all(j->fd, b[i], BUF, j->sock, &evicted[j->sock ? 2 : 0]);
    return NULL;
}

static uint64_t fnv(const unsigned char *p, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < len; k++) h = (h ^ p[k]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv) {
    n = argc > 1 ? atoi(argv[1]) : 48;
    if (n < 2 || n % 2) { fprintf(stderr, "BUFFERS: an even number >= 2\n"); return 2; }
    int h = n / 2;
    b = calloc(n, sizeof *b);
    for (int i = 0; i < n; i++) {
        /* >= 128 KiB: a managed region of its own under tiermem; page-aligned for mincore. */
        if (posix_memalign((void **)&b[i], PG, BUF)) { perror("posix_memalign"); return 1; }
        fill(b[i], i);
    }
    /* Pipe: sources -> targets (target i+h gets source i). */
    int pfd[2];
    if (pipe(pfd) != 0) { perror("pipe"); return 1; }
    struct job pj = {pfd[1], 0, 0, h};
    pthread_t t;
    pthread_create(&t, NULL, sender, &pj);
    for (int i = h; i < n; i++) get_all(pfd[0], b[i], BUF, 0, &evicted[1]);
    pthread_join(t, NULL);
    for (int i = h; i < n; i++) check(b[i], i - h, "after the pipe", i);
    /* TCP loopback: targets -> sources shifted by one (source (i+1)%h gets target i+h,
     * which now holds what source i held). */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(ls, (void *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (void *)&a, &al)) { perror("listen"); return 1; }
    int cs = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(cs, (void *)&a, sizeof a)) { perror("connect"); return 1; }
    int ss = accept(ls, NULL, NULL);
    if (ss < 0) { perror("accept"); return 1; }
    struct job sj = {cs, 1, h, n};
    pthread_create(&t, NULL, sender, &sj);
    for (int i = 0; i < h; i++) get_all(ss, b[(i + 1) % h], BUF, 1, &evicted[3]);
    pthread_join(t, NULL);
    for (int i = 0; i < h; i++) check(b[(i + 1) % h], i, "after the socket", (i + 1) % h);
    for (int i = 0; i < n; i++) printf("buffer %d %016llx\n", i, (unsigned long long)fnv(b[i], BUF));
    printf("ok %d buffers of 1 MiB through a pipe and a socket\n", n);
    fprintf(stderr, "not resident when handed to the kernel (pages): write %ld read %ld send %ld recv %ld\n",
            evicted[0], evicted[1], evicted[2], evicted[3]);
    return 0;
}
