/* churn: 8-thread mmap/calloc/realloc allocation churn with a fixed amount of work
 * (bench/kernel_baseline, issue 46: "--dram-budget unlimited within 1.05x of plain").
 *
 * Usage: churn THREADS OPS_PER_THREAD [SEED]
 * The operations of crates/tiermem-linux/tests/c/alloc_race.c (which runs for a fixed
 * time, so its output varies), but a fixed number of them per thread, each thread's
 * sequence drawn from its own seed: map (mmap 4 KiB .. 3 MiB, fill, verify, munmap),
 * calloc (16 B .. 3 MiB, verify zero, fill, verify, free), realloc (64 B .. 256 KiB grown
 * by doubling to 8 MiB, old contents verified after every move) and small (16 B .. 4 KiB
 * malloc/free). Every buffer carries a pattern derived from (thread, id, offset); a
 * mismatch prints where and exits 3. Prints the op count and a checksum of the sizes
 * and patterns verified, identical across runs with the same arguments.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 24

static long ops_per_thread;
static unsigned base_seed;
static uint64_t sums[64];

enum kind { K_NONE, K_MAP, K_CALLOC, K_REALLOC, K_SMALL };

struct buf {
    enum kind kind;
    unsigned char *p;
    size_t len;
    uint64_t id;
};

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static inline uint64_t word(uint64_t id, size_t w) { return mix(id * 0x9E3779B97F4A7C15ULL ^ w); }
static inline unsigned char pat(uint64_t id, size_t off) {
    return (unsigned char)(word(id, off >> 3) >> ((off & 7) * 8));
}

/* A thread-local LCG (rand_r's quality is enough, but glibc's is the same everywhere). */
static inline unsigned rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(*s >> 33);
}

static size_t rnd_size(uint64_t *s, size_t lo, size_t hi) {
    double r = (double)(rnd(s) & 0x7fffffff) / 0x7fffffff;
    return (size_t)(lo * __builtin_pow((double)hi / lo, r));
}

static void fill(struct buf *b, size_t from, size_t to) {
    size_t o = from;
    for (; o < to && (o & 7); o++) b->p[o] = pat(b->id, o);
    uint64_t *w = (uint64_t *)(void *)b->p;
    for (; o + 8 <= to; o += 8) w[o >> 3] = word(b->id, o >> 3);
    for (; o < to; o++) b->p[o] = pat(b->id, o);
}

static uint64_t check(int t, struct buf *b, size_t len, const char *what) {
    const uint64_t *w = (const uint64_t *)(const void *)b->p;
    uint64_t acc = len;
    size_t o = 0;
    for (; o + 8 <= len; o += 8) {
        if (w[o >> 3] != word(b->id, o >> 3)) break;
        acc += w[o >> 3] >> 40;
    }
    for (; o < len; o++) {
        if (b->p[o] != pat(b->id, o)) {
            fprintf(stderr, "churn: thread %d: %s buffer %p (kind %d, len %zu): byte %zu is %#x, want %#x\n",
                    t, what, (void *)b->p, b->kind, b->len, o, b->p[o], pat(b->id, o));
            _exit(3);
        }
        acc += b->p[o];
    }
    return acc;
}

static uint64_t release(int t, struct buf *b) {
    uint64_t acc = 0;
    switch (b->kind) {
    case K_MAP:
        acc = check(t, b, b->len, "munmap");
        if (munmap(b->p, b->len) != 0) { perror("munmap"); _exit(4); }
        break;
    case K_CALLOC: case K_REALLOC: case K_SMALL:
        acc = check(t, b, b->len, "free");
        free(b->p);
        break;
    default:
        break;
    }
    b->kind = K_NONE;
    return acc;
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t s = (uint64_t)base_seed * 7919 + (uint64_t)t * 104729 + 1;
    struct buf bufs[SLOTS];
    memset(bufs, 0, sizeof bufs);
    uint64_t next_id = ((uint64_t)t << 40) | 1, sum = 0;
    for (long ops = 0; ops < ops_per_thread; ops++) {
        struct buf *b = &bufs[rnd(&s) % SLOTS];
        if (b->kind != K_NONE) {
            if (b->kind == K_REALLOC && b->len < (8u << 20) && rnd(&s) % 4 != 0) {
                size_t n = b->len * 2;
                sum += check(t, b, b->len, "before realloc");
                unsigned char *q = realloc(b->p, n);
                if (!q) { fprintf(stderr, "realloc(%zu) failed\n", n); _exit(4); }
                b->p = q;
                sum += check(t, b, b->len, "after realloc");
                fill(b, b->len, n);
                b->len = n;
            } else {
                sum += release(t, b);
            }
            continue;
        }
        b->id = next_id++;
        switch (rnd(&s) % 4) {
        case 0:
            b->kind = K_MAP;
            b->len = rnd_size(&s, 4096, 3u << 20) & ~(size_t)4095;
            if (b->len == 0) b->len = 4096;
            b->p = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (b->p == MAP_FAILED) { perror("mmap"); _exit(4); }
            break;
        case 1:
            b->kind = K_CALLOC;
            b->len = rnd_size(&s, 16, 3u << 20);
            b->p = calloc(1, b->len);
            if (!b->p) { fprintf(stderr, "calloc failed\n"); _exit(4); }
            for (size_t o = 0; o < b->len; o++)
                if (b->p[o]) {
                    fprintf(stderr, "churn: thread %d: calloc(%zu) byte %zu not zero\n", t, b->len, o);
                    _exit(3);
                }
            break;
        case 2:
            b->kind = K_REALLOC;
            b->len = rnd_size(&s, 64, 256u << 10);
            b->p = malloc(b->len);
            if (!b->p) { fprintf(stderr, "malloc failed\n"); _exit(4); }
            break;
        default:
            b->kind = K_SMALL;
            b->len = rnd_size(&s, 16, 4096);
            b->p = malloc(b->len);
            if (!b->p) { fprintf(stderr, "malloc failed\n"); _exit(4); }
            break;
        }
        fill(b, 0, b->len);
        sum += check(t, b, b->len, "after fill");
    }
    for (int i = 0; i < SLOTS; i++) sum += release(t, &bufs[i]);
    sums[t] = sum;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: churn THREADS OPS_PER_THREAD [SEED]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 1 || n > 64) { fprintf(stderr, "churn: THREADS must be 1..64\n"); return 2; }
    ops_per_thread = atol(argv[2]);
    base_seed = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
    pthread_t th[64];
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) { perror("pthread_create"); return 4; }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) sum = sum * 1099511628211ULL + sums[i];
    printf("churn threads=%d ops=%ld checksum=%016llx\n", n, (long)n * ops_per_thread, (unsigned long long)sum);
    return 0;
}
