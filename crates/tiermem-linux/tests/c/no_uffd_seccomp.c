/* Run a command under a seccomp filter that refuses the userfaultfd system call with
 * EPERM, as container runtimes' default profiles do (Docker's, Podman's), every other
 * call allowed. The filter is inherited by the command and everything it starts.
 * Leading NAME=VALUE arguments are put in the command's environment (only its: not in
 * this wrapper's, as env(1) would need to be run first).
 *
 * usage: no_uffd_seccomp [NAME=VALUE...] COMMAND [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: no_uffd_seccomp COMMAND [ARGS...]\n"); return 2; }
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* another ABI: not ours to judge */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_userfaultfd, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("seccomp");
        return 1;
    }
    int k = 1;
    while (k < argc && strchr(argv[k], '=') && argv[k][0] != '/') putenv(argv[k++]);
    if (k == argc) { fprintf(stderr, "no_uffd_seccomp: no COMMAND\n"); return 2; }
    execvp(argv[k], argv + k);
    perror(argv[k]);
    return 127;
}
