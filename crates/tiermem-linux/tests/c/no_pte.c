/* no_pte: a managed page the kernel holds no page for while tiermem holds it resident.
 *
 * The program fills a region, then drops one page behind tiermem's back (the raw
 * madvise system call, which the preload does not see): tiermem still holds that page
 * resident, the kernel has none. Under a small budget tiermem moves the region's pages
 * out; the kernel answers that page's move with "no page" (ENOENT), which tiermem must
 * refuse rather than take as "empty": on kernel 6.18 the same answer came for pages that
 * did hold data (tests/c/alloc_race.c lost them). Every other page must keep its bytes,
 * the dropped one reads as zeros (what the kernel says of it), and the run must end.
 * Usage: no_pte MIB. Prints "ok".
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PG 4096
#define DROPPED 5

static unsigned char pat(size_t page, size_t off) { return (unsigned char)(page * 131 + off * 7 + 1); }

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 16;
    size_t n = mib << 20 >> 12;
    unsigned char *p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 4; }
    for (size_t i = 0; i < n; i++)
        for (size_t o = 0; o < PG; o++) p[i * PG + o] = pat(i, o);
    /* Bring the page home (a read faults it back from its tier), then drop it behind
     * tiermem's back: the raw system call, not the preload's madvise. */
    volatile unsigned char sink = p[DROPPED * PG];
    (void)sink;
    if (syscall(SYS_madvise, p + DROPPED * PG, PG, MADV_DONTNEED) != 0) { perror("madvise"); return 4; }
    /* Read every other page, twice: the dropped one becomes the coldest, and the budget
     * makes the manager move it out; then let the manager run (every few ms). */
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < n; i++) {
            if (i == DROPPED && pass < 2) continue;
            for (size_t o = 0; o < PG; o++) {
                unsigned char want = i == DROPPED ? 0 : pat(i, o);
                if (p[i * PG + o] != want) {
                    fprintf(stderr, "no_pte: pass %d: page %zu byte %zu is %#x, want %#x\n", pass,
                            i, o, p[i * PG + o], want);
                    return 3;
                }
            }
        }
        struct timespec t = {0, 200 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    printf("ok\n");
    return 0;
}
