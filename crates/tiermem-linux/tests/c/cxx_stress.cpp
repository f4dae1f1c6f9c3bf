// C++ under the preload: threads building maps of strings and freeing them, over-aligned
// arrays, large vectors, exceptions, and allocations no machine can satisfy (which must
// fail, not return a pointer: the runtime once truncated 2^62 bytes to a 2-page region).
// Prints one line of checksums and checks; the test compares it with a plain run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct alignas(128) Block {
    char b[4000];
};

int main() {
    std::vector<std::thread> ts;
    std::vector<uint64_t> sums(4);
    for (int t = 0; t < 4; t++)
        ts.emplace_back([t, &sums] {
            std::map<int, std::string> m;
            uint64_t s = 0;
            for (int i = 0; i < 100000; i++) {
                m[(i * 7919 + t) % 50000] = std::string(20 + i % 300, 'a' + (i % 26));
                if (i % 3 == 0) m.erase((i * 31) % 50000);
                if (i % 1000 == 0) {
                    auto v = std::make_unique<Block[]>(16);
                    if (reinterpret_cast<uintptr_t>(v.get()) % alignof(Block)) s += 1000000;
                    v[3].b[7] = 1;
                    s += v[3].b[7];
                    std::vector<int> big(100000 + i % 5000, i);
                    s += big.back();
                    try {
                        throw std::runtime_error(std::string(100 + i % 50, 'x'));
                    } catch (const std::exception &e) {
                        s += std::strlen(e.what());
                    }
                }
            }
            for (auto &kv : m) s += kv.first + kv.second.size();
            sums[t] = s;
        });
    for (auto &th : ts) th.join();
    int caught = 0;
    try {
        auto p = new char[(size_t)1 << 62];
        p[0] = 1;
    } catch (const std::bad_alloc &) {
        caught = 1;
    }
    char *q = new (std::nothrow) char[(size_t)1 << 62];
    void *m62 = std::malloc((size_t)1 << 62);
    volatile size_t almost_all = SIZE_MAX - 100;  // volatile: no compile-time warning
    void *mmax = std::malloc(almost_all);
    void *c = std::calloc((size_t)1 << 31, (size_t)1 << 31);
    char *small = static_cast<char *>(std::malloc(64));
    std::strcpy(small, "kept");
    char *volatile still = small;  // valid after a failed realloc (volatile: no -Wuse-after-free)
    void *r = std::realloc(small, (size_t)1 << 62);
    std::printf("%llu %llu %llu %llu bad_alloc=%d nothrow_null=%d malloc_null=%d,%d calloc_null=%d "
                "realloc_null=%d kept=%s\n",
                (unsigned long long)sums[0], (unsigned long long)sums[1],
                (unsigned long long)sums[2], (unsigned long long)sums[3], caught, q == nullptr,
                m62 == nullptr, mmax == nullptr, c == nullptr, r == nullptr, still);
    std::free(r ? r : still);
}
