/* alloc_race: threads that allocate and free concurrently, checking every byte.
 *
 * Each thread loops over random operations on its own buffers:
 *   map     mmap an anonymous chunk (4 KiB .. 3 MiB), fill, verify, later munmap
 *   calloc  calloc a block (16 B .. 3 MiB), verify it reads as zero, fill, verify, free
 *   realloc malloc a block, then grow it by realloc doubling (to 8 MiB), verifying the
 *           old contents after every move and filling the new tail
 *   small   many small malloc/free (16 B .. 4 KiB), as an interpreter does
 * Every buffer carries a pattern derived from (thread, buffer id, offset); a mismatch
 * prints where and exits 3. Usage: alloc_race THREADS SECONDS [SEED]. Prints "ok N ops".
 *
 * Written for the regression of issue 10: the runtime left a managed region's old
 * addresses unmapped for a moment while moving it (realloc growth), and a concurrent
 * mmap from another thread could be placed there and then overwritten.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 24

static double seconds;
static unsigned base_seed;
static volatile int failed;
static unsigned long total_ops[64];

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

/* Byte `off` of buffer `id`: byte (off % 8) of the word mix(id, off / 8). */
static inline uint64_t word(uint64_t id, size_t w) { return mix(id * 0x9E3779B97F4A7C15ULL ^ w); }
static inline unsigned char pat(uint64_t id, size_t off) {
    return (unsigned char)(word(id, off >> 3) >> ((off & 7) * 8));
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fill(struct buf *b, size_t from, size_t to) {
    size_t o = from;
    for (; o < to && (o & 7); o++) b->p[o] = pat(b->id, o);
    uint64_t *w = (uint64_t *)(void *)b->p; /* malloc and mmap memory is 8-aligned */
    for (; o + 8 <= to; o += 8) w[o >> 3] = word(b->id, o >> 3);
    for (; o < to; o++) b->p[o] = pat(b->id, o);
}

static void check(int t, struct buf *b, size_t len, const char *what) {
    const uint64_t *w = (const uint64_t *)(const void *)b->p;
    size_t o = 0;
    for (; o + 8 <= len; o += 8)
        if (w[o >> 3] != word(b->id, o >> 3)) break;
    for (; o < len; o++) {
        if (b->p[o] != pat(b->id, o)) {
            fprintf(stderr,
                    "alloc_race: thread %d: %s buffer %p (kind %d, len %zu): byte %zu is %#x, "
                    "want %#x\n",
                    t, what, (void *)b->p, b->kind, b->len, o, b->p[o], pat(b->id, o));
            failed = 1;
            _exit(3);
        }
    }
}

static size_t rnd_size(unsigned *s, size_t lo, size_t hi) {
    /* log-uniform between lo and hi */
    double r = (double)rand_r(s) / RAND_MAX;
    double v = lo * __builtin_pow((double)hi / lo, r);
    return (size_t)v;
}

static void release(int t, struct buf *b) {
    switch (b->kind) {
    case K_MAP:
        check(t, b, b->len, "munmap");
        if (munmap(b->p, b->len) != 0) { perror("munmap"); _exit(4); }
        break;
    case K_CALLOC: case K_REALLOC: case K_SMALL:
        check(t, b, b->len, "free");
        free(b->p);
        break;
    default:
        break;
    }
    b->kind = K_NONE;
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    unsigned s = base_seed * 7919 + t * 104729 + 1;
    struct buf bufs[SLOTS] = {0};
    uint64_t next_id = ((uint64_t)t << 40) | 1;
    unsigned long ops = 0;
    double end = now() + seconds;
    while (!failed && now() < end) {
        struct buf *b = &bufs[rand_r(&s) % SLOTS];
        if (b->kind != K_NONE) {
            /* A realloc block grows first (several times), then is freed. */
            if (b->kind == K_REALLOC && b->len < (8u << 20) && rand_r(&s) % 4 != 0) {
                size_t n = b->len * 2;
                check(t, b, b->len, "before realloc");
                unsigned char *q = realloc(b->p, n);
                if (!q) { fprintf(stderr, "realloc(%zu) failed\n", n); _exit(4); }
                b->p = q;
                check(t, b, b->len, "after realloc");
                fill(b, b->len, n);
                b->len = n;
            } else {
                release(t, b);
            }
            ops++;
            continue;
        }
        b->id = next_id++;
        switch (rand_r(&s) % 4) {
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
                    fprintf(stderr, "alloc_race: thread %d: calloc(%zu) byte %zu not zero\n",
                            t, b->len, o);
                    failed = 1;
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
        check(t, b, b->len, "after fill");
        ops++;
    }
    for (int i = 0; i < SLOTS; i++) release(t, &bufs[i]);
    total_ops[t] = ops;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: alloc_race THREADS SECONDS [SEED]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 1 || n > 64) { fprintf(stderr, "alloc_race: THREADS must be 1..64\n"); return 2; }
    seconds = atof(argv[2]);
    base_seed = argc > 3 ? (unsigned)atoi(argv[3]) : (unsigned)getpid();
    pthread_t th[64];
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    unsigned long ops = 0;
    for (int i = 0; i < n; i++) ops += total_ops[i];
    printf("ok %lu ops\n", ops);
    return failed ? 3 : 0;
}
