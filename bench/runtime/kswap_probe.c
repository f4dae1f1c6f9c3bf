// kswap_probe: can the kernel itself serve a tier of a userfaultfd-registered region?
//
// Fills MB MiB of anonymous memory registered with userfaultfd (MISSING mode, as the
// runtime registers its regions), hands every page to the machine's swap (zswap in front)
// with MADV_PAGEOUT, counts what /proc/self/pagemap says of them (swapped / present), then
// touches one word of every page in random order, timing each touch, while a thread polls
// the userfaultfd and counts any message (a swap entry is not an empty entry, so MISSING
// faults should never fire). Checks every page's content and a read(2) into a paged-out
// page (a kernel-mode access). Prints one line of key=value.
//
// Build: cc -O2 -pthread -o kswap_probe kswap_probe.c; run as root with swap + zswap on
// (bench/lib/kernel-swap.sh sets them up). Usage: kswap_probe [MB [nouffd]]
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#define PAGE 4096UL

static volatile int stop;
static volatile long uffd_msgs;
static int uffd;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void *poller(void *arg) {
    (void)arg;
    struct pollfd p = {.fd = uffd, .events = POLLIN};
    struct uffd_msg m;
    while (!stop) {
        if (poll(&p, 1, 100) > 0 && read(uffd, &m, sizeof m) == sizeof m) {
            uffd_msgs++;
            // Serve it with zeros so the toucher is not stuck (it would show as a bad page).
            struct uffdio_zeropage z = {.range = {.start = m.arg.pagefault.address & ~(PAGE - 1), .len = PAGE}};
            ioctl(uffd, UFFDIO_ZEROPAGE, &z);
        }
    }
    return NULL;
}

static void count_pagemap(char *base, size_t pages, long *present, long *swapped) {
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t e;
    *present = *swapped = 0;
    for (size_t i = 0; i < pages; i++) {
        if (pread(fd, &e, 8, ((uintptr_t)base / PAGE + i) * 8) != 8) break;
        *present += (e >> 63) & 1;
        *swapped += (e >> 62) & 1;
    }
    close(fd);
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? strtoul(argv[1], 0, 10) : 64, pages = mb << 20 >> 12;
    char *base = mmap(0, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    struct uffdio_api api = {.api = UFFD_API};
    struct uffdio_register reg = {.range = {.start = (uintptr_t)base, .len = pages * PAGE}, .mode = UFFDIO_REGISTER_MODE_MISSING};
    // "nouffd": the same without the registration, to see what it costs the kernel's swap-in.
    int use_uffd = !(argc > 2 && !strcmp(argv[2], "nouffd"));
    if (base == MAP_FAILED || uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || (use_uffd && ioctl(uffd, UFFDIO_REGISTER, &reg))) {
        perror("setup");
        return 1;
    }
    pthread_t th;
    pthread_create(&th, 0, poller, 0);
    // Text-like compressibility, as tiermem-touch writes: a few distinct words per page.
    uint64_t *w = (uint64_t *)base;
    for (size_t i = 0; i < pages; i++)
        for (size_t j = 0; j < PAGE / 8; j++) w[i * PAGE / 8 + j] = (uint64_t)i << 8 | j % 24;
    long msgs_fill = uffd_msgs, present, swapped;
    uint64_t t0 = now_ns();
    int r = madvise(base, pages * PAGE, MADV_PAGEOUT);
    uint64_t pageout_ns = now_ns() - t0;
    count_pagemap(base, pages, &present, &swapped);
    // A kernel-mode access into a paged-out page: read(2) from a pipe writes into it.
    int pfd[2];
    pipe(pfd);
    write(pfd[1], "kernel", 6);
    size_t victim = pages / 2;
    long got = read(pfd[0], base + victim * PAGE + 64, 6);
    int kernel_ok = got == 6 && !memcmp(base + victim * PAGE + 64, "kernel", 6);
    for (size_t j = 8; j < 10; j++) w[victim * PAGE / 8 + j] = (uint64_t)victim << 8 | j % 24; // restore
    // Random order touches, timed one by one.
    size_t *order = malloc(pages * sizeof *order);
    uint64_t *lat = malloc(pages * sizeof *lat);
    for (size_t i = 0; i < pages; i++) order[i] = i;
    srand(42);
    for (size_t i = pages - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    long bad = 0;
    for (size_t k = 0; k < pages; k++) {
        size_t i = order[k];
        uint64_t a = now_ns();
        uint64_t v = ((volatile uint64_t *)w)[i * PAGE / 8 + 5];
        lat[k] = now_ns() - a;
        for (size_t j = 0; j < PAGE / 8; j++) bad += w[i * PAGE / 8 + j] != ((uint64_t)i << 8 | j % 24);
        bad += v != ((uint64_t)i << 8 | 5);
    }
    long present_after, swapped_after;
    count_pagemap(base, pages, &present_after, &swapped_after);
    stop = 1;
    pthread_join(th, 0);
    qsort(lat, pages, sizeof *lat, cmp);
    double mean = 0;
    for (size_t k = 0; k < pages; k++) mean += lat[k];
    printf("pages=%zu pageout_rc=%d pageout_ms=%.1f swapped=%ld present=%ld kernel_read_ok=%d "
           "p50_ns=%lu p99_ns=%lu mean_ns=%.0f bad_pages=%ld uffd_msgs_fill=%ld uffd_msgs_after=%ld "
           "present_after=%ld swapped_after=%ld\n",
           pages, r, pageout_ns / 1e6, swapped, present, kernel_ok, lat[pages / 2], lat[pages * 99 / 100],
           mean / pages, bad, msgs_fill, uffd_msgs - msgs_fill, present_after, swapped_after);
    return bad != 0 || !kernel_ok;
}
