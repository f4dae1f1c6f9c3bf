/* cold_hot: MIB MiB of which 10 % stays hot for SECONDS, the rest is written once and never
 * touched again until the end, when every byte is checked (tests/runtime.rs).
 *
 * Usage: cold_hot MIB SECONDS. Page p holds words derived from p; the hot pages (every
 * 1 MiB chunk whose index is 3 mod 10) are read every pass and count the passes in word 1.
 * Prints "cold_hot ok pages=N passes=P" and exits 0 when every word is as written, else
 * prints the first bad word and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PAGE 4096u
#define CHUNK (1u << 20)
#define WORDS (PAGE / 8)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Compressible but not constant: a few distinct words per page. */
static uint64_t word(size_t page, size_t i) { return (uint64_t)page * 0x9E3779B97F4A7C15ull ^ (i & 7); }

static volatile uint64_t sink; /* keeps the reads */

static int hot(size_t page) { return (page * PAGE / CHUNK) % 10 == 3; }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: cold_hot MIB SECONDS\n"); return 2; }
    size_t pages = (size_t)strtoull(argv[1], NULL, 10) * (1u << 20) / PAGE;
    double secs = atof(argv[2]);
    uint64_t *m = malloc(pages * PAGE);
    if (!m) { perror("malloc"); return 4; }
    for (size_t p = 0; p < pages; p++)
        for (size_t i = 0; i < WORDS; i++) m[p * WORDS + i] = word(p, i);
    long passes = 0;
    double end = now() + secs;
    while (now() < end) {
        passes++;
        for (size_t p = 0; p < pages; p++) {
            if (!hot(p)) continue;
            uint64_t *w = m + p * WORDS, sum = 0;
            for (size_t i = 0; i < WORDS; i += 8) sum += w[i]; /* a read of every cache line */
            sink += sum;
            w[1] += 1;
        }
    }
    for (size_t p = 0; p < pages; p++) {
        for (size_t i = 0; i < WORDS; i++) {
            uint64_t want = word(p, i) + (hot(p) && i == 1 ? (uint64_t)passes : 0);
            if (m[p * WORDS + i] != want) {
                printf("cold_hot BAD page %zu word %zu: %llx, want %llx\n", p, i,
                       (unsigned long long)m[p * WORDS + i], (unsigned long long)want);
                return 1;
            }
        }
    }
    printf("cold_hot ok pages=%zu passes=%ld\n", pages, passes);
    return 0;
}
