// A small C++ program for symbolization tests: templates, a namespace, a
// class, and inlined template methods, so names need demangling.
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace shapes {

template <typename T>
class Accumulator {
public:
	__attribute__((always_inline)) inline void add(T v) { total_ += scale(v); }
	T total() const { return total_; }

private:
	__attribute__((always_inline)) static inline T scale(T v) { return v * 3; }
	T total_ = 0;
};

template <typename T>
__attribute__((noinline)) T sum(const std::vector<T> &xs)
{
	Accumulator<T> acc;
	for (const T &x : xs)
		acc.add(x);
	return acc.total();
}

struct Point {
	int x, y;
	__attribute__((noinline)) int manhattan() const { return std::abs(x) + std::abs(y); }
};

} // namespace shapes

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 5;
	std::vector<int> vi;
	std::vector<double> vd;
	for (int i = 0; i < n; i++) {
		vi.push_back(i);
		vd.push_back(i * 0.5);
	}
	shapes::Point p{n, -n};
	std::printf("%d %f %d\n", shapes::sum(vi), shapes::sum(vd), p.manhattan());
	return 0;
}
