// sorter: an optimized C++ workload whose stacks go through inlined
// templates and the STL (std::sort, std::string comparison, std::map), for
// the stack fidelity test. Usage: sorter SECONDS
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include <chrono>

static std::vector<std::string> words(unsigned n, unsigned seed) {
  std::vector<std::string> v;
  v.reserve(n);
  for (unsigned i = 0; i < n; i++) {
    seed = seed * 1103515245 + 12345;
    std::string s = "prefix-shared-by-all-words-";
    for (unsigned j = 0; j < 8; j++) s += char('a' + (seed >> (j * 3)) % 26);
    v.push_back(s);
  }
  return v;
}

template <typename T>
struct ByLength {
  bool operator()(const T &a, const T &b) const {
    if (a.size() != b.size()) return a.size() < b.size();
    return a < b;
  }
};

__attribute__((noinline)) static void sorter(std::vector<std::string> &v) {
  std::sort(v.begin(), v.end(), ByLength<std::string>());
}

__attribute__((noinline)) static long counter(const std::vector<std::string> &v) {
  std::map<std::string, int> m;
  for (const auto &s : v) m[s.substr(27, 3)]++;
  long n = 0;
  for (const auto &kv : m) n += kv.second * long(kv.first[0]);
  return n;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 0.3;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
  long sum = 0;
  unsigned seed = 1;
  while (std::chrono::steady_clock::now() < end) {
    auto v = words(20000, seed++);
    sorter(v);
    sum += counter(v);
  }
  return int(sum & 1);
}
