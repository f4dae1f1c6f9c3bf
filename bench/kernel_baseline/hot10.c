/* hot10: a footprint of which 10 % is hot (bench/kernel_baseline, issue 46).
 *
 * Usage: hot10 MIB PASSES
 * Allocates MIB MiB with one malloc (an anonymous mmap underneath), fills all of it with
 * compressible but non-trivial data (8-byte words drawn from a 64-word dictionary by an LCG,
 * every 8th word a counter: lz4 stores it at roughly a third), then makes PASSES passes
 * over the hot 10 %: every 1 MiB chunk whose index is 3 mod 10. A pass reads one word of
 * every cache line of the hot chunks and writes one word of each of their pages. The cold
 * 90 % is never touched again after the fill. Prints one line with a checksum of what the
 * passes read (deterministic: identical across runs); phase times go to stderr.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHUNK (1u << 20)
#define PAGE 4096u

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static const char dict[64][9] = {
    "alpha   ", "bravo   ", "charlie ", "delta   ", "echo    ", "foxtrot ", "golf    ", "hotel   ",
    "india   ", "juliet  ", "kilo    ", "lima    ", "mike    ", "november", "oscar   ", "papa    ",
    "quebec  ", "romeo   ", "sierra  ", "tango   ", "uniform ", "victor  ", "whiskey ", "xray    ",
    "yankee  ", "zulu    ", "memory  ", "tier    ", "page    ", "pool    ", "budget  ", "fault   ",
    "region  ", "arena   ", "codec   ", "kernel  ", "swap    ", "cgroup  ", "slab    ", "heap    ",
    "stack   ", "thread  ", "mutex   ", "queue   ", "socket  ", "buffer  ", "cache   ", "vector  ",
    "record  ", "index   ", "table   ", "column  ", "cursor  ", "commit  ", "branch  ", "merge   ",
    "object  ", "string  ", "number  ", "array   ", "pointer ", "handle  ", "signal  ", "return  ",
};

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: hot10 MIB PASSES\n");
        return 2;
    }
    size_t mib = strtoull(argv[1], NULL, 10);
    long passes = atol(argv[2]);
    if (mib < 10 || passes < 1) { fprintf(stderr, "hot10: MIB >= 10, PASSES >= 1\n"); return 2; }
    size_t bytes = mib << 20, nw = bytes / 8;
    uint64_t words[64];
    for (int i = 0; i < 64; i++) words[i] = *(const uint64_t *)(const void *)dict[i];

    double t0 = now();
    uint64_t *w = malloc(bytes);
    if (!w) { perror("malloc"); return 4; }
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (size_t i = 0; i < nw; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        w[i] = (i & 7) == 7 ? (i ^ (x >> 48)) : words[x >> 58];
    }
    double t1 = now();

    size_t nchunks = bytes / CHUNK, lines = CHUNK / 64, pages = CHUNK / PAGE;
    uint64_t sum = 0;
    for (long p = 0; p < passes; p++) {
        for (size_t c = 3; c < nchunks; c += 10) {
            uint64_t *b = w + c * (CHUNK / 8);
            for (size_t l = 0; l < lines; l++) sum += b[l * 8] ^ (uint64_t)l;
            for (size_t g = 0; g < pages; g++) b[g * (PAGE / 8) + (p & 511)] += (uint64_t)p;
        }
        sum = sum * 31 + (uint64_t)p;
    }
    double t2 = now();
    size_t hot = 0;
    for (size_t c = 3; c < nchunks; c += 10) hot++;
    printf("hot10 mib=%zu hot_mib=%zu passes=%ld checksum=%016llx\n", mib, hot, passes,
           (unsigned long long)sum);
    fprintf(stderr, "hot10: fill %.2f s, %ld passes %.2f s (%.1f ms/pass)\n", t1 - t0, passes,
            t2 - t1, (t2 - t1) * 1e3 / passes);
    return 0;
}
