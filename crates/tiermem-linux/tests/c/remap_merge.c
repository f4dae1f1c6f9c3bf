/* remap_merge: an mremap that lands next to other managed regions must leave them
 * managed.
 *
 * Without UFFD_FEATURE_EVENT_REMAP the kernel drops the userfaultfd registration of the
 * VMA an mremap creates. When that VMA merges with its neighbours (same flags, same
 * userfaultfd context, and, for a source that was never touched, a page offset the kernel
 * recomputes for the new address), the registration of the whole merged VMA is dropped:
 * the neighbours' pages that sit in a compressed tier (no PTE) then read as fresh zeros.
 *
 *   [N: 16 MiB, filled][G: 1 MiB][M: 16 MiB, filled][Y: 512 KiB]   S: 1 MiB, never touched
 *
 * G and Y are unmapped (Y only so that S, mapped after it, is not merged with anything
 * when it is created), then S is moved onto G's addresses (MREMAP_FIXED), right between
 * N and M. Under a small budget N and M are then mostly compressed; every byte of them is
 * checked. Prints "ok" or the first bad byte (exit 3). Usage: remap_merge [ROUNDS].
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1UL << 20)
#define PG 4096UL

static unsigned char *map(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

/* A compressible, never-zero pattern, different for every page of every buffer. */
static unsigned char byte_at(int buf, size_t off) {
    return (unsigned char)(1 + (buf * 131 + off / PG) % 250);
}

static void fill(unsigned char *p, size_t len, int buf) {
    for (size_t off = 0; off < len; off += PG)
        memset(p + off, byte_at(buf, off), PG);
}

static int check(const unsigned char *p, size_t len, int buf, const char *name) {
    for (size_t off = 0; off < len; off++) {
        if (p[off] != byte_at(buf, off)) {
            printf("%s: byte %zu (page %zu) is %u, expected %u\n", name, off, off / PG, p[off],
                   byte_at(buf, off));
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    for (int r = 0; r < rounds; r++) {
        unsigned char *n = map(16 * MIB), *g = map(MIB), *m = map(16 * MIB), *y = map(MIB / 2);
        if (g != n + 16 * MIB || m != g + MIB || y != m + 16 * MIB) {
            /* Not laid out one after the other (the runtime hands out the lowest free
             * range, so this is unexpected): the round would test nothing. */
            printf("layout: n=%p g=%p m=%p y=%p\n", (void *)n, (void *)g, (void *)m, (void *)y);
            return 4;
        }
        fill(n, 16 * MIB, 2 * r);
        fill(m, 16 * MIB, 2 * r + 1);
        munmap(y, MIB / 2);
        unsigned char *s = map(MIB);
        munmap(g, MIB);
        void *to = mremap(s, MIB, MIB, MREMAP_MAYMOVE | MREMAP_FIXED, g);
        if (to != g) {
            perror("mremap");
            return 2;
        }
        /* Give the runtime time to compress most of N and M (the budget is small). */
        usleep(1500 * 1000);
        if (!check(n, 16 * MIB, 2 * r, "N") || !check(m, 16 * MIB, 2 * r + 1, "M"))
            return 3;
        for (size_t off = 0; off < MIB; off++)
            if (g[off] != 0) {
                printf("S: byte %zu is %u, expected 0\n", off, g[off]);
                return 3;
            }
        munmap(n, 16 * MIB);
        munmap(g, MIB);
        munmap(m, 16 * MIB);
    }
    printf("ok\n");
    return 0;
}
