/* Writes a pattern over MIB MiB (argv[1], default 64), then ROUNDS (argv[2], default 4)
 * times reads every page back, checks every byte against its version and rewrites it with
 * the next version. Under a small budget pages are evicted and fault back between rounds.
 * Prints "ok" and exits 0 only if every byte read was the one written. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint8_t expect(size_t off, unsigned version) {
    /* Runs of 64 equal bytes: compressible, and still different in every page and round. */
    return (uint8_t)((off >> 6) * 7 + (off >> 12) * 13 + version * 29);
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], 0, 10) : 64;
    unsigned rounds = argc > 2 ? strtoul(argv[2], 0, 10) : 4;
    size_t n = mib << 20;
    uint8_t *p = malloc(n);
    if (!p) { perror("malloc"); return 1; }
    for (size_t i = 0; i < n; i++) p[i] = expect(i, 0);
    for (unsigned r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            if (p[i] != expect(i, r)) {
                fprintf(stderr, "mismatch at byte %zu round %u: %u != %u\n", i, r, p[i], expect(i, r));
                return 3;
            }
            p[i] = expect(i, r + 1);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (p[i] != expect(i, rounds)) { fprintf(stderr, "mismatch at byte %zu at the end\n", i); return 3; }
    free(p);
    puts("ok");
    return 0;
}
